"""Function-preserving growth of a trained model into a deeper / wider one of the same architecture.

`grow_params(small, fresh)` puts a trained model's params into a freshly initialised larger model so that the
larger model computes exactly the same logits: every weight the small model has is copied to the same place,
the new parts keep their fresh initialisation, and the new parts' writers into the residual stream start at
zero (a new layer's attention o_proj and MLP down_proj; a widened MLP's extra down_proj rows). The readers of
the new parts (q/k/v, gate/up) stay random, so the zero writers get a gradient from the first update and the
new capacity starts learning at once (zero readers *and* writers would stay at zero).

What may grow: text layers (appended on top: the layer indices of supervised attention hops keep their meaning),
the text MLP width, and the text key/value heads (grouped-query attention undone: each new key/value head starts
as a copy of the one its query heads shared, so the logits stay and the heads can part from the first update).
The residual width, query heads, vocabulary and the vision tower must match (a wider residual stream changes
every RMSNorm's statistics); anything else is an error naming the parameter.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

# a new layer's residual writers: zero, so the layer starts as the identity
_WRITERS = ("o_proj", "down_proj")


def _flat(tree) -> dict:
  leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
  return {jax.tree_util.keystr(p): x for p, x in leaves}


def _keys(path) -> list[str]:
  return [str(getattr(k, "key", getattr(k, "idx", k))) for k in path]


def _more_kv_heads(old, new_shape, head_dim: int | None, name: str):
  """k/v projection [hidden, kv * hd] (or its bias [kv * hd]) with each old head repeated for the query heads it
  served: under GQA query head h reads kv head h // (heads / kv), so new head j copies old head j // ratio."""
  if not head_dim:
    raise ValueError(f"cannot grow {name}: {old.shape} -> {new_shape} needs the head width (head_dim)")
  kv_old, kv_new = old.shape[-1] // head_dim, new_shape[-1] // head_dim
  if kv_old * head_dim != old.shape[-1] or kv_new * head_dim != new_shape[-1] or kv_new % kv_old:
    raise ValueError(f"cannot grow {name}: {old.shape} -> {new_shape} (key/value heads of {head_dim} must grow "
                     f"by a whole factor)")
  heads = old.reshape(old.shape[:-1] + (kv_old, head_dim))
  return jnp.repeat(heads, kv_new // kv_old, axis=-2).reshape(new_shape)


def grow_params(small, fresh, head_dim: int | None = None):
  """Params of the larger model (the structure and dtypes of `fresh`) holding `small`'s weights, same logits.

  small: the trained model's param tree (nnx.State); fresh: the larger model's freshly initialised one;
  head_dim: the text attention's head width (needed only when the key/value heads grow)."""
  have = _flat(small)
  want = _flat(fresh)
  missing = sorted(set(have) - set(want))
  if missing:
    raise ValueError(f"cannot grow: the larger model has no parameter {missing[0]} (layers can only be added, "
                     f"not removed)")

  def one(path, x):
    name = jax.tree_util.keystr(path)
    keys = _keys(path)
    text = "language_model" in keys
    if name not in have:  # a new layer: readers random, residual writers zero
      if not (text and "layers" in keys):
        raise ValueError(f"cannot grow: {name} is new, and only text layers may be added")
      return jnp.zeros_like(x) if set(_WRITERS) & set(keys) else x
    old = jnp.asarray(have[name], x.dtype)
    if old.shape == x.shape:
      return old
    if old.ndim != x.ndim or any(o > n for o, n in zip(old.shape, x.shape)):
      raise ValueError(f"cannot grow {name}: {old.shape} -> {x.shape}")
    if text and ({"k_proj", "v_proj"} & set(keys)) and old.shape[:-1] == x.shape[:-1]:
      return _more_kv_heads(old, x.shape, head_dim, name).astype(x.dtype)
    if not (text and "mlp" in keys):
      raise ValueError(f"cannot grow {name}: {old.shape} -> {x.shape} (only the text MLP width, the key/value "
                       f"heads and the number of text layers may grow)")
    if "down_proj" in keys:  # extra intermediate units write nothing yet
      x = jnp.zeros_like(x)
    return x.at[tuple(slice(0, s) for s in old.shape)].set(old)

  return jax.tree_util.tree_map_with_path(one, fresh)
