"""Held-out tasks that the start checkpoint's run trained on are counted and reported, not ignored."""
import json

from gui_jax.jobs.common import start_training_overlap
from gui_jax.jobs.online_rl import overlap_line, report_start_overlap
from gui_jax.tasks.splits import make_split

TEMPLATES = ("music.play", "clock.alarm_toggle")


def _start_run(tmp_path, **data):
    ckpt = tmp_path / "start" / "sft" / "checkpoints"
    ckpt.mkdir(parents=True)
    cfg = {"seed": 0, "data.split": "instance", "data.train_seed_range": [0, 40],
           "data.test_seed_range": [1000, 1020], "data.templates": list(TEMPLATES), **data}
    (tmp_path / "start" / "config.json").write_text(json.dumps({"quickstart": {"config": cfg}}))
    return str(ckpt)


def test_counts_tasks_from_the_start_runs_training_split(tmp_path, capsys):
    ckpt = _start_run(tmp_path)
    start = make_split("instance", train_seeds=range(0, 40), test_seeds=range(1000, 1020), templates=TEMPLATES)
    tasks = list(start.train[:3]) + list(start.test[:2])  # 3 trained on by the start, 2 held out from it
    out = start_training_overlap(ckpt, tasks)
    assert (out["shared"], out["test_tasks"], out["jobs"]) == (3, 5, ["quickstart"])
    assert out["shared_task_ids"] == sorted(t.task_id for t in start.train[:3])
    report_start_overlap(ckpt, tasks)
    assert capsys.readouterr().out.startswith("warning: 3 of 5 held-out tasks share an instance with the training "
                                              "split of the start checkpoint's run")
    assert start_training_overlap(ckpt, list(start.test))["shared"] == 0


def test_unknown_without_a_config_snapshot(tmp_path):
    bare = tmp_path / "bare" / "sft" / "checkpoints"
    bare.mkdir(parents=True)
    assert start_training_overlap(str(bare), []) is None
    assert "unknown" in overlap_line(None)
