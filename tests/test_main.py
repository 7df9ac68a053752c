"""The CLI dispatches on config.job and explains unknown or unbuilt jobs."""
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


def test_cli_unknown_job_exit_code(tmp_path):
    cfg = tmp_path / "c.py"
    cfg.write_text("import ml_collections\n"
                   "def get_config():\n    return ml_collections.ConfigDict({'job': 'bogus', 'a': 1})\n")
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", f"--config={cfg}", "--config.a=5",
                        f"--workdir={tmp_path}/w"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "unknown job 'bogus'" in p.stderr and "generate_episodes" in p.stderr
