"""Building blocks shared by the vision tower and the text decoder.

Every weight is an `nnx.Param` carrying its logical axis names in the `out_sharding` metadata (read them with
`nnx.get_partition_spec(nnx.state(model))` or `logical_axes(model)` in model.py). Eager sharding is off: the
sharding layer maps logical names to a mesh afterwards.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.attention import masked_attention  # noqa: F401  (re-exported: vision)


def dtype_of(name) -> jnp.dtype:
  return jnp.dtype(name)


def make_param(rngs: nnx.Rngs | None, shape: tuple[int, ...], axes: tuple[str | None, ...], dtype,
               init: str = "normal", scale: float = 0.02) -> nnx.Param:
  """A parameter with logical axes; init 'normal' (std `scale`), 'zeros' or 'ones'."""
  if len(axes) != len(shape):
    raise ValueError(f"axes {axes} do not match shape {shape}")
  if init == "normal":
    key = rngs.params()
    if isinstance(key, jax.core.Tracer):  # under jit / eval_shape
      value = scale * jax.random.normal(key, shape, dtype)
    else:  # eager: draw on the host (one XLA compile per shape would make eager init slow)
      seed = np.asarray(jax.random.key_data(key)).ravel().tolist()
      value = jnp.asarray((scale * np.random.default_rng(seed).standard_normal(shape)).astype(dtype))
  elif init == "zeros":
    value = jnp.zeros(shape, dtype)
  elif init == "ones":
    value = jnp.ones(shape, dtype)
  else:
    raise ValueError(f"unknown init {init!r}")
  return nnx.Param(value, out_sharding=tuple(axes), eager_sharding=False)


# backends on which `dense` merges the leading axes (benchmarks/train_step.py times the batched form beside it)
MERGED_DENSE_BACKENDS = ("cpu",)


def dense(x: jax.Array, w: jax.Array, spec: str = "...i,io->...o", **kw) -> jax.Array:
  """x [..., in] contracted with w by `spec` (the default x @ w; "...i,oi->...o" for w stored [out, in]).
  On XLA:CPU the leading axes are merged first: the weight gradient of a [B, T, in] product contracts two
  axes there and moves its operands through slow transposing copies, while one [B*T, in] matmul has the same
  values (training updates 1.24-1.38x faster: experiments/results/dense_merged_cpu.json). Accelerators keep
  the batched form their sharding rules expect."""
  if x.ndim > 2 and jax.default_backend() in MERGED_DENSE_BACKENDS:
    flat = jnp.einsum(spec.replace("...", "n"), x.reshape(-1, x.shape[-1]), w, **kw)
    return flat.reshape(*x.shape[:-1], flat.shape[-1])
  return jnp.einsum(spec, x, w, **kw)


class Linear(nnx.Module):
  """y = x @ kernel (+ bias). kernel [in, out] (HF stores weight [out, in]); logical axes (in_axis, out_axis)."""

  def __init__(self, din: int, dout: int, axes: tuple[str | None, str | None], *, bias: bool, dtype, param_dtype,
               rngs: nnx.Rngs):
    self.kernel = make_param(rngs, (din, dout), axes, param_dtype)
    self.bias = make_param(rngs, (dout,), (axes[1],), param_dtype, init="zeros") if bias else None
    self.dtype = dtype

  def __call__(self, x: jax.Array) -> jax.Array:
    y = dense(x.astype(self.dtype), self.kernel[...].astype(self.dtype))
    if self.bias is not None:
      y = y + self.bias[...].astype(self.dtype)
    return y


class RMSNorm(nnx.Module):
  """x * rsqrt(mean(x^2) + eps) computed in float32, cast back, then scaled (HF Qwen2 order)."""

  def __init__(self, dim: int, eps: float, axis: str, *, dtype, param_dtype):
    self.scale = make_param(None, (dim,), (axis,), param_dtype, init="ones")
    self.eps = eps
    self.dtype = dtype

  def __call__(self, x: jax.Array) -> jax.Array:
    xf = x.astype(jnp.float32)
    xf = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + self.eps)
    return self.scale[...].astype(self.dtype) * xf.astype(self.dtype)


def rotate_half(x: jax.Array) -> jax.Array:
  """[x1, x2] -> [-x2, x1] over the last axis (the RoPE pairing used by Qwen)."""
  x1, x2 = jnp.split(x, 2, axis=-1)
  return jnp.concatenate([-x2, x1], axis=-1)


def apply_rope(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
  """x [..., L, H, D]; cos/sin [..., L, D] broadcast over heads; rotation in float32."""
  xf = x.astype(jnp.float32)
  c, s = cos[..., None, :].astype(jnp.float32), sin[..., None, :].astype(jnp.float32)
  return (xf * c + rotate_half(xf) * s).astype(x.dtype)


def stack_modules(modules: list[nnx.Module]) -> nnx.Module:
  """One module of the same structure whose every param is the modules' params stacked on a new leading axis,
  logical name 'layers' (scan_layers). Module i's weights are slice i, so init matches the unscanned model."""
  graphdef, _ = nnx.split(modules[0])
  states = [nnx.split(m)[1] for m in modules]

  def stack(*vs):
    axes = vs[0].get_metadata().get("out_sharding")
    value = jnp.stack([v.get_value() for v in vs])
    return vs[0].replace(value, out_sharding=("layers",) + tuple(axes) if axes is not None else None)

  stacked = jax.tree.map(stack, *states, is_leaf=lambda x: isinstance(x, nnx.Variable))
  return nnx.merge(graphdef, stacked)


def remat_policy_fn(policy: str):
  """REMAT_POLICIES name -> jax.checkpoint policy (None = save only the inputs: 'full')."""
  if policy in ("full", "nothing_saveable"):
    return None
  return getattr(jax.checkpoint_policies, policy)


def scan_stacked(body, stacked: nnx.Module, carry, xs=None, remat_policy: str = "none"):
  """Runs `body(layer, carry, x) -> (carry, y)` over the layers of a stacked module with lax.scan, the per-layer
  params as scanned inputs (one traced layer whatever the depth). Returns (carry, stacked ys)."""
  graphdef, params = nnx.split(stacked)

  def step(c, inp):
    p, x = inp
    return body(nnx.merge(graphdef, p), c, x)

  if remat_policy != "none":
    step = jax.checkpoint(step, policy=remat_policy_fn(remat_policy), prevent_cse=False)
  return jax.lax.scan(step, carry, (params, xs))


RESIDUAL_OUTPUTS = frozenset({"o_proj", "down_proj", "o", "down"})  # matrices that write to the residual stream


def rescale_init(params, gain: float, under: str = "", residual_gain: float = 1.0):
  """Every 2-D weight but the token embedding from its init std 0.02 to std gain/√fan_in (params as
  initialised; `under`: only those whose path contains this key, e.g. 'language_model'), the residual
  outputs (attention o_proj, MLP down_proj) times `residual_gain` more. At std 0.02 a chain of four
  128-wide matrices starts ~1e-3 strong, too weak for a from-scratch look-up to start; at gain 1 the
  unsupervised layers of a deep stack start as random mixing of the residual stream (residual_gain < 1)."""
  def one(path, x):
    keys = {str(getattr(k, "key", k)) for k in path}
    if x.ndim != 2 or {"embed", "embed_tokens"} & keys or (under and under not in keys):
      return x
    return x * (gain / np.sqrt(x.shape[0]) / 0.02 * (residual_gain if RESIDUAL_OUTPUTS & keys else 1.0))
  return jax.tree_util.tree_map_with_path(one, params)
