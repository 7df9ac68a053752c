"""Qwen2 text decoder with M-RoPE (3-D positions), segment-id attention and a static, pre-allocated KV cache.

Attention without a cache uses `gui_jax.models.attention.attention` (kernel per platform, `attention_impl`) with
causal masking inside segments: segment_ids [B, L] int32, 0 = padding, 1, 2, ... = sequences packed in a row
(each packed sequence restarts its own positions through position_ids). Default segments: attention_mask as 0/1.

Layers are a list of DecoderLayer (scan_layers=False) or one DecoderLayer whose params carry a leading 'layers'
axis run by lax.scan (scan_layers=True); remat_policy applies per layer in both.

KV cache (`KVCache`, a pytree; build with `KVCache.init` or `Qwen25VLForConditionalGeneration.init_cache`):
  k, v      [num_layers, B, kv_heads, max_len, head_dim] (stacked over layers; slots next to the head dim, so a
            decode step's attention reads them without transposing the cache), or with `stacked=False` a tuple
            of num_layers [B, kv_heads, max_len, head_dim] arrays (what unrolled layers read and write fastest)
  valid     [B, max_len] bool   slot holds a real (non-padding) token
  index     [] int32            number of slots written so far (same for every row)
  next_position [B] int32       M-RoPE position the next text token gets (max position so far + 1)
A call with L new tokens writes them to slots [index, index + L), lets token i attend to slots <= index + i that
are valid, and returns the cache with index += L. Padding inside the new tokens is marked by attention_mask.
The caller keeps index + L <= max_len (dynamic_update_slice would clamp the write, silently). The cached path
uses the XLA attention (explicit [B, L, max_len] mask); segment_ids are not used with a cache.
For sharding, k / v map naturally to logical axes ('layers', 'batch', 'kv_heads', None, None).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.attention import attention, cached_attention
from gui_jax.models.qwen2_5_vl.config import TextConfig
from gui_jax.models.qwen2_5_vl.layers import (Linear, RMSNorm, apply_rope, make_param, remat_policy_fn, scan_stacked,
                                              stack_modules)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class KVCache:
  k: jax.Array
  v: jax.Array
  valid: jax.Array
  index: jax.Array
  next_position: jax.Array

  @classmethod
  def init(cls, cfg: TextConfig, batch: int, max_len: int, dtype=jnp.float32, stacked: bool = True) -> "KVCache":
    """stacked: k, v one [layers, B, KV, S, hd] array each (what a layer scan carries); False: a tuple of
    per-layer [B, KV, S, hd] arrays, which unrolled layers update in place and read without slicing (they split
    a stacked cache, and return per-layer arrays)."""
    shape = (batch, cfg.num_key_value_heads, max_len, cfg.head_dim)
    if stacked:
      k, v = jnp.zeros((cfg.num_hidden_layers,) + shape, dtype), jnp.zeros((cfg.num_hidden_layers,) + shape, dtype)
    else:
      k = tuple(jnp.zeros(shape, dtype) for _ in range(cfg.num_hidden_layers))
      v = tuple(jnp.zeros(shape, dtype) for _ in range(cfg.num_hidden_layers))
    return cls(k=k, v=v,
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
  def __init__(self, cfg: TextConfig, dtype, param_dtype, rngs: nnx.Rngs, attention_impl: str = "auto"):
    h, hd = cfg.hidden_size, cfg.head_dim
    self.num_heads, self.num_kv, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, hd
    self.attention_impl = attention_impl
    kw = dict(dtype=dtype, param_dtype=param_dtype, rngs=rngs)
    self.q_proj = Linear(h, self.num_heads * hd, ("embed", "heads"), bias=True, **kw)
    self.k_proj = Linear(h, self.num_kv * hd, ("embed", "kv_heads"), bias=True, **kw)
    self.v_proj = Linear(h, self.num_kv * hd, ("embed", "kv_heads"), bias=True, **kw)
    self.o_proj = Linear(self.num_heads * hd, h, ("heads", "embed"), bias=False, **kw)

  def __call__(self, x, cos, sin, segment_ids=None, mask=None, kv_cache=None, index=None):
    """x [B, L, H]; cos/sin [B, L, hd]. Without a cache: segment_ids [B, L] int32 (causal within segments).
    With kv_cache (k, v) [B, KV, S, hd]: mask [B, L, S] bool over the cache slots, index = first slot written.
    Returns (out [B, L, H], (k, v) updated cache or None)."""
    b, l, _ = x.shape
    q = self.q_proj(x).reshape(b, l, self.num_heads, self.head_dim)
    k = self.k_proj(x).reshape(b, l, self.num_kv, self.head_dim)
    v = self.v_proj(x).reshape(b, l, self.num_kv, self.head_dim)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    scale = self.head_dim ** -0.5
    if kv_cache is None:
      out = attention(q, k, v, segment_ids, causal=True, scale=scale, impl=self.attention_impl)
      return self.o_proj(out.reshape(b, l, -1)), None
    ck, cv = kv_cache
    k, v = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)  # the new slots only: [B, KV, L, hd]
    ck = jax.lax.dynamic_update_slice(ck, k.astype(ck.dtype), (0, 0, index, 0))
    cv = jax.lax.dynamic_update_slice(cv, v.astype(cv.dtype), (0, 0, index, 0))
    out = cached_attention(q, ck.astype(q.dtype), cv.astype(q.dtype), mask, scale)
    return self.o_proj(out.reshape(b, l, -1)), (ck, cv)


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
  def __init__(self, cfg: TextConfig, dtype, param_dtype, rngs: nnx.Rngs, attention_impl: str = "auto"):
    kw = dict(dtype=dtype, param_dtype=param_dtype)
    self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "embed", **kw)
    self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "embed", **kw)
    self.self_attn = TextAttention(cfg, dtype, param_dtype, rngs, attention_impl)
    self.mlp = TextMLP(cfg, dtype, param_dtype, rngs)

  def __call__(self, x, cos, sin, segment_ids=None, mask=None, kv_cache=None, index=None):
    a, new_cache = self.self_attn(self.input_layernorm(x), cos, sin, segment_ids, mask, kv_cache, index)
    x = x + a
    return x + self.mlp(self.post_attention_layernorm(x)), new_cache


class TextModel(nnx.Module):
  """Token embedding, decoder layers, final norm (the LM head lives in the top-level model)."""

  def __init__(self, cfg: TextConfig, dtype, param_dtype, rngs: nnx.Rngs, remat: bool | str = False, *,
               scan_layers: bool = False, attention_impl: str = "auto"):
    """remat: False/'none', True/'full', or a REMAT_POLICIES name (per layer)."""
    self.cfg = cfg
    self.dtype = dtype
    self.remat_policy = _policy_name(remat)
    self.scan_layers = scan_layers
    self.embed_tokens = make_param(rngs, (cfg.vocab_size, cfg.hidden_size), ("vocab", "embed"), param_dtype)
    layers = [DecoderLayer(cfg, dtype, param_dtype, rngs, attention_impl) for _ in range(cfg.num_hidden_layers)]
    self.layers = stack_modules(layers) if scan_layers else nnx.List(layers)
    self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "embed", dtype=dtype, param_dtype=param_dtype)

  @property
  def remat(self) -> bool:
    return self.remat_policy != "none"

  def embed(self, input_ids: jax.Array) -> jax.Array:
    """input_ids [B, L] -> [B, L, H]."""
    return jnp.take(self.embed_tokens[...], input_ids, axis=0).astype(self.dtype)

  def __call__(self, embeds, position_ids, attention_mask, cache: KVCache | None = None,
               output_hidden_states: bool = False, segment_ids=None):
    """embeds [B, L, H]; position_ids [3, B, L]; attention_mask [B, L] bool (False = padding);
    segment_ids [B, L] int32 or None (= attention_mask as 0/1; ignored with a cache).

    Returns (final-normed hidden [B, L, H], hidden_states tuple or None, updated cache or None).
    hidden_states = (embeds, output of layer 0, ..., output of layer n-1) before the final norm.
    """
    b, l, _ = embeds.shape
    cos, sin = mrope_cos_sin(position_ids, self.cfg)
    mask, index = None, None
    if cache is None:
      if segment_ids is None:
        segment_ids = attention_mask.astype(jnp.int32)
      segment_ids = jnp.where(attention_mask, segment_ids, 0).astype(jnp.int32)
    else:
      segment_ids = None
      index = cache.index
      valid = jax.lax.dynamic_update_slice(cache.valid, attention_mask, (0, index))
      q_pos = index + jnp.arange(l)
      mask = (jnp.arange(cache.max_len)[None, :] <= q_pos[:, None])[None] & valid[:, None, :]
    kv = (cache.k, cache.v) if cache is not None else None
    if self.scan_layers:
      def body(layer, x, layer_kv):
        x, upd = layer(x, cos, sin, segment_ids, mask, layer_kv, index)
        return x, (upd, x if output_hidden_states else None)
      x, (new_kv, per_layer) = scan_stacked(body, self.layers, embeds, kv, self.remat_policy)
      hidden = ((embeds,) + tuple(per_layer[i] for i in range(per_layer.shape[0]))
                if output_hidden_states else None)
    else:
      x = embeds
      hidden = [x]
      new_k, new_v = [], []
      for i, layer in enumerate(self.layers):
        # each layer its own cache arrays (a stacked cache is split; the result is per-layer either way)
        layer_kv = (kv[0][i], kv[1][i]) if kv is not None else None
        if self.remat:  # recompute the layer's activations in the backward pass (saves memory in training)
          run = nnx.remat(lambda lyr, *a: lyr(*a), policy=remat_policy_fn(self.remat_policy))
          x, upd = run(layer, x, cos, sin, segment_ids, mask, layer_kv, index)
        else:
          x, upd = layer(x, cos, sin, segment_ids, mask, layer_kv, index)
        if upd is not None:
          new_k.append(upd[0])
          new_v.append(upd[1])
        hidden.append(x)
      new_kv = (tuple(new_k), tuple(new_v)) if kv is not None else None
      hidden = tuple(hidden) if output_hidden_states else None
    new_cache = None
    if cache is not None:
      last = jnp.max(jnp.where(attention_mask, position_ids.max(axis=0), -1), axis=1)
      next_pos = jnp.where(jnp.any(attention_mask, axis=1), jnp.maximum(cache.next_position, last + 1),
                           cache.next_position)
      new_cache = KVCache(k=new_kv[0], v=new_kv[1], valid=valid, index=index + l, next_position=next_pos)
    return self.norm(x), hidden, new_cache


def _policy_name(remat: bool | str) -> str:
  if remat is True:
    return "full"
  if remat is False or remat is None:
    return "none"
  return str(remat)
