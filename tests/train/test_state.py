"""Gradient accumulation is exact; checkpoints restore the exact state."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from gui_jax.train.checkpoint import Checkpointer
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.state import Updater, init_train_state, make_optimizer, split_model


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(4, 8, rngs=rngs)
        self.b = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.b(jnp.tanh(self.a(x)))[..., 0]


def _setup():
    graphdef, params, rest = split_model(MLP(nnx.Rngs(0)))

    def loss_fn(p, batch, rng):
        pred = nnx.merge(graphdef, p, rest)(batch["x"])
        err = (pred - batch["y"]) ** 2 * batch["mask"]
        return err.sum(), batch["mask"].sum(), {"err_max": err.max()}

    return params, loss_fn


def _batch(seed, n=8):
    r = np.random.default_rng(seed)
    return {"x": r.normal(size=(n, 4)).astype(np.float32), "y": r.normal(size=(n,)).astype(np.float32),
            "mask": (r.random(n) > 0.3).astype(np.float32)}


def _split(batch, sizes):
    out, i = [], 0
    for s in sizes:
        out.append({k: v[i:i + s] for k, v in batch.items()})
        i += s
    return out


def test_micro_batches_give_same_update():
    params, loss_fn = _setup()
    opt = make_optimizer(1e-2, warmup_steps=2, max_grad_norm=1.0, weight_decay=0.01)
    up = Updater(loss_fn, opt)
    b = _batch(0)
    # The updater donates its input params: give each run its own copy.
    s_full, m_full = up.step(init_train_state(jax.tree.map(jnp.copy, params), opt, 0), [b])
    s_micro, m_micro = up.step(init_train_state(jax.tree.map(jnp.copy, params), opt, 0), _split(b, [3, 1, 4]))
    for x, y in zip(jax.tree.leaves(s_full.params), jax.tree.leaves(s_micro.params)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-6)
    assert abs(m_full["loss"] - m_micro["loss"]) < 1e-6
    assert m_full["tokens"] == float(b["mask"].sum())


def test_checkpoint_resume_is_exact(tmp_path):
    params, loss_fn = _setup()
    opt = make_optimizer(1e-2, warmup_steps=3)
    up = Updater(loss_fn, opt)

    def run(state, steps):
        for t in steps:
            state, _ = up.step(state, [_batch(t)])
        return state

    ref = run(init_train_state(jax.tree.map(jnp.copy, params), opt, 7), range(6))
    ck = Checkpointer(str(tmp_path / "ck"), save_every=1)
    s = run(init_train_state(jax.tree.map(jnp.copy, params), opt, 7), range(3))
    ck.save(s, {"data_state": {"pos": 3}})
    template = init_train_state(jax.tree.map(jnp.zeros_like, params), opt, 0)
    restored, extra = Checkpointer(str(tmp_path / "ck")).restore_latest(template)
    assert restored.step == 3 and extra == {"data_state": {"pos": 3}}
    out = run(restored, range(3, 6))
    assert out.step == ref.step == 6
    for x, y in zip(jax.tree.leaves(out.params), jax.tree.leaves(ref.params)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-6)
    np.testing.assert_array_equal(jax.random.key_data(out.rng), jax.random.key_data(ref.rng))


def test_checkpoint_time_trigger_uses_the_clock(tmp_path):
    params, _ = _setup()
    now = [100.0]
    ck = Checkpointer(str(tmp_path / "ck"), save_every=1000, save_every_seconds=600, clock=lambda: now[0])
    assert not ck.should_save(7)          # neither 1000 steps nor 600 s
    now[0] = 699.0
    assert not ck.should_save(8)
    now[0] = 700.0
    assert ck.should_save(9)              # 600 s since construction
    ck.save(init_train_state(params, make_optimizer(1e-3), 0))
    assert not ck.should_save(10)         # the save restarts the clock
    assert ck.should_save(1000)           # the step count still triggers
    assert not Checkpointer(str(tmp_path / "ck2"), save_every=0, clock=lambda: 1e9).should_save(5)


def test_checkpoints_kept_bounds_the_folder_and_zero_keeps_every_one(tmp_path):
    params, _ = _setup()
    state = init_train_state(params, make_optimizer(1e-3), 0)
    for kept, left in ((2, [4, 5]), (0, [1, 2, 3, 4, 5])):
        ck = Checkpointer(str(tmp_path / f"k{kept}"), save_every=1, max_to_keep=kept)
        for step in range(1, 6):
            ck.save(state, ckpt_id=step)
        assert sorted(ck.manager.all_steps()) == left
        assert sorted(int(d) for d in os.listdir(tmp_path / f"k{kept}") if d.isdigit()) == left


def test_logger_writes_jsonl_tb_and_png(tmp_path):
    lg = MetricsLogger(str(tmp_path))
    for t in range(5):
        lg.write(t, {"loss": 1.0 / (t + 1), "acc": t / 4}, prefix="sft")
    png = lg.plot()
    lg.close()
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert any(p.name.startswith("events.out.tfevents") for p in (tmp_path / "logs").iterdir())
    again = MetricsLogger(str(tmp_path), tensorboard=False)
    assert again.history["sft/loss"][-1] == (4, 0.2)


def test_logger_leaves_pytorch_unimported_and_its_event_file_holds_the_scalars(tmp_path):
    """tensorboardX imports torch when it is installed; a job's logger must not pay that (seconds per process),
    and torch stays importable afterwards. The event file holds each scalar with its step."""
    import subprocess
    import sys
    code = f"""
import struct, sys
from gui_jax.train.logger import MetricsLogger
lg = MetricsLogger({str(tmp_path)!r})
for t in range(3):
    lg.write(t, {{"loss": 0.5 * t}}, prefix="sft")
lg.close()
assert "torch" not in sys.modules, "the logger imported torch"
import torch  # still importable
import os
from tensorboardX.proto.event_pb2 import Event
(name,) = [n for n in os.listdir({str(tmp_path / "logs")!r}) if n.startswith("events.out.tfevents")]
data, got = open(os.path.join({str(tmp_path / "logs")!r}, name), "rb").read(), []
while data:
    (n,) = struct.unpack("<Q", data[:8])
    ev = Event.FromString(data[12:12 + n])
    data = data[12 + n + 4:]
    got += [(ev.step, v.tag, round(v.simple_value, 6)) for v in ev.summary.value]
print(sorted(got))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[(0, 'sft/loss', 0.0), (1, 'sft/loss', 0.5), (2, 'sft/loss', 1.0)]"


def _rates(opt, steps: int) -> np.ndarray:
    """The learning rate of each update: with a constant gradient, Adam's bias-corrected step is exactly lr."""
    params, out = jnp.zeros(1), []
    state = opt.init(params)
    for _ in range(steps):
        updates, state = opt.update(jnp.ones(1), state, params)
        out.append(-float(updates[0]))
    return np.asarray(out)


def test_wsd_schedule_warms_up_holds_then_anneals_to_zero():
    lr, warm, total, decay = 1e-2, 4, 20, 8
    got = _rates(make_optimizer(lr, warmup_steps=warm, total_steps=total, schedule="wsd", decay_steps=decay,
                                max_grad_norm=None, eps=0.0), total + 1)
    t = np.arange(total + 1)
    want = np.where(t < warm, lr * t / warm,
                    np.where(t < total - decay, lr,
                             0.5 * lr * (1 + np.cos(np.pi * np.minimum(t - (total - decay), decay) / decay))))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)
    assert abs(got[total]) < 1e-9 and np.all(np.diff(got[total - decay:]) < 0)   # annealing from its first update


def test_wsd_schedule_rejects_a_decay_longer_than_the_run():
    with pytest.raises(ValueError, match="decay_steps"):
        make_optimizer(1e-3, warmup_steps=10, total_steps=20, schedule="wsd", decay_steps=15)
