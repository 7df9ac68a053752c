"""Train state (params + optax state + step + rng) and the exact gradient-accumulating update.

The model is split once (`nnx.split`) into a static graphdef and a params pytree; the hot path is
pure functions over pytrees (no per-micro-batch split/merge). Losses return (sum, denominator):
the update uses Σ grad(sum) / Σ denominator over micro-batches, so any micro-batch split gives
the same update as the full batch.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import optax
from flax import nnx

PyTree = Any
# loss_fn(params, batch, rng) -> (loss_sum, denominator, metrics dict of scalars)
LossFn = Callable[[PyTree, dict, jax.Array], tuple[jax.Array, jax.Array, dict]]


@dataclasses.dataclass
class TrainState:
    step: int
    params: PyTree
    opt_state: PyTree
    rng: jax.Array

    def as_pytree(self) -> dict:
        return {"step": jnp.asarray(self.step, jnp.int32), "params": self.params,
                "opt_state": self.opt_state, "rng": jax.random.key_data(self.rng)}

    @classmethod
    def from_pytree(cls, tree: dict) -> "TrainState":
        return cls(step=int(tree["step"]), params=tree["params"], opt_state=tree["opt_state"],
                   rng=jax.random.wrap_key_data(tree["rng"]))


def make_optimizer(learning_rate: float, *, warmup_steps: int = 0, total_steps: int | None = None,
                   weight_decay: float = 0.0, max_grad_norm: float | None = 1.0,
                   b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                   schedule: str = "constant") -> optax.GradientTransformation:
    """AdamW with linear warm-up, optional cosine decay, and global-norm gradient clipping."""
    if schedule == "constant":
        lr = optax.join_schedules([optax.linear_schedule(0.0, learning_rate, warmup_steps),
                                   optax.constant_schedule(learning_rate)], [warmup_steps]) \
            if warmup_steps > 0 else learning_rate
    elif schedule == "cosine":
        if total_steps is None:
            raise ValueError("schedule='cosine' needs total_steps")
        lr = optax.warmup_cosine_decay_schedule(0.0, learning_rate, max(warmup_steps, 1), total_steps)
    else:
        raise ValueError(f"unknown learning-rate schedule {schedule!r}; known: constant, cosine")
    parts = []
    if max_grad_norm is not None and max_grad_norm > 0:
        parts.append(optax.clip_by_global_norm(max_grad_norm))
    parts.append(optax.adamw(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay))
    return optax.chain(*parts)


def split_model(model: nnx.Module, trainable=nnx.Param):
    """(graphdef, trainable params, other state) — done once, outside the hot path."""
    graphdef, params, rest = nnx.split(model, trainable, ...)
    return graphdef, params, rest


def init_train_state(params: PyTree, optimizer: optax.GradientTransformation, seed: int) -> TrainState:
    return TrainState(step=0, params=params, opt_state=optimizer.init(params),
                      rng=jax.random.key(seed))


class Updater:
    """Gradient accumulation over micro-batches + one optimizer update, all jitted.

    `micro_grads(params, batch, rng)` → (grad of loss_sum, loss_sum, denom, metrics);
    `apply(params, opt_state, grad_sum, denom)` → (params, opt_state, grad_norm).
    The input params and optimizer state are donated (updated in place): keep no other
    reference to them (copy a reference policy's params with `jax.tree.map(jnp.copy, ...)`).
    """

    def __init__(self, loss_fn: LossFn, optimizer: optax.GradientTransformation):
        self.loss_fn = loss_fn
        self.optimizer = optimizer

        def micro(params, batch, rng):
            def f(p):
                s, d, m = loss_fn(p, batch, rng)
                return s, (d, m)
            (s, (d, m)), g = jax.value_and_grad(f, has_aux=True)(params)
            return g, s, d, m

        def apply(params, opt_state, grad_sum, denom):
            denom = jnp.maximum(denom, 1e-8)
            grads = jax.tree.map(lambda g: g / denom, grad_sum)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, optax.tree.norm(grads)

        self._micro = jax.jit(micro)
        self._apply = jax.jit(apply, donate_argnums=(0, 1))

    def step(self, state: TrainState, micro_batches: Sequence[dict]) -> tuple[TrainState, dict]:
        """One optimizer step over `micro_batches` (one logical batch). Returns new state, metrics."""
        if not micro_batches:
            raise ValueError("Updater.step needs at least one micro-batch")
        rng, step_rng = jax.random.split(state.rng)
        grad_sum, loss_sum, denom, metric_sums = None, 0.0, 0.0, {}
        for i, mb in enumerate(micro_batches):
            g, s, d, m = self._micro(state.params, mb, jax.random.fold_in(step_rng, i))
            grad_sum = g if grad_sum is None else jax.tree.map(jnp.add, grad_sum, g)
            loss_sum, denom = loss_sum + s, denom + d
            for k, v in m.items():
                # A metric is a scalar (averaged over micro-batches) or a (sum, count) pair.
                v = (v, 1.0) if not isinstance(v, tuple) else v
                acc = metric_sums.get(k, (0.0, 0.0))
                metric_sums[k] = (acc[0] + float(v[0]), acc[1] + float(v[1]))
        params, opt_state, gnorm = self._apply(state.params, state.opt_state, grad_sum, denom)
        metrics = {"loss": float(loss_sum / jnp.maximum(denom, 1e-8)), "grad_norm": float(gnorm),
                   "tokens": float(denom)}
        metrics.update({k: s / c if c > 0 else float("nan") for k, (s, c) in metric_sums.items()})
        return TrainState(state.step + 1, params, opt_state, rng), metrics
