"""Qwen2.5-VL vision tower (ViT with 2-D RoPE, window attention, 2x2 patch merger).

Inputs follow the Qwen2-VL image processor: `pixel_values` [N, C*T*P*P] holds every patch of every image
(images concatenated), each image's patches ordered block-major over spatial_merge x spatial_merge blocks;
`grid_thw` [num_images, 3] gives (t, h, w) in patches. Output: [N / merge**2, out_hidden] image features in the
same (processor) order, i.e. one row per <|image_pad|> token.

Everything that depends on `grid_thw` (window permutation, attention segments, rotary positions) is computed on
the host by `vision_layout(grid_thw, cfg)` into a `VisionLayout` of plain int arrays, so the jitted tower only
sees static shapes (N, number of windows W). Windowed blocks attend inside fixed-size window blocks
([W, S, S] scores, S = 64 patches for the real config); full-attention blocks use block-diagonal masks from
per-frame segment ids, computed in query chunks ([chunk, N] scores).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.qwen2_5_vl.config import VisionConfig
from gui_jax.models.qwen2_5_vl.layers import Linear, RMSNorm, apply_rope, masked_attention

_PAD_SEGMENT = -1  # segment id of padding patches (they attend only among themselves)
FULL_ATTN_CHUNK = 2048  # queries per chunk in full-attention blocks: bounds scores to [heads, chunk, N]


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class VisionLayout:
  """Host-computed index arrays for one batch of images (N patches, U = merge**2 patches per merged token).

  window_index [N/U] int32: window-ordered slot -> original merged-unit index.
  reverse_index [N/U] int32: inverse permutation (original unit -> window-ordered slot).
  rot_pos [N, 2] int32: (row, col) patch coordinates in original order, for the 2-D RoPE.
  window_segments [N] int32: attention segment per patch in window order for windowed blocks.
  full_segments [N] int32: attention segment per patch in window order for full blocks (one per image frame).
  window_gather [W, S] int32: patch (window order) in slot s of window w, S = (window side in patches)**2.
  window_valid [W, S] bool: slot holds a patch (windows at image borders are smaller).
  window_slot [N] int32: flat slot w * S + s of each patch (inverse of window_gather).
  """
  window_index: jax.Array
  reverse_index: jax.Array
  rot_pos: jax.Array
  window_segments: jax.Array
  full_segments: jax.Array
  window_gather: jax.Array
  window_valid: jax.Array
  window_slot: jax.Array


def vision_layout(grid_thw, cfg: VisionConfig, pad_patches_to: int | None = None) -> VisionLayout:
  """Builds the VisionLayout (numpy) for `grid_thw` [num_images, 3]; optionally pads N up to `pad_patches_to`
  (a multiple of merge**2) so that batches with different image sizes share one compiled shape."""
  grid = np.asarray(grid_thw, dtype=np.int64).reshape(-1, 3)
  m = cfg.spatial_merge_size
  unit = m * m
  ws = cfg.window_size // m // cfg.patch_size  # window side in merged units
  if ws < 1:
    raise ValueError(f"window_size {cfg.window_size} smaller than patch*merge {cfg.patch_size * m}")
  rot, win_idx, win_seg_units, full_seg_units = [], [], [], []
  unit_offset, n_windows, n_frames = 0, 0, 0
  for img, (t, h, w) in enumerate(grid.tolist()):
    if h % m or w % m or t < 1:
      raise ValueError(f"image {img}: grid_thw {(t, h, w)} not divisible by spatial_merge_size {m}")
    lh, lw = h // m, w // m
    # Patch (row, col) in block-major processor order: (lh, lw, m, m) blocks.
    rows = np.arange(h).reshape(lh, m, 1, 1).repeat(lw, 2).repeat(m, 3).transpose(0, 2, 1, 3).reshape(-1)
    cols = np.arange(w).reshape(1, 1, lw, m).repeat(lh, 0).repeat(m, 1).transpose(0, 2, 1, 3).reshape(-1)
    rot.append(np.tile(np.stack([rows, cols], -1), (t, 1)))
    units = np.arange(t * lh * lw).reshape(t, lh, lw)
    nwh, nww = -(-lh // ws), -(-lw // ws)
    for f in range(t):
      for wy in range(nwh):
        for wx in range(nww):
          block = units[f, wy * ws:(wy + 1) * ws, wx * ws:(wx + 1) * ws].reshape(-1)
          win_idx.append(block + unit_offset)
          win_seg_units.append(np.full(block.size, n_windows))
          n_windows += 1
    full_seg_units.append(np.repeat(np.arange(t) + n_frames, lh * lw))
    n_frames += t
    unit_offset += t * lh * lw
  window_index = np.concatenate(win_idx).astype(np.int32)
  win_seg = np.concatenate(win_seg_units)
  full_seg_orig = np.concatenate(full_seg_units)  # per original unit
  full_seg = full_seg_orig[window_index]          # in window order
  rot_pos = np.concatenate(rot).astype(np.int32)
  n_units = window_index.size
  if pad_patches_to is not None:
    if pad_patches_to % unit or pad_patches_to < n_units * unit:
      raise ValueError(f"pad_patches_to {pad_patches_to} must be a multiple of {unit} and >= {n_units * unit}")
    extra = pad_patches_to // unit - n_units
    window_index = np.concatenate([window_index, np.arange(n_units, n_units + extra, dtype=np.int32)])
    win_seg = np.concatenate([win_seg, np.full(extra, _PAD_SEGMENT)])
    full_seg = np.concatenate([full_seg, np.full(extra, _PAD_SEGMENT)])
    rot_pos = np.concatenate([rot_pos, np.zeros((extra * unit, 2), np.int32)])
  reverse_index = np.argsort(window_index).astype(np.int32)
  window_segments = np.repeat(win_seg, unit).astype(np.int32)
  gather, valid, slot = _window_blocks(window_segments, (ws * m) ** 2)
  return VisionLayout(window_index=window_index, reverse_index=reverse_index, rot_pos=rot_pos,
                      window_segments=window_segments, full_segments=np.repeat(full_seg, unit).astype(np.int32),
                      window_gather=gather, window_valid=valid, window_slot=slot)


def _window_blocks(segments: np.ndarray, size: int):
  """Splits the contiguous runs of `segments` into blocks of at most `size` patches.
  Returns gather [W, size], valid [W, size], slot [N] (see VisionLayout)."""
  n = segments.size
  starts = np.concatenate([[0], np.flatnonzero(np.diff(segments)) + 1])
  ends = np.concatenate([starts[1:], [n]])
  blocks = [(c, min(c + size, e)) for s, e in zip(starts, ends) for c in range(s, e, size)]
  gather = np.zeros((len(blocks), size), np.int32)
  valid = np.zeros((len(blocks), size), bool)
  slot = np.zeros((n,), np.int32)
  for w, (s, e) in enumerate(blocks):
    gather[w, :e - s] = np.arange(s, e)
    valid[w, :e - s] = True
    slot[s:e] = w * size + np.arange(e - s)
  return gather, valid, slot


class VisionMLP(nnx.Module):
  """Gated MLP with biases: down(act(gate(x)) * up(x))."""

  def __init__(self, cfg: VisionConfig, dtype, param_dtype, rngs: nnx.Rngs):
    d, i = cfg.hidden_size, cfg.intermediate_size
    kw = dict(bias=True, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
    self.gate_proj = Linear(d, i, ("vision_embed", "vision_mlp"), **kw)
    self.up_proj = Linear(d, i, ("vision_embed", "vision_mlp"), **kw)
    self.down_proj = Linear(i, d, ("vision_mlp", "vision_embed"), **kw)
    if cfg.hidden_act != "silu":
      raise ValueError(f"vision hidden_act {cfg.hidden_act!r} unsupported (only 'silu')")

  def __call__(self, x):
    return self.down_proj(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x))


class VisionAttention(nnx.Module):
  def __init__(self, cfg: VisionConfig, dtype, param_dtype, rngs: nnx.Rngs):
    d = cfg.hidden_size
    self.num_heads, self.head_dim = cfg.num_heads, cfg.head_dim
    self.qkv = Linear(d, 3 * d, ("vision_embed", "vision_qkv"), bias=True, dtype=dtype,
                      param_dtype=param_dtype, rngs=rngs)
    self.proj = Linear(d, d, ("vision_heads", "vision_embed"), bias=True, dtype=dtype,
                       param_dtype=param_dtype, rngs=rngs)

  def __call__(self, x, cos, sin, layout: VisionLayout, windowed: bool):
    """x [N, D] (window order); cos/sin [N, head_dim] -> [N, D].

    windowed: attention inside each window, computed per window block ([W, S, S] scores). Otherwise attention
    inside each image frame (full_segments), computed in query chunks of FULL_ATTN_CHUNK ([chunk, N] scores)."""
    n = x.shape[0]
    q, k, v = jnp.moveaxis(self.qkv(x).reshape(n, 3, self.num_heads, self.head_dim), 1, 0)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    scale = self.head_dim ** -0.5
    if windowed:
      g, ok = layout.window_gather, layout.window_valid
      mask = ok[:, :, None] & ok[:, None, :]
      out = masked_attention(q[g], k[g], v[g], mask, scale)  # [W, S, H, hd]
      out = out.reshape(-1, self.num_heads, self.head_dim)[layout.window_slot]
    else:
      seg = layout.full_segments
      chunks = []
      for c in range(0, n, FULL_ATTN_CHUNK):
        sl = slice(c, min(c + FULL_ATTN_CHUNK, n))
        mask = seg[sl, None] == seg[None, :]
        chunks.append(masked_attention(q[None, sl], k[None], v[None], mask[None], scale)[0])
      out = jnp.concatenate(chunks, axis=0) if len(chunks) > 1 else chunks[0]
    return self.proj(out.reshape(n, -1))


class VisionBlock(nnx.Module):
  def __init__(self, cfg: VisionConfig, dtype, param_dtype, rngs: nnx.Rngs):
    self.norm1 = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "vision_embed", dtype=dtype, param_dtype=param_dtype)
    self.norm2 = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "vision_embed", dtype=dtype, param_dtype=param_dtype)
    self.attn = VisionAttention(cfg, dtype, param_dtype, rngs)
    self.mlp = VisionMLP(cfg, dtype, param_dtype, rngs)

  def __call__(self, x, cos, sin, layout: VisionLayout, windowed: bool):
    x = x + self.attn(self.norm1(x), cos, sin, layout, windowed)
    return x + self.mlp(self.norm2(x))


class PatchMerger(nnx.Module):
  """RMSNorm, concatenate each merge x merge block of patches, then Linear-GELU-Linear to out_hidden."""

  def __init__(self, cfg: VisionConfig, dtype, param_dtype, rngs: nnx.Rngs):
    d = cfg.hidden_size * cfg.spatial_merge_size ** 2
    self.ln_q = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "vision_embed", dtype=dtype, param_dtype=param_dtype)
    kw = dict(bias=True, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
    self.mlp_in = Linear(d, d, ("vision_merge", "vision_mlp"), **kw)
    self.mlp_out = Linear(d, cfg.out_hidden_size, ("vision_mlp", "embed"), **kw)
    self.merged_dim = d

  def __call__(self, x):
    x = self.ln_q(x).reshape(-1, self.merged_dim)
    return self.mlp_out(jax.nn.gelu(self.mlp_in(x), approximate=False))


class VisionTower(nnx.Module):
  """pixel_values [N, C*T*P*P] + VisionLayout -> image features [N / merge**2, out_hidden]."""

  def __init__(self, cfg: VisionConfig, dtype, param_dtype, rngs: nnx.Rngs, remat: bool = False):
    self.cfg = cfg
    self.dtype = dtype
    self.remat = remat
    self.patch_embed = Linear(cfg.patch_dim, cfg.hidden_size, ("vision_patch", "vision_embed"), bias=False,
                              dtype=dtype, param_dtype=param_dtype, rngs=rngs)
    self.blocks = nnx.List([VisionBlock(cfg, dtype, param_dtype, rngs) for _ in range(cfg.depth)])
    self.merger = PatchMerger(cfg, dtype, param_dtype, rngs)

  def rotary(self, rot_pos: jax.Array) -> tuple[jax.Array, jax.Array]:
    """rot_pos [N, 2] -> cos, sin [N, head_dim]: first half rotates by row, second half by column."""
    quarter = self.cfg.head_dim // 2
    inv_freq = 1.0 / (self.cfg.rope_theta ** (jnp.arange(0, quarter, 2, dtype=jnp.float32) / quarter))
    freqs = rot_pos.astype(jnp.float32)[:, :, None] * inv_freq  # [N, 2, head_dim/4]
    emb = freqs.reshape(freqs.shape[0], -1)                      # [N, head_dim/2] = [rows | cols]
    emb = jnp.concatenate([emb, emb], axis=-1)
    return jnp.cos(emb), jnp.sin(emb)

  def __call__(self, pixel_values: jax.Array, layout: VisionLayout) -> jax.Array:
    unit = self.cfg.spatial_merge_size ** 2
    x = self.patch_embed(pixel_values.astype(self.dtype))
    n = x.shape[0]
    if layout.window_segments.shape[0] != n:
      raise ValueError(f"pixel_values has {n} patches but the vision layout covers "
                       f"{layout.window_segments.shape[0]} (pad pixel_values or rebuild the layout)")

    def to_window_order(a):
      return a.reshape(n // unit, unit, -1)[layout.window_index].reshape(n, -1)

    x = to_window_order(x)
    cos, sin = self.rotary(jnp.asarray(layout.rot_pos))
    cos, sin = to_window_order(cos), to_window_order(sin)
    full_blocks = set(self.cfg.fullatt_block_indexes)
    for i, block in enumerate(self.blocks):
      if self.remat:
        x = nnx.remat(lambda blk, *a: blk(*a, windowed=i not in full_blocks))(block, x, cos, sin, layout)
      else:
        x = block(x, cos, sin, layout, windowed=i not in full_blocks)
    merged = self.merger(x)  # [N/U, out] in window order
    return merged[layout.reverse_index]
