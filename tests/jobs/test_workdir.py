"""Workdir snapshots and stale-data checks: a re-run with changed data settings stops naming the
changed fields; --overwrite regenerates; a store with duplicate or missing episodes is refused by
every job (quickstart, evaluate, reasoning_sft, generate_episodes) through the CLI."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gui_jax.config_check import RunError
from gui_jax.jobs import common

REPO = Path(__file__).resolve().parents[2]
TINY = {"data.num_train_episodes": 3, "data.num_test_episodes": 2, "data.templates": ("music.play", "tasks.complete"),
        "data.train_seed_range": (0, 6), "data.test_seed_range": (1000, 1004), "data.resolution": (112, 252)}
RECIPES = {"quickstart": "configs/quickstart.py", "evaluate": "configs/evaluate.py",
           "reasoning_sft": "configs/reasoning_sft.py"}


def load_recipe(job: str, **extra):
    path = REPO / RECIPES[job]
    spec = importlib.util.spec_from_file_location(f"recipe_{job}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    for k, v in {**TINY, **extra}.items():
        node = c
        *head, last = k.split(".")
        for h in head:
            node = node[h]
        node[last] = v
    return c


def flags_for(**extra) -> list[str]:
    return [f"--config.{k}={v!r}".replace(" ", "") for k, v in {**TINY, **extra}.items()]


def cli(args, cwd=REPO):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "gui_jax.main", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A workdir whose episodes the quickstart settings made (train 3, test 2)."""
    wd = tmp_path_factory.mktemp("made") / "run"
    config = load_recipe("quickstart")
    common.open_workdir(config, str(wd))
    train_tasks, test_tasks, train_eps, test_eps = common.prepare(config, str(wd))
    assert [e.episode_id for e in train_eps] == [t.task_id for t in train_tasks]
    return wd


def copy_of(made, tmp_path) -> Path:
    wd = tmp_path / "run"
    shutil.copytree(made, wd)
    return wd


def test_snapshot_keeps_config_and_version(made):
    snap = json.loads((made / "config.json").read_text())["quickstart"]
    assert snap["config"]["data.resolution"] == [112, 252] and snap["config"]["job"] == "quickstart"
    import gui_jax
    assert snap["gui_jax_version"] == gui_jax.__version__
    assert snap["git_describe"]  # this test runs in a git checkout
    key = json.loads((made / "episodes" / "test" / "cache_key.json").read_text())
    assert key["complete"] and key["settings"]["data.num_test_episodes"] == 2 and len(key["task_ids"]) == 2


def test_same_settings_reload_from_cache(made, tmp_path):
    wd = copy_of(made, tmp_path)
    config = load_recipe("quickstart")
    common.open_workdir(config, str(wd))
    before = os.path.getmtime(wd / "episodes" / "train" / "000000" / "episode.json")
    _, _, train_eps, test_eps = common.prepare(config, str(wd))
    assert len(train_eps) == 3 and len(test_eps) == 2
    assert os.path.getmtime(wd / "episodes" / "train" / "000000" / "episode.json") == before


def test_changed_data_settings_stop_naming_fields(made, tmp_path):
    wd = copy_of(made, tmp_path)
    p = cli(["--config=configs/quickstart.py", f"--workdir={wd}",
             *flags_for(**{"data.resolution": (140, 252), "data.num_test_episodes": 3})])
    assert p.returncode == 2, p.stderr[-1500:]
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "data.resolution: [112, 252] → [140, 252]" in err and "data.num_test_episodes: 2 → 3" in err
    assert "--overwrite" in err
    # evaluate reads only the held-out side: it names the held-out folder's changed fields
    p = cli(["--config=configs/evaluate.py", f"--workdir={wd}", "--config.eval.untrained=True",
             *flags_for(**{"data.num_test_episodes": 1})])
    assert p.returncode == 2 and "episodes/test" in p.stderr and "data.num_test_episodes: 2 → 1" in p.stderr


def test_overwrite_regenerates(made, tmp_path):
    wd = copy_of(made, tmp_path)
    (wd / "results.json").write_text("{}")  # an output of the old settings
    config = load_recipe("quickstart", **{"data.resolution": (140, 252)})
    with pytest.raises(RunError, match="data.resolution"):
        common.open_workdir(config, str(wd))
    common.open_workdir(config, str(wd), overwrite=True)
    assert not (wd / "results.json").exists()
    _, _, train_eps, test_eps = common.prepare(config, str(wd))
    assert train_eps[0].observations[0].screenshot.shape[:2] == (252, 140)
    assert json.loads((wd / "config.json").read_text())["quickstart"]["config"]["data.resolution"] == [140, 252]


def _duplicate(wd: Path, side: str):
    src = wd / "episodes" / side / "000000"
    shutil.copytree(src, wd / "episodes" / side / "000099")


def _missing(wd: Path, side: str):
    shutil.rmtree(wd / "episodes" / side / "000001")


@pytest.mark.parametrize("job,side,damage,needle", [
    ("quickstart", "train", _duplicate, "appears in folders '000000' and '000099'"),
    ("quickstart", "test", _missing, "holds 1 episodes for 2 selected tasks: 1 missing"),
    ("evaluate", "test", _duplicate, "appears in folders '000000' and '000099'"),
    ("evaluate", "test", _missing, "1 missing"),
    ("reasoning_sft", "train", _duplicate, "appears in folders"),
    ("reasoning_sft", "train", _missing, "holds 2 episodes for 3 selected tasks"),
])
def test_damaged_store_refused_by_every_job(made, tmp_path, job, side, damage, needle):
    wd = copy_of(made, tmp_path)
    damage(wd, side)
    extra = ["--config.eval.untrained=True"] if job == "evaluate" else []
    p = cli([f"--config={RECIPES[job]}", f"--workdir={wd}", *extra, *flags_for()])
    assert p.returncode == 2, p.stderr[-1500:]
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1 and needle in err and f"episodes/{side}" in err, err
    # and in-process, prepare refuses the same store
    with pytest.raises(RunError, match="episodes"):
        common.prepare(load_recipe(job), str(wd), sides=(side,))


def test_generate_episodes_job_keys_its_folder(tmp_path):
    base = ["--config=configs/generate_episodes.py", f"--workdir={tmp_path}/g", "--config.num_episodes=2",
            "--config.resolution=(112,252)", "--config.progress=False"]
    p = cli(base)
    assert p.returncode == 0, p.stderr[-1500:]
    out = tmp_path / "g" / "episodes" / "instance_train"
    assert json.loads((out / "cache_key.json").read_text())["complete"]
    p = cli(base[:-2] + ["--config.resolution=(140,252)", "--config.progress=False"])
    assert p.returncode == 2 and "resolution: [112, 252] → [140, 252]" in p.stderr, p.stderr[-1500:]
    _duplicate(tmp_path / "g", "instance_train")
    p = cli(base)
    assert p.returncode == 2 and "appears in folders" in p.stderr, p.stderr[-1500:]
    p = cli(base[:-2] + ["--config.resolution=(140,252)", "--config.progress=False", "--overwrite"])
    assert p.returncode == 0, p.stderr[-1500:]
    from gui_jax.data.episode_store import EpisodeStore
    store = EpisodeStore(out)
    assert len(store) == 2 and store[0].observations[0].screenshot.shape[:2] == (252, 140)
    assert np.asarray(store[1].observations[0].screenshot).dtype == np.uint8


def test_filters_leaving_no_training_tasks_stop_before_training(tmp_path):
    config = load_recipe("quickstart", **{"data.templates": ("settings.storage_answer",), "data.max_optimal_steps": 1})
    with pytest.raises(RunError, match=r"no train tasks left after filtering .*data.max_optimal_steps=1"):
        common.prepare(config, str(tmp_path))
    assert not (tmp_path / "episodes").exists()


def test_pretrain_resumed_with_another_recipe_logs_the_change_and_its_checkpoint(tmp_path):
    spec = importlib.util.spec_from_file_location("recipe_pretrain", REPO / "configs/pretrain_tiny.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    wd = tmp_path / "run"
    config = mod.get_config()
    common.open_workdir(config, str(wd))
    common.open_workdir(config, str(wd))                      # the same recipe: nothing to log
    assert common.recipe_changes(str(wd)) == []
    for step in ("120", "240"):                               # Orbax step folders
        (wd / "checkpoints" / step).mkdir(parents=True)
    config.pretrain.curriculum, config.pretrain.stop_after_steps = "12-40@1", 5   # run control is not a change
    common.open_workdir(config, str(wd))                      # a pretraining run may change course on resume
    [record] = common.recipe_changes(str(wd))
    assert record["from_step"] == 240
    assert record["changes"] == ["pretrain.curriculum: '4-8@0:2000,4-16@0.3:4000,8-24@0.6:6000,12-40@1' → "
                                 "'12-40@1'"]
    assert record["fields"] == {"pretrain.curriculum": ["4-8@0:2000,4-16@0.3:4000,8-24@0.6:6000,12-40@1", "12-40@1"]}
    assert common.read_snapshots(str(wd))["pretrain"]["config"]["pretrain.curriculum"] == "12-40@1"
    # the card's command is the one the run started with: each changed field at its first value
    from gui_jax.jobs.pretrain import first_overrides
    config.pretrain.schedule = "wsd"
    common.open_workdir(config, str(wd))
    last = ["--config.pretrain.curriculum=12-40@1", "--config.pretrain.schedule=wsd", "--config.seed=0"]
    assert first_overrides(last, common.recipe_changes(str(wd))) == [
        "--config.seed=0", "--config.pretrain.curriculum=4-8@0:2000,4-16@0.3:4000,8-24@0.6:6000,12-40@1",
        "--config.pretrain.schedule=constant"]
    # a field the run's first config lacked (added to the code since): logged from None, left out of the command
    config.pretrain.app_pages_added_later = 0.3
    common.open_workdir(config, str(wd))
    record = common.recipe_changes(str(wd))[-1]
    assert record["changes"] == ["pretrain.app_pages_added_later: (absent) → 0.3"]
    assert record["fields"] == {"pretrain.app_pages_added_later": [None, 0.3]}
    assert first_overrides(last + ["--config.pretrain.app_pages_added_later=0.3"],
                           common.recipe_changes(str(wd)))[-1] == "--config.pretrain.schedule=constant"
