"""Qwen2.5-VL for conditional generation, in Flax NNX.

API
---
  cfg = preset("tiny")                        # or Qwen25VLConfig.from_hf_dict(json), see config.py
  model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0), remat=None)  # None: cfg.remat_policy
  model, cfg = hf_io.load_hf_checkpoint(path) # a HF directory (config.json + safetensors); remat=, scan_layers=,
                                              #   attention_impl= too
  model.set_remat(True)                       # activation rematerialisation (True = 'full', or a policy name)

  Config runtime options: cfg.attention_impl ('auto' | 'xla' | 'splash' | 'cudnn', gui_jax/models/attention.py),
  cfg.scan_layers (decoder layers and vision blocks stacked on a leading 'layers' axis and run by lax.scan),
  cfg.remat_policy ('none' | 'full' | 'dots_saveable' | 'dots_with_no_batch_dims_saveable' | ...).

  out = model(input_ids,                      # [B, L] int32; images as runs of cfg.image_token_id
              attention_mask=None,            # [B, L] bool/int, 0 = padding (left or right); default all ones
              segment_ids=None,               # [B, L] int32 packed rows: tokens attend (causally) only within
                                              #   their segment id; 0 = padding. None = attention_mask as 0/1.
                                              #   Each packed sequence needs its own position_ids (restarting at
                                              #   its start: get_rope_index per sequence, concatenated); without
                                              #   images and position_ids, text positions restart per segment.
              pixel_values=None,              # [N, C*T*P*P] patches of all images (processor layout), or
                                              #   [B, N, C*T*P*P] per row with grouped_vision_layout
                                              #   (vision.py: keeps sharded training split by rows)
              image_grid_thw=None,            # [num_images, 3] concrete numpy (host); or pass vision_layout
              position_ids=None,              # [3, B, L] M-RoPE ids; default: get_rope_index on host when
                                              #   image_grid_thw is concrete, else text positions
                                              #   (cumsum(mask)-1, or cache.next_position + arange with a cache)
              cache=None,                     # KVCache (text.py) for prefill / decode
              vision_layout=None,             # VisionLayout from vision_layout(grid, cfg.vision) (jit-friendly)
              image_features=None,            # [N/4, H] precomputed vision output (skips the tower)
              output_hidden_states=False,
              compute_logits=True)
  out.logits [B, L, V] (None if compute_logits=False); out.last_hidden_state [B, L, H] (after final norm);
  out.hidden_states: (embeddings, layer 0 out, ..., layer n-1 out) or None; out.cache: updated KVCache or None.

Jitted prefill / decode (what the sampler does):
  cache = model.init_cache(batch, max_len)                      # static shapes, dtype = cfg.dtype
  layout = vision_layout(grid_thw, cfg.vision)                  # host; pass as an argument to jit
  pos, _ = get_rope_index(ids, grid_thw, mask, cfg)             # host
  out = prefill(model, ids, mask, pixel_values, layout, pos, cache)   # model(..., cache=cache)
  then per step: model(next_ids[:, None], attention_mask=ones[B,1], cache=out.cache)
  (position_ids default to cache.next_position, so M-RoPE deltas are handled; logits of step = out.logits[:, -1]).
  Cache slots are shared across the batch: a left-padded prompt keeps its pad slots masked (cache.valid).

Logical axis names (Param metadata `out_sharding`; `logical_axes(model)` lists them by path):
  text:   'vocab', 'embed' (hidden), 'heads' (q / o heads*head_dim), 'kv_heads' (k / v heads*head_dim), 'mlp'
  vision: 'vision_patch' (C*T*P*P), 'vision_embed', 'vision_qkv' (3*hidden), 'vision_heads', 'vision_mlp',
          'vision_merge' (hidden*merge**2); the merger output axis is 'embed'.
  scan_layers: every param of the stacked decoder layers / vision blocks gets a leading 'layers' axis
          (e.g. ('layers', 'embed', 'kv_heads')); the sharding rules map 'layers' to no mesh axis.

Packed rows give each sequence exactly the logits it gets alone (tests/models/test_scan.py, test_attention.py).
KV cache with scan_layers: one stacked array per k / v ([layers, B, KV, S, hd]); without: a tuple of per-layer arrays.

Known gaps: no video inputs; no sliding-window text attention (unused by Qwen2.5-VL); the KV-cache path (prefill
and decode) uses the XLA attention with an explicit mask, not the kernels.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.qwen2_5_vl.config import Qwen25VLConfig
from gui_jax.models.qwen2_5_vl.layers import dense, dtype_of, make_param
from gui_jax.models.qwen2_5_vl.text import _policy_name
from gui_jax.models.qwen2_5_vl.rope_index import get_rope_index
from gui_jax.models.qwen2_5_vl.text import KVCache, TextModel
from gui_jax.models.qwen2_5_vl.vision import VisionLayout, VisionTower
from gui_jax.models.qwen2_5_vl.vision import vision_layout as build_vision_layout


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Qwen25VLOutput:
  logits: jax.Array | None
  last_hidden_state: jax.Array
  hidden_states: tuple[jax.Array, ...] | None
  cache: KVCache | None


def _is_concrete(x) -> bool:
  return x is not None and not isinstance(x, jax.core.Tracer)


def splice_image_features(embeds: jax.Array, input_ids: jax.Array, features: jax.Array,
                          image_token_id: int) -> jax.Array:
  """embeds [B, L, H]; features [M, H] -> embeds with the k-th image token (row-major) replaced by features[k].
  Per-row features [B, M, H] (a grouped vision layout): row b's k-th image token takes features[b, k], a batched
  gather that stays split over the batch axes. Extra trailing feature rows (padding patches) are ignored."""
  b, l, h = embeds.shape
  if features.ndim == 3:
    if features.shape[0] != b:
      raise ValueError(f"per-row image features {features.shape} need one group per row ({b} rows)")
    is_img = input_ids == image_token_id
    idx = jnp.clip(jnp.cumsum(is_img, axis=1) - 1, 0, features.shape[1] - 1)
    gathered = jax.vmap(lambda f, i: f[i])(features.astype(embeds.dtype), idx)
    return jnp.where(is_img[..., None], gathered, embeds)
  is_image = (input_ids == image_token_id).reshape(-1)
  idx = jnp.clip(jnp.cumsum(is_image) - 1, 0, features.shape[0] - 1)
  gathered = features.astype(embeds.dtype)[idx]
  return jnp.where(is_image[:, None], gathered, embeds.reshape(-1, h)).reshape(b, l, h)


def segment_positions(segment_ids: jax.Array, mask: jax.Array) -> jax.Array:
  """[B, L] segment ids (contiguous runs), [B, L] bool -> [B, L] int32 text positions restarting at 0 at each
  segment's first valid token (0 at padding)."""
  valid = mask & (segment_ids != 0)
  count = jnp.cumsum(valid.astype(jnp.int32), axis=1)
  new = jnp.concatenate([jnp.ones_like(segment_ids[:, :1], bool), segment_ids[:, 1:] != segment_ids[:, :-1]], 1)
  # count of valid tokens before each segment start, carried forward over the segment
  base = jax.lax.cummax(jnp.where(new, count - valid.astype(jnp.int32), 0), axis=1)
  return jnp.where(valid, count - base - 1, 0).astype(jnp.int32)


class Qwen25VLForConditionalGeneration(nnx.Module):
  """Vision tower + Qwen2 decoder + LM head (tied to the embedding when cfg.tie_word_embeddings)."""

  def __init__(self, cfg: Qwen25VLConfig, *, rngs: nnx.Rngs, remat: bool | str | None = None):
    """remat: rematerialise each vision block / decoder layer in the backward pass (training memory): False,
    True ('full') or a remat policy name; None = cfg.remat_policy."""
    self.cfg = cfg
    dtype, pdtype = dtype_of(cfg.dtype), dtype_of(cfg.param_dtype)
    policy = cfg.remat_policy if remat is None else _policy_name(remat)
    kw = dict(scan_layers=cfg.scan_layers, attention_impl=cfg.attention_impl)
    self.visual = VisionTower(cfg.vision, dtype, pdtype, rngs, remat=policy, **kw)
    self.language_model = TextModel(cfg.text, dtype, pdtype, rngs, remat=policy, **kw)
    self.lm_head = None if cfg.tie_word_embeddings else make_param(
        rngs, (cfg.text.hidden_size, cfg.text.vocab_size), ("embed", "vocab"), pdtype)

  # ---------------------------------------------------------------- helpers
  def set_remat(self, remat: bool | str) -> None:
    """Rematerialise vision blocks and decoder layers in the backward pass (trades compute for memory):
    False / True ('full') / a remat policy name (config.REMAT_POLICIES)."""
    from gui_jax.models.qwen2_5_vl.config import REMAT_POLICIES
    policy = _policy_name(remat)
    if policy not in REMAT_POLICIES:
      raise ValueError(f"remat policy {policy!r} unknown; choose one of {REMAT_POLICIES}")
    self.visual.remat_policy = policy
    self.language_model.remat_policy = policy

  def init_cache(self, batch: int, max_len: int, dtype=None) -> KVCache:
    """Empty static KV cache: k, v [layers, batch, kv_heads, max_len, head_dim] when the layers are scanned, else
    a tuple of per-layer [batch, kv_heads, max_len, head_dim] arrays (updated in place, read without a slice)."""
    return KVCache.init(self.cfg.text, batch, max_len, dtype_of(dtype or self.cfg.dtype),
                        stacked=bool(self.cfg.scan_layers))

  def image_features(self, pixel_values: jax.Array, layout: VisionLayout) -> jax.Array:
    """pixel_values [N, C*T*P*P] -> [N / merge**2, text hidden]."""
    return self.visual(pixel_values, layout)

  def logits_from_hidden(self, hidden: jax.Array) -> jax.Array:
    """hidden [..., H] -> float32 logits [..., V] (compute-dtype inputs, float32 accumulation and output)."""
    dtype = dtype_of(self.cfg.dtype)
    if self.lm_head is None:
      w = self.language_model.embed_tokens[...].astype(dtype)
      return dense(hidden.astype(dtype), w, "...h,vh->...v", preferred_element_type=jnp.float32)
    return dense(hidden.astype(dtype), self.lm_head[...].astype(dtype), preferred_element_type=jnp.float32)

  # ---------------------------------------------------------------- forward
  def __call__(self, input_ids, attention_mask=None, pixel_values=None, image_grid_thw=None, position_ids=None,
               cache: KVCache | None = None, output_hidden_states: bool = False, *,
               segment_ids=None, vision_layout: VisionLayout | None = None,
               image_features=None, compute_logits: bool = True) -> Qwen25VLOutput:
    cfg = self.cfg
    input_ids = jnp.asarray(input_ids)
    b, l = input_ids.shape
    mask = jnp.ones((b, l), bool) if attention_mask is None else jnp.asarray(attention_mask).astype(bool)
    layout = vision_layout
    embeds = self.language_model.embed(input_ids)

    if pixel_values is not None and image_features is None:
      if layout is None:
        if not _is_concrete(image_grid_thw):
          raise ValueError("pixel_values need a concrete image_grid_thw (host numpy) or a vision_layout= "
                           "built with vision_layout(grid_thw, cfg.vision) when called under jit")
        layout = build_vision_layout(np.asarray(image_grid_thw), cfg.vision,
                                       pad_patches_to=pixel_values.shape[0])
      image_features = self.image_features(jnp.asarray(pixel_values), layout)
    if image_features is not None:
      if _is_concrete(input_ids) and not isinstance(image_features, jax.core.Tracer):
        per_row = image_features.ndim == 3
        n_tok = int(np.max(np.sum(np.asarray(input_ids) == cfg.image_token_id, axis=1 if per_row else None)))
        if n_tok > image_features.shape[-2]:
          raise ValueError(f"{n_tok} image-pad tokens (id {cfg.image_token_id}) {'in a row ' if per_row else ''}"
                           f"but only {image_features.shape[-2]} image feature rows")
      embeds = splice_image_features(embeds, input_ids, image_features, cfg.image_token_id)

    if position_ids is None:
      if segment_ids is not None and image_features is not None:
        raise ValueError("segment_ids with images need position_ids: get_rope_index per packed sequence, "
                         "concatenated along the row (positions restart at each sequence)")
      if _is_concrete(image_grid_thw) and _is_concrete(input_ids) and _is_concrete(mask):
        position_ids, _ = get_rope_index(np.asarray(input_ids), np.asarray(image_grid_thw), np.asarray(mask),
                                         cfg)
      elif image_features is not None:
        raise ValueError("inputs with images need M-RoPE position_ids: pass position_ids from "
                         "get_rope_index(input_ids, image_grid_thw, attention_mask, cfg) when calling under jit")
      elif segment_ids is not None and cache is None:
        position_ids = jnp.broadcast_to(segment_positions(jnp.asarray(segment_ids), mask)[None], (3, b, l))
      else:
        steps = jnp.cumsum(mask.astype(jnp.int32), axis=1) - 1
        start = cache.next_position[:, None] if cache is not None else 0
        pos = jnp.where(mask, steps + start, 0)
        position_ids = jnp.broadcast_to(pos[None], (3, b, l))
    position_ids = jnp.asarray(position_ids, jnp.int32)
    if position_ids.shape != (3, b, l):
      raise ValueError(f"position_ids must be [3, {b}, {l}], got {position_ids.shape}")

    if segment_ids is not None:
      segment_ids = jnp.asarray(segment_ids, jnp.int32)
      if segment_ids.shape != (b, l):
        raise ValueError(f"segment_ids must be [{b}, {l}], got {segment_ids.shape}")
    hidden, all_hidden, new_cache = self.language_model(embeds, position_ids, mask, cache, output_hidden_states,
                                                        segment_ids=segment_ids)
    logits = self.logits_from_hidden(hidden) if compute_logits else None
    return Qwen25VLOutput(logits=logits, last_hidden_state=hidden, hidden_states=all_hidden, cache=new_cache)


def logical_axes(model: nnx.Module) -> dict[str, tuple]:
  """'path.to.param' (as in hf_io.param_mapping) -> logical axis names, for every parameter of `model`."""
  out = {}
  for path, var in nnx.to_flat_state(nnx.state(model, nnx.Param)):
    out[".".join(str(p) for p in path)] = var.get_metadata().get("out_sharding")
  return out
