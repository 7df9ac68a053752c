"""The pretrain job through the CLI: a run killed with -9 and resumed continues the same loss curve as an
uninterrupted one (the stream's position and the optimizer state come back), and the shipped base's card
command reproduces the card's first 20 logged losses."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
CARD = REPO / "gui_jax" / "models" / "assets" / "builtin" / "tiny_base" / "README.md"
TINY = ["--config.model.num_hidden_layers=1", "--config.pretrain.batch_size=2", "--config.pretrain.micro_batch_size=2",
        "--config.pretrain.curriculum=4-5@0:3,5-6@1", "--config.pretrain.num_steps=6",
        "--config.pretrain.checkpoint_every=2", "--config.pretrain.eval_every=6", "--config.pretrain.eval_items=4",
        "--config.pretrain.warmup_steps=1", "--config.pretrain.row_length=256", "--config.pretrain.data_threads=0"]


def _env(cache: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu", JAX_COMPILATION_CACHE_DIR=str(cache),
                JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")


def _command(workdir: Path, extra=()) -> list[str]:
    return [sys.executable, "-m", "gui_jax.main", "--config=configs/pretrain_tiny.py", f"--workdir={workdir}",
            *extra]


def _losses(workdir: Path) -> dict[int, float]:
    out = {}
    for line in (workdir / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["name"] == "pretrain/loss":
            out[r["step"]] = r["value"]
    return out


def _run(cmd, env, timeout=900):
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]


def test_kill9_then_resume_continues_the_same_loss_curve(tmp_path):
    env = _env(tmp_path / "cache")
    ref, resumed = tmp_path / "ref", tmp_path / "resumed"
    _run(_command(ref, TINY), env)
    proc = subprocess.Popen(_command(resumed, TINY), cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    ckpts, deadline = resumed / "checkpoints", time.time() + 900
    try:
        while not (ckpts.is_dir() and any(p.name.isdigit() for p in ckpts.iterdir())):
            assert proc.poll() is None and time.time() < deadline, "no checkpoint before the run ended"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    killed_at = max(int(p.name) for p in ckpts.iterdir() if p.name.isdigit())
    assert killed_at < 6, f"the kill came after the run finished ({killed_at})"
    _run(_command(resumed, TINY), env)
    a, b = _losses(ref), _losses(resumed)
    assert sorted(a) == sorted(b) == list(range(1, 7))
    np.testing.assert_allclose([b[s] for s in range(1, 7)], [a[s] for s in range(1, 7)], rtol=1e-5)
    assert (resumed / "base" / "README.md").exists() and (resumed / "base" / "model.safetensors").exists()


def test_card_command_reproduces_the_cards_first_losses(tmp_path):
    """The card lists the exact command and the losses of updates 1-20; rerunning 20 updates of it gives them
    back within 2e-3 relative (float summation order differs with micro-batching and XLA version)."""
    text = CARD.read_text()
    command = re.search(r"Command: `python -m gui_jax.main --config configs/pretrain_tiny.py --workdir <dir>(.*?)`",
                        text).group(1).split()
    card_losses = [float(x) for x in re.search(r"reproduction check\): (.*)", text).group(1).split(", ")]
    assert len(card_losses) == 20
    overrides = [c for c in command if not c.startswith(("--config.pretrain.num_steps", "--config.model.checkpoint",
                                                         "--config.pretrain.first_step"))]
    _run(_command(tmp_path / "w", [*overrides, "--config.pretrain.num_steps=20", "--config.pretrain.eval_items=4",
                                   "--config.pretrain.eval_every=1000"]), _env(tmp_path / "cache"))
    got = _losses(tmp_path / "w")
    np.testing.assert_allclose([got[s] for s in range(1, 21)], card_losses, rtol=2e-3)
