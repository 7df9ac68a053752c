"""Function-preserving growth of a trained model into a deeper / wider one of the same architecture.

`grow_params(small, fresh)` puts a trained model's params into a freshly initialised larger model so that the
larger model computes exactly the same logits: every weight the small model has is copied to the same place,
the new parts keep their fresh initialisation, and the new parts' writers into the residual stream start at
zero (a new layer's attention o_proj and MLP down_proj; a widened MLP's extra down_proj rows). The readers of
the new parts (q/k/v, gate/up) stay random, so the zero writers get a gradient from the first update and the
new capacity starts learning at once (zero readers *and* writers would stay at zero).

What may grow: text layers (appended on top: the layer indices of supervised attention hops keep their meaning),
the text MLP width, the text key/value heads (grouped-query attention undone: each new key/value head starts
as a copy of the one its query heads shared, so the logits stay and the heads can part from the first update),
and the residual width with more heads of the same head width. A wider residual stream starts with its new
dimensions at zero (every writer into them, the embedding's new columns included, starts at zero) and every
RMSNorm's scale times sqrt(old / new width), which undoes the smaller mean square the zeros give: the normalised
old dimensions, and so the logits, stay (up to the norms' epsilon, added to a smaller mean square: ~1e-6 against a
trained residual's ~1). New heads read at random and write nothing; the old heads keep their
places and their key/value heads (the heads-per-key/value ratio must stay). The vision tower's output projection
widens with the text (new outputs zero). The vocabulary and the rest of the vision tower must match; anything
else is an error naming the parameter.
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


def _widened_norm(old, width: int):
  """An RMSNorm scale [d] for a residual stream of `width` whose new dimensions are zero: x / rms over `width`
  dimensions is sqrt(width / d) times x / rms over d, so every scale is multiplied by sqrt(d / width)."""
  factor = (old.shape[0] / width) ** 0.5
  return jnp.concatenate([old * factor, jnp.full((width - old.shape[0],), factor, old.dtype)])


def _check_head_ratio(have: dict, want: dict) -> None:
  """A wider model's old query heads keep their key/value heads only if heads / kv heads is unchanged."""
  for name, k in want.items():
    if name.endswith("['k_proj']['kernel'].value") and name in have:
      q = name.replace("k_proj", "q_proj")
      before = have[q].shape[-1] // have[name].shape[-1]
      after = want[q].shape[-1] // k.shape[-1]
      if before != after:
        raise ValueError(f"cannot widen {name}: {before} query heads per key/value head become {after} (the "
                         f"old heads would read other key/value heads); keep the ratio")


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

  embed = "['language_model']['embed_tokens'].value"
  width = want[embed].shape[-1] if embed in want else None
  wide = embed in have and width != have[embed].shape[-1]
  if wide:
    _check_head_ratio(have, want)

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
    if wide and (text or "mlp_out" in keys):
      if "scale" in keys:
        return _widened_norm(old, width).astype(x.dtype)
      # writers into the residual stream (and the tied embedding / vision output) start their new parts at zero
      if {"embed_tokens", "o_proj", "down_proj", "mlp_out"} & set(keys):
        x = jnp.zeros_like(x)
      return x.at[tuple(slice(0, s) for s in old.shape)].set(old)
    if text and ({"k_proj", "v_proj"} & set(keys)) and old.shape[:-1] == x.shape[:-1]:
      return _more_kv_heads(old, x.shape, head_dim, name).astype(x.dtype)
    if not (text and "mlp" in keys):
      raise ValueError(f"cannot grow {name}: {old.shape} -> {x.shape} (only the text MLP width, the key/value "
                       f"heads, the residual width and the number of text layers may grow)")
    if "down_proj" in keys:  # extra intermediate units write nothing yet
      x = jnp.zeros_like(x)
    return x.at[tuple(slice(0, s) for s in old.shape)].set(old)

  return jax.tree_util.tree_map_with_path(one, fresh)
