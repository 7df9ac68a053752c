"""kill -9 during SFT and during RL, then resume, through the CLI: metrics.jsonl holds each
(name, step) exactly once and the final params equal an uninterrupted run's (≤ 1e-6).

One uninterrupted reference run; one run killed (SIGKILL) right after its first SFT checkpoint
appears, resumed, killed again right after its first RL checkpoint appears, and resumed to the end.
A shared persistent compilation cache keeps the four processes short.
"""
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from gui_jax.jobs.common import load_stage_params

REPO = Path(__file__).resolve().parents[2]
SFT_STEPS, RL_ITERS = 8, 4
TINY = [
    "--config.data.num_train_episodes=2", "--config.data.num_test_episodes=1",
    "--config.data.templates=('music.play','tasks.complete')", "--config.data.train_seed_range=(0,4)",
    "--config.data.test_seed_range=(1000,1002)",
    "--config.model.checkpoint=", "--config.model.num_hidden_layers=1", "--config.model.max_new_tokens=6", "--config.model.sample_batch_size=4",
    f"--config.sft.num_steps={SFT_STEPS}", "--config.sft.batch_size=2", "--config.sft.micro_batch_size=2",
    "--config.sft.warmup_steps=2", "--config.sft.checkpoint_every=2",
    f"--config.rl.iterations={RL_ITERS}", "--config.rl.episodes_per_iteration=2", "--config.rl.num_rollouts=2",
    "--config.rl.checkpoint_every=1", "--config.rl.dynamic_sampling=False", "--config.rl.micro_batch_size=4",
    "--config.eval.step_metrics=False", "--config.eval.max_steps=1",
]


def job_env() -> dict:
    """The jobs' environment: the suite's XLA compilation cache (tests/conftest.py) comes with os.environ."""
    return dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")


def command(workdir: Path) -> list[str]:
    return [sys.executable, "-m", "gui_jax.main", "--config=configs/quickstart.py", f"--workdir={workdir}", *TINY]


def steps_in(folder: Path) -> list[int]:
    return sorted(int(p.name) for p in folder.glob("*") if p.name.isdigit()) if folder.is_dir() else []


def start(workdir: Path, env) -> subprocess.Popen:
    return subprocess.Popen(command(workdir), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def finish(proc: subprocess.Popen, t0: float) -> float:
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    return time.time() - t0


def run_and_kill(workdir: Path, env, stage: str) -> list[int]:
    """Starts the run and SIGKILLs it as soon as `<stage>/checkpoints` holds a finished step."""
    ckpts = workdir / stage / "checkpoints"
    proc = start(workdir, env)
    deadline = time.time() + 900
    try:
        while not steps_in(ckpts):
            assert proc.poll() is None, f"run ended before a {stage} checkpoint: {proc.stderr.read()[-3000:]}"
            assert time.time() < deadline, f"no {stage} checkpoint in time"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        proc.stderr.close()
    return steps_in(ckpts)


def metric_records(workdir: Path) -> list[tuple[str, int, float]]:
    out = []
    for line in (workdir / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        out.append((r["name"], r["step"], r["value"]))
    return out


def max_param_diff(a: Path, b: Path, stage: str, step: int) -> float:
    pa, sa = load_stage_params(str(a / stage / "checkpoints"))
    pb, sb = load_stage_params(str(b / stage / "checkpoints"))
    assert sa == sb == step
    import jax
    la, lb = jax.tree.leaves(pa), jax.tree.leaves(pb)
    assert len(la) == len(lb) > 0
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)))) for x, y in zip(la, lb))


def test_kill9_in_sft_and_rl_then_resume_matches_uninterrupted(tmp_path):
    import resource
    env = job_env()
    ref, resumed = tmp_path / "ref", tmp_path / "resumed"
    t0 = time.time()
    ref_proc = start(ref, env)  # the uninterrupted run goes alongside the interrupted one (2 cores)

    sft_at_kill = run_and_kill(resumed, env, "sft")
    assert sft_at_kill and sft_at_kill[-1] < SFT_STEPS, f"the kill came after SFT finished: {sft_at_kill}"
    assert not steps_in(resumed / "rl" / "checkpoints")
    rl_at_kill = run_and_kill(resumed, env, "rl")
    assert rl_at_kill and rl_at_kill[-1] < RL_ITERS, f"the kill came after RL finished: {rl_at_kill}"
    t_resume = time.time()
    t_resume = finish(start(resumed, env), t_resume)
    t_ref = finish(ref_proc, t0)
    t_all = time.time() - t0
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)

    # metrics.jsonl: every (name, step) exactly once, the same set as the uninterrupted run's
    recs, ref_recs = metric_records(resumed), metric_records(ref)
    counts = Counter((n, s) for n, s, _ in recs)
    assert max(counts.values()) == 1, [k for k, c in counts.items() if c > 1][:5]
    assert set(counts) == {(n, s) for n, s, _ in ref_recs}
    ref_values = {(n, s): v for n, s, v in ref_recs}
    train = [(n, s, v) for n, s, v in recs if n.startswith(("sft/", "rl/")) and "seconds" not in n]
    assert train and all(np.isclose(v, ref_values[(n, s)], rtol=1e-5, atol=1e-6) for n, s, v in train)

    sft_diff = max_param_diff(ref, resumed, "sft", SFT_STEPS)
    rl_diff = max_param_diff(ref, resumed, "rl", RL_ITERS)
    print(f"\nkilled after sft checkpoints {sft_at_kill}, rl checkpoints {rl_at_kill}; max |Δparams| "
          f"sft {sft_diff:.2e}, rl {rl_diff:.2e}; wall {t_all:.0f}s (reference run {t_ref:.0f}s, final resume "
          f"{t_resume:.0f}s), child CPU {cpu.ru_utime + cpu.ru_stime:.0f}s, load {os.getloadavg()[0]:.1f}")
    assert sft_diff <= 1e-6 and rl_diff <= 1e-6


# ---------------------------------------------------------------------------------------------
# The logger on its own: a resumed writer skips logged (name, step) pairs in JSONL and TensorBoard,
# and drops a line torn by a kill.

def tb_scalars(logdir: Path) -> list[tuple[str, int]]:
    """(tag, step) of every scalar in the TensorBoard event files under `logdir` (TFRecord framing)."""
    import struct

    from tensorboardX.proto import event_pb2
    out = []
    for path in sorted(logdir.rglob("events.out.tfevents*")):
        data = path.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            (n,) = struct.unpack("<Q", data[pos:pos + 8])
            ev = event_pb2.Event.FromString(data[pos + 12:pos + 12 + n])
            pos += 12 + n + 4
            out += [(v.tag, ev.step) for v in ev.summary.value]
    return out


def test_logger_writes_each_step_once_across_reopens(tmp_path):
    from gui_jax.train.logger import MetricsLogger
    lg = MetricsLogger(str(tmp_path))
    for t in range(1, 6):
        lg.write(t, {"loss": 1.0 / t}, prefix="sft")
    lg.close()
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"name": "sft/loss", "step": 6, "val')  # killed mid-line
    lg = MetricsLogger(str(tmp_path))  # resumed from a checkpoint at step 3: steps 4, 5 come again
    for t in range(4, 8):
        lg.write(t, {"loss": 1.0 / t}, prefix="sft")
    lg.write(0, {"SR": 0.5}, prefix="eval")
    lg.close()
    lg = MetricsLogger(str(tmp_path))
    lg.write(0, {"SR": 0.5}, prefix="eval")  # a cached evaluation reported again
    lg.close()
    recs = metric_records(tmp_path)
    assert [(n, s) for n, s, _ in recs] == [("sft/loss", t) for t in range(1, 8)] + [("eval/SR", 0)]
    assert lg.history["sft/loss"] == [(t, 1.0 / t) for t in range(1, 8)]
    tb = tb_scalars(tmp_path / "logs")
    assert sorted(tb) == sorted([("sft/loss", t) for t in range(1, 8)] + [("eval/SR", 0)])
