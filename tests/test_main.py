"""The CLI dispatches on config.job and explains unknown or unbuilt jobs."""
import os
import subprocess
import sys

import ml_collections
import pytest

from gui_jax import main as gmain


def test_unknown_job_lists_known_ones():
    with pytest.raises(gmain.UnknownJobError) as e:
        gmain.resolve_job("nope")
    msg = str(e.value)
    for name in gmain.JOBS:
        assert name in msg


def test_run_job_dispatches(tmp_path, monkeypatch):
    calls = []
    mod = type(sys)("fake_job_module")
    mod.run = lambda config, workdir: calls.append((config.x, workdir))
    monkeypatch.setitem(sys.modules, "fake_job_module", mod)
    monkeypatch.setitem(gmain.JOBS, "fake", "fake_job_module:run")
    cfg = ml_collections.ConfigDict({"job": "fake", "x": 3})
    gmain.run_job(cfg, str(tmp_path / "w"))
    assert calls == [(3, str(tmp_path / "w"))]
    assert (tmp_path / "w").is_dir()


@pytest.mark.parametrize("preset, expected", [(None, "xdg/gui_jax/xla"), ("", None), ("mine", "mine")])
def test_run_job_turns_on_the_compilation_cache_where_none_is_set(tmp_path, monkeypatch, preset, expected):
    import jax
    seen = []
    mod = type(sys)("fake_job_module")
    mod.run = lambda config, workdir: seen.append((os.environ.get("JAX_COMPILATION_CACHE_DIR"),
                                                   jax.config.jax_compilation_cache_dir,
                                                   jax.config.jax_compilation_cache_max_size))
    monkeypatch.setitem(sys.modules, "fake_job_module", mod)
    monkeypatch.setitem(gmain.JOBS, "fake", "fake_job_module:run")
    # run_job sets the cache variables in os.environ for the jobs it launches; on the real environment a variable
    # this test found unset (MAX_SIZE) would outlive it and turn on LRU eviction for every later job of this
    # worker, racing the suite's other processes in the shared cache folder
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.setenv("XDG_CACHE_HOME", "xdg")
    monkeypatch.delenv("JAX_COMPILATION_CACHE_MAX_SIZE", raising=False)
    if preset is None:
        monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", preset)
    before = jax.config.jax_compilation_cache_dir, jax.config.jax_compilation_cache_max_size
    try:
        gmain.run_job(ml_collections.ConfigDict({"job": "fake"}), str(tmp_path / "w"))
    finally:  # this process's own cache setting (tests/conftest.py) comes back
        jax.config.update("jax_compilation_cache_dir", before[0])
        jax.config.update("jax_compilation_cache_max_size", before[1])
    env_dir = os.path.join("xdg", "gui_jax", "xla") if preset is None else preset
    limit = gmain.XLA_CACHE_MAX_BYTES if preset is None else -1
    assert seen == [(env_dir, expected and os.path.normpath(expected), limit)]


def test_cli_unknown_job_exit_code(tmp_path):
    cfg = tmp_path / "c.py"
    cfg.write_text("import ml_collections\n"
                   "def get_config():\n    return ml_collections.ConfigDict({'job': 'bogus', 'a': 1})\n")
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", f"--config={cfg}", "--config.a=5",
                        f"--workdir={tmp_path}/w"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "unknown job 'bogus'" in p.stderr and "generate_episodes" in p.stderr


def test_run_job_writes_the_snapshot_and_stops_a_changed_training_rerun(tmp_path, monkeypatch):
    import json

    from gui_jax.config_check import RunError
    from gui_jax.jobs import common
    mod = type(sys)("fake_train_module")
    mod.run = lambda config, workdir: None
    monkeypatch.setitem(sys.modules, "fake_train_module", mod)
    monkeypatch.setitem(gmain.JOBS, "fake_train", "fake_train_module:run")
    monkeypatch.setitem(common.TRAINING_JOB_OUTPUTS, "fake_train", ("ckpt",))
    cfg = ml_collections.ConfigDict({"job": "fake_train", "lr": 0.1, "stop_after_steps": 3})
    gmain.run_job(cfg, str(tmp_path))
    snap = json.loads((tmp_path / "config.json").read_text())["fake_train"]
    assert snap["config"] == {"job": "fake_train", "lr": 0.1, "stop_after_steps": 3} and snap["gui_jax_version"]
    (tmp_path / "ckpt").mkdir()
    cfg.stop_after_steps = 5  # a run-control knob: not a change of what was trained
    gmain.run_job(cfg, str(tmp_path))
    cfg.lr = 0.2
    with pytest.raises(RunError, match=r"lr: 0\.1 → 0\.2"):
        gmain.run_job(cfg, str(tmp_path))
    assert (tmp_path / "ckpt").exists()
    gmain.run_job(cfg, str(tmp_path), overwrite=True)
    assert not (tmp_path / "ckpt").exists()
    assert json.loads((tmp_path / "config.json").read_text())["fake_train"]["config"]["lr"] == 0.2


def test_seed_flag_names_the_stage_seeds_it_leaves():
    from gui_jax.core.recipe_files import load_python_file
    cfg = load_python_file("configs/quickstart.py").get_config()
    cfg.seed, cfg.rl.seed = 3, 7                       # as `--config.seed=3 --config.rl.seed=7` leave them
    left = gmain.stage_seeds_left(cfg, {"seed", "rl.seed"})
    assert sorted(left) == [("reasoning.seed", 0), ("reasoning.sft.seed", 0), ("sft.seed", 0)]
    assert (cfg.sft.seed, cfg.rl.seed) == (0, 7)       # nothing changes: recorded commands keep their meaning
    assert gmain.stage_seeds_left(cfg, {"rl.seed"}) == []   # no --config.seed, no note
