"""Mixed precision: bf16 compute, float32 master weights + AdamW state; an lr 1e-6 update is not lost."""
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gui_jax.train.state import Updater, init_train_state, make_optimizer

LR = 1e-6


def _loss(params, batch, rng):
    """Sum of squared errors of a 2-layer tanh MLP, computed in the params' dtype (bf16 under the Updater)."""
    del rng
    dt = params["w1"].dtype
    h = jnp.tanh(batch["x"].astype(dt) @ params["w1"])
    err = (h @ params["w2"] - batch["y"].astype(dt)).astype(jnp.float32)
    return (err ** 2).sum(), jnp.float32(batch["x"].shape[0]), {"err_max": jnp.abs(err).max()}


def _setup():
    r = np.random.default_rng(0)
    params = {"w1": jnp.asarray(r.normal(0, 0.5, (16, 64)), jnp.float32),
              "w2": jnp.asarray(r.normal(0, 0.5, (64,)), jnp.float32)}
    batch = {"x": r.normal(size=(32, 16)).astype(np.float32), "y": r.normal(size=(32,)).astype(np.float32)}
    return params, batch


def test_bf16_compute_updates_fp32_masters_like_fp32_adamw():
    params, batch = _setup()
    opt = make_optimizer(LR, max_grad_norm=None)  # = optax.adamw(1e-6), no clipping, no decay
    up = Updater(_loss, opt, compute_dtype=jnp.bfloat16)
    before = jax.tree.map(np.asarray, params)
    state = init_train_state(jax.tree.map(jnp.copy, params), opt, seed=0)
    new, metrics = up.step(state, [batch])

    # The same float32 gradients (bf16 forward / backward), then a plain float32 optax.adamw step.
    grads, loss_sum, denom, _ = jax.jit(up.micro_grads)(params, batch, jax.random.key(0))
    assert all(g.dtype == jnp.float32 for g in jax.tree.leaves(grads))
    grads = jax.tree.map(lambda g: g / denom, grads)
    ref_opt = optax.adamw(LR, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0)
    updates, _ = ref_opt.update(grads, ref_opt.init(params), params)
    expected = jax.tree.map(np.asarray, optax.apply_updates(params, updates))
    assert abs(metrics["loss"] - float(loss_sum / denom)) < 1e-6

    for k in params:
        got, want, old = np.asarray(new.params[k]), expected[k], before[k]
        assert got.dtype == np.float32
        np.testing.assert_array_less(np.abs(got - want), 1e-6 * np.abs(want) + 1e-30)
        # The step itself (about lr per weight for Adam's first step) matches to float32 rounding of the sum.
        np.testing.assert_allclose(got - old, want - old, rtol=0, atol=2 * float(np.spacing(np.abs(old)).max()))
        assert np.mean(got != old) > 0.99, f"{k}: fp32 masters should move at lr {LR}"
        assert 0.5 * LR < np.median(np.abs(got - old)) < 2 * LR

    # The motivating bug: the same update applied to bf16 weights is lost to rounding almost everywhere.
    for k in params:
        w16 = jnp.asarray(before[k], jnp.bfloat16)
        moved = np.asarray((w16 + updates[k].astype(jnp.bfloat16)) != w16)
        assert moved.mean() < 0.05, f"{k}: {moved.mean():.3f} of bf16 weights moved"


def test_bf16_compute_differs_from_fp32_compute_but_grads_stay_fp32():
    """The cast happens (bf16 loss differs from the fp32 loss) and gradients are float32 and close."""
    params, batch = _setup()
    up16 = Updater(_loss, make_optimizer(LR), compute_dtype=jnp.bfloat16)
    up32 = Updater(_loss, make_optimizer(LR))
    g16, s16, _, _ = up16.micro_grads(params, batch, jax.random.key(0))
    g32, s32, _, _ = up32.micro_grads(params, batch, jax.random.key(0))
    assert float(s16) != float(s32)
    assert abs(float(s16) - float(s32)) < 0.05 * abs(float(s32))
    for a, b in zip(jax.tree.leaves(g16), jax.tree.leaves(g32)):
        assert a.dtype == jnp.float32
        assert np.linalg.norm(np.asarray(a - b)) < 0.05 * np.linalg.norm(np.asarray(b))
