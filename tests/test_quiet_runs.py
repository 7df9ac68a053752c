"""Quiet runs: a job's log (`python -m gui_jax.main ... > log.txt 2>&1`) carries no libtpu warnings on a
machine without a TPU and no line longer than 300 characters (progress bars write plain lines when their
stream is not a terminal). The job logs are checked wherever the suite runs; they test the libtpu case where
the tpu-aot extra is installed (a 700 MB runtime CI does not install), and the platform choice itself is
tested for both cases through `default_jax_platform(has_libtpu=...)`.

Two short jobs through the CLI stand in for the quickstart (the same start-up and the same progress bars,
in seconds): `export` initialises JAX's backends (loads the built-in tiny base and writes it out), and
`generate_episodes` drives a progress bar over 30 episodes.
"""
import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gui_jax
from gui_jax.core.progress import PlainProgress, progress

REPO = Path(__file__).resolve().parents[1]
MAX_LINE = 300
TPU_WORDS = ("libtpu", "TPU_", "TPU worker", "InitGoogle")


def run_job(args: list[str], log: Path, **env_changes) -> str:
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}  # as a user's shell would have it
    env.update(PYTHONPATH=str(REPO), **env_changes)
    with open(log, "w") as out:
        rc = subprocess.run([sys.executable, "-m", "gui_jax.main", *args], cwd=REPO, env=env, stdout=out,
                            stderr=subprocess.STDOUT, timeout=300).returncode
    text = log.read_text()
    assert rc == 0, text[-3000:]
    return text


def assert_quiet(text: str) -> None:
    lines = text.split("\n")
    assert not any(w in ln for ln in lines for w in TPU_WORDS), [ln[:200] for ln in lines if "TPU" in ln]
    assert "\r" not in text
    assert max(map(len, lines)) <= MAX_LINE, max(lines, key=len)[:400]


def test_a_job_that_starts_jax_writes_no_libtpu_warning(tmp_path):
    text = run_job(["--config", "configs/export.py", f"--workdir={tmp_path / 'run'}",
                    "--config.model.checkpoint=builtin:tiny-base"], tmp_path / "log.txt")
    assert "exported 1.51M params" in text  # JAX ran (on the CPU): the 3-layer base with 4 key/value heads
    assert_quiet(text)


def test_progress_bars_write_plain_lines_to_a_log_file(tmp_path):
    text = run_job(["--config", "configs/generate_episodes.py", f"--workdir={tmp_path / 'run'}",
                    "--config.num_episodes=30", "--config.resolution=(56,112)"], tmp_path / "log.txt")
    assert "expert episodes: 30/30 (100%)" in text
    assert "wrote 30 episodes" in text
    assert_quiet(text)


def test_a_platform_the_user_chose_is_kept():
    assert gui_jax.default_jax_platform({"JAX_PLATFORMS": "tpu"}) is None
    assert gui_jax.default_jax_platform({"JAX_PLATFORMS": ""}) is None


def test_cpu_is_chosen_only_where_libtpu_would_probe_an_absent_tpu():
    assert gui_jax.default_jax_platform({}, has_libtpu=True) == "cpu"   # libtpu installed, no TPU here
    assert gui_jax.default_jax_platform({}, has_libtpu=False) is None   # nothing probes a TPU
    assert gui_jax.default_jax_platform({}) == ("cpu" if importlib.util.find_spec("libtpu") else None)
    for var in gui_jax.TPU_ENV_VARS:
        assert gui_jax.tpu_present({var: "10.0.0.2:8470"})
        assert gui_jax.default_jax_platform({var: "10.0.0.2:8470"}, has_libtpu=True) is None


def test_a_notebook_is_recognised_by_its_running_kernel_not_by_an_import(monkeypatch):
    import types

    from gui_jax.core import progress as progress_module
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))   # imported, no kernel
    shell = types.SimpleNamespace()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert not progress_module._in_notebook()
    shell.kernel = object()                                                      # a running kernel
    assert progress_module._in_notebook()


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_plain_progress_writes_a_line_at_most_every_interval():
    out, clock = io.StringIO(), FakeClock()
    bar = PlainProgress(total=100, desc="sft", unit="step", stream=out, interval=30.0, clock=clock)
    for i in range(100):
        clock.t = i * 1.0          # one step a second: lines at 0 s, 30 s, 60 s, 90 s, then at close
        bar.update(1)
        bar.set_postfix(loss=f"{1 / (i + 1):.3f}")
    clock.t = 100.0
    bar.close()
    bar.close()                    # a second close writes nothing
    lines = out.getvalue().splitlines()
    assert lines == ["sft: 1/100 (1%) elapsed 0:00:00",
                     "sft: 31/100 (31%) 1.03 step/s elapsed 0:00:30 loss=0.033",
                     "sft: 61/100 (61%) 1.02 step/s elapsed 0:01:00 loss=0.017",
                     "sft: 91/100 (91%) 1.01 step/s elapsed 0:01:30 loss=0.011",
                     "sft: 100/100 (100%) 1 step/s elapsed 0:01:40 loss=0.010"]


def test_plain_progress_wraps_an_iterable_and_a_disabled_bar_is_silent():
    out = io.StringIO()
    assert list(progress(range(3), desc="episodes", stream=out)) == [0, 1, 2]
    assert out.getvalue().splitlines()[-1].startswith("episodes: 3/3 (100%)")
    silent = io.StringIO()
    bar = progress(total=5, stream=silent, disable=True)
    bar.update(5)
    bar.close()
    assert silent.getvalue() == ""


@pytest.mark.parametrize("resumed_at", [0, 40])
def test_plain_progress_counts_from_where_a_resumed_run_starts(resumed_at):
    out, clock = io.StringIO(), FakeClock()
    bar = PlainProgress(total=50, initial=resumed_at, desc="rl", stream=out, clock=clock)
    clock.t = 10.0
    bar.update(2)
    assert out.getvalue() == f"rl: {resumed_at + 2}/50 ({100 * (resumed_at + 2) / 50:.0f}%) 0.2 it/s elapsed 0:00:10\n"
