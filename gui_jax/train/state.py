"""Train state (params + optax state + step + rng) and the exact gradient-accumulating update.

The model is split once (`nnx.split`) into a static graphdef and a params pytree; the hot path is
pure functions over pytrees (no per-micro-batch split/merge). Losses return (sum, denominator):
the update uses Σ grad(sum) / Σ denominator over micro-batches, so any micro-batch split gives
the same update as the full batch.

Sharding: when the params are jax Arrays with NamedShardings (the Agent places them on its mesh),
the optimizer state is created with the same layout (Adam moments sharded like their weights), the
train functions are jitted with those output shardings and donate their state, and every
micro-batch is placed on the mesh's batch axes (`place_batch`). Accumulation stays on device: one
host sync per optimizer step (the metrics), none per micro-batch.

Mixed precision: keep the params (master weights) and the AdamW state in float32 and pass
`compute_dtype=jnp.bfloat16`: the loss sees a bf16 copy of the floating params (cast inside the
jitted function, so FSDP all-gathers move bf16), gradients flow back to the float32 masters, and
accumulate and update in float32. At lr 1e-6 a bf16 weight would not move at all (its spacing is
2^-8 relative): the masters must be float32.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

from gui_jax.models import sharding as shd

PyTree = Any
# loss_fn(params, batch, rng) -> (loss_sum, denominator, metrics dict of scalars or (sum, count) pairs)
LossFn = Callable[[PyTree, dict, jax.Array], tuple[jax.Array, jax.Array, dict]]

# Logical axes of the arrays `rl.batch.build_batch` emits that are not batch-first ([B, ...]).
BATCH_LOGICAL_AXES: dict[str, Any] = {
    "position_ids": (None, "batch", None),   # [3, B, L]
    "pixel_values": ("batch", None),         # [N, D]: patches of all rows' images, in row order
    "vision_layout": None,                   # host-computed index arrays of those images
}


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


def schedule_count(opt_state) -> Optional[int]:
    """The update count an optax learning-rate schedule keeps in `opt_state` (None: a constant rate, no count)."""
    is_count = lambda x: isinstance(x, optax.ScaleByScheduleState)   # noqa: E731
    return next((int(x.count) for x in jax.tree.leaves(opt_state, is_leaf=is_count) if is_count(x)), None)


def make_optimizer(learning_rate: float, *, warmup_steps: int = 0, total_steps: int | None = None,
                   weight_decay: float = 0.0, max_grad_norm: float | None = 1.0,
                   b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                   schedule: str = "constant", decay_steps: int = 0) -> optax.GradientTransformation:
    """AdamW with linear warm-up, then a constant rate ('constant'), a cosine decay to 0 at total_steps
    ('cosine'), or a constant rate whose last `decay_steps` updates decay (cosine) to 0 at total_steps ('wsd':
    warm-up, stable, decay; a long run keeps the constant rate and a snapshot anneals from any checkpoint);
    global-norm gradient clipping."""
    if schedule in ("cosine", "wsd") and total_steps is None:
        raise ValueError(f"schedule={schedule!r} needs total_steps")
    warm = optax.linear_schedule(0.0, learning_rate, warmup_steps)
    if schedule == "constant":
        lr = optax.join_schedules([warm, optax.constant_schedule(learning_rate)], [warmup_steps]) \
            if warmup_steps > 0 else learning_rate
    elif schedule == "cosine":
        lr = optax.warmup_cosine_decay_schedule(0.0, learning_rate, max(warmup_steps, 1), total_steps)
    elif schedule == "wsd":
        if not 0 < decay_steps <= total_steps - warmup_steps:
            raise ValueError(f"schedule='wsd' needs 0 < decay_steps ({decay_steps}) ≤ total_steps ({total_steps}) "
                             f"- warmup_steps ({warmup_steps})")
        stable_end = total_steps - decay_steps
        lr = optax.join_schedules([warm, optax.constant_schedule(learning_rate),
                                   optax.cosine_decay_schedule(learning_rate, decay_steps)],
                                  [warmup_steps, stable_end])
    else:
        raise ValueError(f"unknown learning-rate schedule {schedule!r}; known: constant, cosine, wsd")
    parts = []
    if max_grad_norm is not None and max_grad_norm > 0:
        parts.append(optax.clip_by_global_norm(max_grad_norm))
    parts.append(optax.adamw(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay))
    return optax.chain(*parts)


def split_model(model: nnx.Module, trainable=nnx.Param):
    """(graphdef, trainable params, other state) — done once, outside the hot path."""
    graphdef, params, rest = nnx.split(model, trainable, ...)
    return graphdef, params, rest


# ---------------------------------------------------------------------------------------------- shardings
def cast_floating(tree: PyTree, dtype) -> PyTree:
    """Every floating array of `tree` cast to `dtype` (ints, bools, keys untouched)."""
    def cast(x):
        return x.astype(dtype) if jnp.issubdtype(jnp.result_type(x), jnp.floating) else x
    return jax.tree.map(cast, tree)


def tree_shardings(tree: PyTree) -> Optional[PyTree]:
    """The NamedShardings of a pytree's arrays (same structure), or None when any leaf is not a jax Array
    placed with a NamedSharding (host arrays, single-device arrays: the unsharded path)."""
    leaves = jax.tree.leaves(tree)
    if not leaves or not all(isinstance(getattr(x, "sharding", None), NamedSharding) for x in leaves):
        return None
    return jax.tree.map(lambda x: x.sharding, tree)


def mesh_of(shardings: PyTree):
    leaves = jax.tree.leaves(shardings, is_leaf=lambda x: isinstance(x, NamedSharding))
    return leaves[0].mesh if leaves else None


def opt_state_shardings(optimizer: optax.GradientTransformation, params: PyTree, param_shardings: PyTree) -> PyTree:
    """Shardings of `optimizer.init(params)`: every params-shaped sub-tree (Adam mu / nu) sharded like the
    params, everything else (step counts) replicated. `params` may be abstract (ShapeDtypeStructs)."""
    mesh = mesh_of(param_shardings)
    abstract = jax.eval_shape(optimizer.init, params)
    replicated = NamedSharding(mesh, PartitionSpec())
    return optax.tree_map_params(optimizer, lambda _, s: s, abstract, param_shardings,
                                 transform_non_params=lambda _: replicated,
                                 is_leaf=lambda x: isinstance(x, NamedSharding))


def init_train_state(params: PyTree, optimizer: optax.GradientTransformation, seed: int) -> TrainState:
    """Fresh optimizer state; when `params` are sharded, the state is created directly in its shards."""
    shardings = tree_shardings(params)
    if shardings is None:
        return TrainState(step=0, params=params, opt_state=optimizer.init(params), rng=jax.random.key(seed))
    opt_state = jax.jit(optimizer.init, out_shardings=opt_state_shardings(optimizer, params, shardings))(params)
    return TrainState(step=0, params=params, opt_state=opt_state, rng=jax.random.key(seed))


def place_batch(batch: Mapping, mesh, rules=shd.DEFAULT_RULES,
                logical_axes: Optional[Mapping[str, Any]] = None) -> dict:
    """Host micro-batch → arrays on `mesh`: rows split over the 'batch' rule (data × fsdp axes), token
    positions [3, B, L] split on their B axis, image patches [N, D] split on N (replicated when N does not
    divide), the vision layout's index arrays replicated; per-row images ([B, N, D], grouped layout) and
    their layout split on B like the rows.
    logical_axes: extra per-key overrides (see `sharding.shard_batch`)."""
    axes = dict(BATCH_LOGICAL_AXES)
    if np.ndim(batch.get("pixel_values")) == 3:  # per-row images: pixels and layout split with their rows
        axes["pixel_values"] = axes["vision_layout"] = "default"
    axes.update(dict(logical_axes or {}))
    return shd.shard_batch(dict(batch), mesh, rules, {k: v for k, v in axes.items() if k in batch})


# ---------------------------------------------------------------------------------------------- updater
class Updater:
    """Gradient accumulation over micro-batches + one optimizer update, all jitted, no per-micro-batch sync.

    `accumulate(acc, params, batch, rng)` → acc + (grad of loss_sum, loss_sum, denom, metric sums);
    `apply(params, opt_state, acc)` → (params, opt_state, metrics) with grads = Σ grad / Σ denom.
    The input params and optimizer state are donated (updated in place): keep no other
    reference to them (copy a reference policy's params with `jax.tree.map(jnp.copy, ...)`).

    compute_dtype: dtype the loss sees the floating params in (bf16 mixed precision); None = as stored.
    rules: logical rules for activation constraints (`sharding.constrain`) while tracing on a mesh.
    """

    def __init__(self, loss_fn: LossFn, optimizer: optax.GradientTransformation, *,
                 compute_dtype=None, rules=shd.DEFAULT_RULES):
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.compute_dtype = None if compute_dtype is None else jnp.dtype(compute_dtype)
        self.rules = shd.DEFAULT_RULES if rules is None else rules
        self.mesh = None
        self._built_for: Any = "unbuilt"
        self._param_shardings = None
        self._metric_tree = None

    # ----------------------------------------------------------------------------- pure functions
    def micro_grads(self, params, batch, rng):
        """(grads [like params, float32 for float32 params], loss_sum, denom, metrics) of one micro-batch."""
        def f(p):
            if self.compute_dtype is not None:
                p = cast_floating(p, self.compute_dtype)
            s, d, m = self.loss_fn(p, batch, rng)
            return jnp.asarray(s, jnp.float32), (jnp.asarray(d, jnp.float32), m)
        (s, (d, m)), g = jax.value_and_grad(f, has_aux=True)(params)
        return g, s, d, m

    def _accumulate(self, acc, params, batch, rng):
        with self._activation_context():
            g, s, d, m = self.micro_grads(params, batch, rng)
        if self._param_shardings is not None:
            g = jax.lax.with_sharding_constraint(g, self._param_shardings)
        metrics = {k: _as_pair(v) for k, v in m.items()}
        metrics = {k: (acc["metrics"][k][0] + v[0], acc["metrics"][k][1] + v[1]) for k, v in metrics.items()}
        return {"grads": jax.tree.map(jnp.add, acc["grads"], g), "loss": acc["loss"] + s,
                "denom": acc["denom"] + d, "metrics": metrics}

    def _apply(self, params, opt_state, acc):
        denom = jnp.maximum(acc["denom"], 1e-8)
        grads = jax.tree.map(lambda g: g / denom, acc["grads"])
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        metrics = {"loss": acc["loss"] / denom, "grad_norm": optax.tree.norm(grads), "tokens": acc["denom"]}
        for k, (s, c) in acc["metrics"].items():
            metrics[k] = jnp.where(c > 0, s / jnp.where(c > 0, c, 1.0), jnp.nan)
        return optax.apply_updates(params, updates), opt_state, metrics

    def _zeros(self, params):
        metrics = {k: (jnp.zeros((), jnp.float32), jnp.zeros((), jnp.float32)) for k in self._metric_tree}
        return {"grads": jax.tree.map(jnp.zeros_like, params), "loss": jnp.zeros((), jnp.float32),
                "denom": jnp.zeros((), jnp.float32), "metrics": metrics}

    def _activation_context(self):
        import contextlib
        return shd.activation_sharding(self.mesh, self.rules) if self.mesh is not None else contextlib.nullcontext()

    # ----------------------------------------------------------------------------- jitted entry points
    def build(self, param_shardings: Optional[PyTree], opt_shardings: Optional[PyTree] = None) -> None:
        """(Re)creates the jitted functions for a params layout (None = unsharded, plain jit).

        The jitted `accumulate_jit`, `apply_jit`, `zeros_jit` are what `step` runs and what
        benchmarks/aot.py lowers for a TPU topology.
        """
        self._param_shardings = param_shardings
        self.mesh = None if param_shardings is None else mesh_of(param_shardings)
        if param_shardings is None:
            self.zeros_jit = jax.jit(self._zeros)
            self.accumulate_jit = jax.jit(self._accumulate, donate_argnums=(0,))
            self.apply_jit = jax.jit(self._apply, donate_argnums=(0, 1))
            return
        rep = NamedSharding(self.mesh, PartitionSpec())
        acc_sh = {"grads": param_shardings, "loss": rep, "denom": rep, "metrics": rep}
        self.zeros_jit = jax.jit(self._zeros, out_shardings=acc_sh)
        self.accumulate_jit = jax.jit(self._accumulate, donate_argnums=(0,), out_shardings=acc_sh)
        self.apply_jit = jax.jit(self._apply, donate_argnums=(0, 1),
                                 out_shardings=(param_shardings, opt_shardings, rep))

    def metric_names(self, params, batch, rng) -> tuple[str, ...]:
        """The loss's metric names (one abstract trace, cached)."""
        if self._metric_tree is None:
            out = jax.eval_shape(lambda p, b, r: self.loss_fn(p, b, r)[2], params, batch, rng)
            self._metric_tree = tuple(out)
        return self._metric_tree

    def _ensure_built(self, state: TrainState) -> None:
        shardings = tree_shardings(state.params)
        key = None if shardings is None else (jax.tree.structure(shardings),
                                              tuple((s.mesh, s.spec) for s in jax.tree.leaves(shardings)))
        if key == self._built_for:
            return
        opt_sh = None if shardings is None else tree_shardings(state.opt_state)
        if shardings is not None and opt_sh is None:
            opt_sh = opt_state_shardings(self.optimizer, state.params, shardings)
        self.build(shardings, opt_sh)
        self._built_for = key

    def step(self, state: TrainState, micro_batches: Sequence[dict]) -> tuple[TrainState, dict]:
        """One optimizer step over `micro_batches` (one logical batch). Returns new state, metrics."""
        if not micro_batches:
            raise ValueError("Updater.step needs at least one micro-batch")
        self._ensure_built(state)
        rng, step_rng = jax.random.split(state.rng)
        if self.mesh is not None:
            micro_batches = [place_batch(mb, self.mesh, self.rules) for mb in micro_batches]
        self.metric_names(state.params, micro_batches[0], step_rng)
        acc = self.zeros_jit(state.params)
        for i, mb in enumerate(micro_batches):
            acc = self.accumulate_jit(acc, state.params, mb, jax.random.fold_in(step_rng, i))
        params, opt_state, metrics = self.apply_jit(state.params, state.opt_state, acc)
        metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}  # the one host sync per step
        return TrainState(state.step + 1, params, opt_state, rng), metrics


def _as_pair(v) -> tuple[jax.Array, jax.Array]:
    """A metric is a scalar (averaged over micro-batches) or a (sum, count) pair."""
    if isinstance(v, tuple):
        return jnp.asarray(v[0], jnp.float32), jnp.asarray(v[1], jnp.float32)
    return jnp.asarray(v, jnp.float32), jnp.ones((), jnp.float32)


__all__ = ["TrainState", "Updater", "make_optimizer", "split_model", "init_train_state", "place_batch",
           "cast_floating", "tree_shardings", "opt_state_shardings", "BATCH_LOGICAL_AXES"]
