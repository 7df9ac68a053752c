"""Expert episodes written over several processes, or linked from another cache, are the files one process writes:
an episode depends on its task alone, not on the order, the worker or the PhoneSim instance that made it."""
import filecmp
import os
import subprocess
import sys
from pathlib import Path

from gui_jax.jobs.episode_cache import load_or_generate
from gui_jax.tasks.generate import write_episode_files
from gui_jax.tasks.splits import make_split

REPO = Path(__file__).resolve().parents[2]
RESOLUTION = (112, 252)


def _tasks(n):
    split = make_split("instance", train_seeds=range(0, 20), test_seeds=range(1000, 1002), seed=0,
                       templates=("music.play", "clock.alarm_toggle", "tasks.priority", "messages.open_thread"))
    return split.train[:n]


def test_two_workers_write_the_files_one_writes_in_reverse_order(tmp_path):
    tasks = _tasks(40)
    one = [str(tmp_path / "one" / t.task_id) for t in tasks]
    two = [str(tmp_path / "two" / t.task_id) for t in tasks]
    write_episode_files(tasks[::-1], one[::-1], RESOLUTION, workers=1)
    write_episode_files(tasks, two, RESOLUTION, workers=2)
    for a, b in zip(one, two):
        names = sorted(os.listdir(a))
        assert names == sorted(os.listdir(b)) and "episode.json" in names and len(names) >= 3
        match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
        assert (mismatch, errors) == ([], []), (a, mismatch, errors)


def test_reused_cache_is_linked_and_equals_a_fresh_generation(tmp_path):
    tasks = _tasks(12)
    first = str(tmp_path / "first")
    load_or_generate(tasks[:5], first, RESOLUTION, pixels="lazy")
    grown = load_or_generate(tasks[:12], str(tmp_path / "grown"), RESOLUTION, pixels="lazy", workers=2, reuse=first)
    fresh = load_or_generate(tasks[:12], str(tmp_path / "fresh"), RESOLUTION, pixels="lazy")
    assert [e.episode_id for e in grown] == [t.task_id for t in tasks] == [e.episode_id for e in fresh]
    for i in range(12):
        g, f = tmp_path / "grown" / f"{i:06d}", tmp_path / "fresh" / f"{i:06d}"
        names = sorted(os.listdir(f))
        assert sorted(os.listdir(g)) == names
        assert filecmp.cmpfiles(g, f, names, shallow=False)[1:] == ([], [])
        record = os.stat(g / "episode.json")
        if i < 5:       # from the earlier cache: the same file, linked
            assert record.st_ino == os.stat(tmp_path / "first" / f"{i:06d}" / "episode.json").st_ino
        else:           # generated here
            assert record.st_nlink == 1
    # a cache at another resolution is not reused
    other = load_or_generate(tasks[:6], str(tmp_path / "other"), (56, 112), pixels="lazy", reuse=first)
    assert len(other) == 6
    assert all(os.stat(tmp_path / "other" / f"{i:06d}" / "episode.json").st_nlink == 1 for i in range(6))


def test_generate_episodes_job_over_two_workers_writes_the_same_folder(tmp_path):
    outs = []
    for workers in (1, 2):
        args = ["--config=configs/generate_episodes.py", f"--workdir={tmp_path}/w{workers}", "--config.num_episodes=20",
                "--config.resolution=(112,252)", "--config.progress=False", f"--config.episode_workers={workers}"]
        p = subprocess.run([sys.executable, "-m", "gui_jax.main", *args], cwd=REPO, capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stderr[-1500:]
        outs.append(tmp_path / f"w{workers}" / "episodes" / "instance_train")
    folders = sorted(d for d in os.listdir(outs[0]) if d.isdigit())
    assert len(folders) == 20 and sorted(d for d in os.listdir(outs[1]) if d.isdigit()) == folders
    for d in folders:
        names = sorted(os.listdir(outs[0] / d))
        assert filecmp.cmpfiles(outs[0] / d, outs[1] / d, names, shallow=False)[1:] == ([], [])
