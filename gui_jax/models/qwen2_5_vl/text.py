"""Qwen2 text decoder with M-RoPE (3-D positions) and a static, pre-allocated KV cache.

KV cache (`KVCache`, a pytree; build with `KVCache.init` or `Qwen25VLForConditionalGeneration.init_cache`):
  k, v      tuple over layers of [B, max_len, kv_heads, head_dim]
  valid     [B, max_len] bool   slot holds a real (non-padding) token
  index     [] int32            number of slots written so far (same for every row)
  next_position [B] int32       M-RoPE position the next text token gets (max position so far + 1)
A call with L new tokens writes them to slots [index, index + L), lets token i attend to slots <= index + i that
are valid, and returns the cache with index += L. Padding inside the new tokens is marked by attention_mask.
The caller keeps index + L <= max_len (dynamic_update_slice would clamp the write, silently).
For sharding, k / v map naturally to logical axes ('batch', None, 'kv_heads', None).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.qwen2_5_vl.config import TextConfig
from gui_jax.models.qwen2_5_vl.layers import Linear, RMSNorm, apply_rope, make_param, masked_attention


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class KVCache:
  k: tuple[jax.Array, ...]
  v: tuple[jax.Array, ...]
  valid: jax.Array
  index: jax.Array
  next_position: jax.Array

  @classmethod
  def init(cls, cfg: TextConfig, batch: int, max_len: int, dtype=jnp.float32) -> "KVCache":
    shape = (batch, max_len, cfg.num_key_value_heads, cfg.head_dim)
    zeros = tuple(jnp.zeros(shape, dtype) for _ in range(cfg.num_hidden_layers))
    return cls(k=zeros, v=tuple(jnp.zeros(shape, dtype) for _ in range(cfg.num_hidden_layers)),
               valid=jnp.zeros((batch, max_len), bool), index=jnp.zeros((), jnp.int32),
               next_position=jnp.zeros((batch,), jnp.int32))

  @property
  def max_len(self) -> int:
    return self.valid.shape[1]


def mrope_cos_sin(position_ids: jax.Array, cfg: TextConfig) -> tuple[jax.Array, jax.Array]:
  """position_ids [3, B, L] (t, h, w) -> cos, sin [B, L, head_dim] (frequency bands split by mrope_section)."""
  hd = cfg.head_dim
  inv_freq = 1.0 / (cfg.rope_theta ** (jnp.arange(0, hd, 2, dtype=jnp.float32) / hd))  # [hd/2]
  freqs = position_ids.astype(jnp.float32)[..., None] * inv_freq                       # [3, B, L, hd/2]
  band = np.concatenate([np.full(n, i % 3) for i, n in enumerate(cfg.mrope_section)])   # which axis per freq
  freqs = jnp.moveaxis(freqs[band, :, :, np.arange(hd // 2)], 0, -1)                   # [B, L, hd/2]
  emb = jnp.concatenate([freqs, freqs], axis=-1)
  return jnp.cos(emb), jnp.sin(emb)


class TextAttention(nnx.Module):
  def __init__(self, cfg: TextConfig, dtype, param_dtype, rngs: nnx.Rngs):
    h, hd = cfg.hidden_size, cfg.head_dim
    self.num_heads, self.num_kv, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, hd
    kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
    self.q_proj = Linear(h, self.num_heads * hd, ("embed", "heads"), bias=True, **kw)
    self.k_proj = Linear(h, self.num_kv * hd, ("embed", "kv_heads"), bias=True, **kw)
    self.v_proj = Linear(h, self.num_kv * hd, ("embed", "kv_heads"), bias=True, **kw)
    self.o_proj = Linear(self.num_heads * hd, h, ("heads", "embed"), bias=False, **kw)

  def __call__(self, x, cos, sin, mask, kv_cache=None, index=None):
    """x [B, L, H]; cos/sin [B, L, hd]; mask [B, L, S] bool; kv_cache (k, v) [B, S, KV, hd] or None.
    Returns (out [B, L, H], (k, v) updated cache or None)."""
    b, l, _ = x.shape
    q = self.q_proj(x).reshape(b, l, self.num_heads, self.head_dim)
    k = self.k_proj(x).reshape(b, l, self.num_kv, self.head_dim)
    v = self.v_proj(x).reshape(b, l, self.num_kv, self.head_dim)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    new_cache = None
    if kv_cache is not None:
      ck, cv = kv_cache
      ck = jax.lax.dynamic_update_slice(ck, k.astype(ck.dtype), (0, index, 0, 0))
      cv = jax.lax.dynamic_update_slice(cv, v.astype(cv.dtype), (0, index, 0, 0))
      new_cache = (ck, cv)
      k, v = ck.astype(q.dtype), cv.astype(q.dtype)
    out = masked_attention(q, k, v, mask, self.head_dim ** -0.5)
    return self.o_proj(out.reshape(b, l, -1)), new_cache


class TextMLP(nnx.Module):
  def __init__(self, cfg: TextConfig, dtype, param_dtype, rngs: nnx.Rngs):
    kw = dict(bias=False, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
    self.gate_proj = Linear(cfg.hidden_size, cfg.intermediate_size, ("embed", "mlp"), **kw)
    self.up_proj = Linear(cfg.hidden_size, cfg.intermediate_size, ("embed", "mlp"), **kw)
    self.down_proj = Linear(cfg.intermediate_size, cfg.hidden_size, ("mlp", "embed"), **kw)
    if cfg.hidden_act != "silu":
      raise ValueError(f"text hidden_act {cfg.hidden_act!r} unsupported (only 'silu')")

  def __call__(self, x):
    return self.down_proj(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nnx.Module):
  def __init__(self, cfg: TextConfig, dtype, param_dtype, rngs: nnx.Rngs):
    kw = dict(dtype=dtype, param_dtype=param_dtype)
    self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "embed", **kw)
    self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "embed", **kw)
    self.self_attn = TextAttention(cfg, dtype, param_dtype, rngs)
    self.mlp = TextMLP(cfg, dtype, param_dtype, rngs)

  def __call__(self, x, cos, sin, mask, kv_cache=None, index=None):
    a, new_cache = self.self_attn(self.input_layernorm(x), cos, sin, mask, kv_cache, index)
    x = x + a
    return x + self.mlp(self.post_attention_layernorm(x)), new_cache


class TextModel(nnx.Module):
  """Token embedding, decoder layers, final norm (the LM head lives in the top-level model)."""

  def __init__(self, cfg: TextConfig, dtype, param_dtype, rngs: nnx.Rngs, remat: bool = False):
    self.cfg = cfg
    self.dtype = dtype
    self.remat = remat
    self.embed_tokens = make_param(rngs, (cfg.vocab_size, cfg.hidden_size), ("vocab", "embed"), param_dtype)
    self.layers = nnx.List([DecoderLayer(cfg, dtype, param_dtype, rngs) for _ in range(cfg.num_hidden_layers)])
    self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "embed", dtype=dtype, param_dtype=param_dtype)

  def embed(self, input_ids: jax.Array) -> jax.Array:
    """input_ids [B, L] -> [B, L, H]."""
    return jnp.take(self.embed_tokens[...], input_ids, axis=0).astype(self.dtype)

  def __call__(self, embeds, position_ids, attention_mask, cache: KVCache | None = None,
               output_hidden_states: bool = False):
    """embeds [B, L, H]; position_ids [3, B, L]; attention_mask [B, L] bool (False = padding).

    Returns (final-normed hidden [B, L, H], hidden_states tuple or None, updated cache or None).
    hidden_states = (embeds, output of layer 0, ..., output of layer n-1) before the final norm.
    """
    b, l, _ = embeds.shape
    cos, sin = mrope_cos_sin(position_ids, self.cfg)
    if cache is None:
      causal = jnp.tril(jnp.ones((l, l), bool))
      mask = causal[None] & attention_mask[:, None, :]
      index = None
    else:
      index = cache.index
      valid = jax.lax.dynamic_update_slice(cache.valid, attention_mask, (0, index))
      q_pos = index + jnp.arange(l)
      mask = (jnp.arange(cache.max_len)[None, :] <= q_pos[:, None])[None] & valid[:, None, :]
    x = embeds
    hidden = [x] if output_hidden_states else None
    new_k, new_v = [], []
    for i, layer in enumerate(self.layers):
      kv = (cache.k[i], cache.v[i]) if cache is not None else None
      if self.remat:  # recompute the layer's activations in the backward pass (saves memory in training)
        x, upd = nnx.remat(lambda lyr, *a: lyr(*a))(layer, x, cos, sin, mask, kv, index)
      else:
        x, upd = layer(x, cos, sin, mask, kv, index)
      if cache is not None:
        new_k.append(upd[0])
        new_v.append(upd[1])
      if output_hidden_states:
        hidden.append(x)
    new_cache = None
    if cache is not None:
      last = jnp.max(jnp.where(attention_mask, position_ids.max(axis=0), -1), axis=1)
      next_pos = jnp.where(jnp.any(attention_mask, axis=1), jnp.maximum(cache.next_position, last + 1),
                           cache.next_position)
      new_cache = KVCache(k=tuple(new_k), v=tuple(new_v), valid=valid, index=index + l, next_position=next_pos)
    return self.norm(x), (tuple(hidden) if output_hidden_states else None), new_cache
