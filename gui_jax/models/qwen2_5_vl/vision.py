"""Qwen2.5-VL vision tower (ViT with 2-D RoPE, window attention, 2x2 patch merger).

Inputs follow the Qwen2-VL image processor: `pixel_values` [N, C*T*P*P] holds every patch of every image
(images concatenated), each image's patches ordered block-major over spatial_merge x spatial_merge blocks;
`grid_thw` [num_images, 3] gives (t, h, w) in patches. Output: [N / merge**2, out_hidden] image features in the
same (processor) order, i.e. one row per <|image_pad|> token.

Everything that depends on `grid_thw` (window permutation, attention segments, rotary positions) is computed on
the host by `vision_layout(grid_thw, cfg)` into a `VisionLayout` of plain int arrays, so the jitted tower only
sees static shapes. Both attention kinds run on patches gathered into padded blocks, [blocks, block_len, dim]:
windowed blocks attend inside windows ([W, S, S] scores, S = 64 patches for the real config, XLA); full-attention
blocks attend inside each image frame ([F, P, P], P >= the largest frame's patch count; the model's
attention_impl kernel with segment ids = slot validity), so the cost is per image, not quadratic in the batch.
With `bucket=True` (the default when pad_patches_to is given) W, F and P are rounded up to buckets, so batches
with different image counts (same padded patch count and frame-size bucket) mostly share one compiled program.

Per-row images (`grouped_vision_layout`): pixel_values [G, N, D] with a VisionLayout whose arrays carry the same
leading group axis G (one group = one batch row's images, padded to a common N and common block counts). Every
gather is then batched over G, so under a mesh the tower's activations, gathers and their gradients stay split
over the batch axes with the rows; the flat form [N, D] gathers across all images and makes XLA replicate them
(tens of GiB per chip at 7B screenshot sizes). Output [G, N / merge**2, out_hidden].

Blocks are a list (scan_layers=False) or one stacked VisionBlock (leading 'layers' axis) run by lax.scan over
runs of same-kind blocks (a reshape to [groups, period] when full-attention blocks are periodic, as in the real
configs: blocks 7, 15, 23, 31).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.attention import attention
from gui_jax.models.qwen2_5_vl.config import VisionConfig
from gui_jax.models.qwen2_5_vl.layers import Linear, RMSNorm, apply_rope, remat_policy_fn, stack_modules
from gui_jax.models.sharding import constrain

_PAD_SEGMENT = -1  # segment id of padding patches (they attend only among themselves)


def bucket_up(n: int, pow2: bool = False) -> int:
  """Smallest bucket >= n: powers of two (pow2) or 4 per octave (4, 5, 6, 7 x 2^k; <= 25% waste)."""
  n = max(int(n), 1)
  k = 0
  while True:
    for f in ((1,) if pow2 else (4, 5, 6, 7)):
      b = f * 2 ** k if pow2 else -(-f * 2 ** k // 4)
      if b >= n:
        return b
    k += 1


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
  full_gather [F, P] int32, full_valid [F, P] bool, full_slot [N] int32: the same for full-attention blocks
    (one block per image frame; padding patches form blocks of their own).
  """
  window_index: jax.Array
  reverse_index: jax.Array
  rot_pos: jax.Array
  window_segments: jax.Array
  full_segments: jax.Array
  window_gather: jax.Array
  window_valid: jax.Array
  window_slot: jax.Array
  full_gather: jax.Array
  full_valid: jax.Array
  full_slot: jax.Array


def vision_layout(grid_thw, cfg: VisionConfig, pad_patches_to: int | None = None,
                  bucket: bool | None = None, *, window_blocks: int | None = None,
                  frame_blocks: int | None = None, frame_len: int | None = None) -> VisionLayout:
  """Builds the VisionLayout (numpy) for `grid_thw` [num_images, 3]; optionally pads N up to `pad_patches_to`
  (a multiple of merge**2) so that batches with different image sizes share one compiled shape.
  bucket (default: pad_patches_to is not None): round the window count W and the frame count F up to powers of
  two and the frame block length P to 4 buckets per octave (empty blocks are all-invalid). Padding patches are
  in no block (their attention output is zero), so W and F count real windows / frames only.
  window_blocks / frame_blocks / frame_len: force W, F and P (>= what the images need; for layouts that must
  share shapes, see grouped_vision_layout). An empty grid gives a layout of padding only."""
  if bucket is None:
    bucket = pad_patches_to is not None
  grid = np.asarray(grid_thw, dtype=np.int64).reshape(-1, 3)
  if grid.shape[0] == 0:
    return _padding_layout(cfg, pad_patches_to or 0, window_blocks, frame_blocks, frame_len)
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
  full_segments = np.repeat(full_seg, unit).astype(np.int32)
  pow2 = (lambda c: bucket_up(c, pow2=True)) if bucket else None
  gather, valid, slot = _window_blocks(window_segments, (ws * m) ** 2, pow2, window_blocks)
  need = max(h * w for _, h, w in grid.tolist())  # patches per frame
  if frame_len is not None and frame_len < need:
    raise ValueError(f"frame_len {frame_len} < the largest frame's {need} patches")
  fgather, fvalid, fslot = _window_blocks(full_segments, frame_len or (bucket_up(need) if bucket else need),
                                          pow2, frame_blocks)
  return VisionLayout(window_index=window_index, reverse_index=reverse_index, rot_pos=rot_pos,
                      window_segments=window_segments, full_segments=full_segments,
                      window_gather=gather, window_valid=valid, window_slot=slot,
                      full_gather=fgather, full_valid=fvalid, full_slot=fslot)


def _window_blocks(segments: np.ndarray, size: int, count_bucket=None, count: int | None = None):
  """Splits the contiguous runs of `segments` into blocks of at most `size` patches; count_bucket(n) rounds the
  block count up, `count` forces it (extra blocks all-invalid). Padding patches (_PAD_SEGMENT) get no block: their
  slot is W * size, one past the end (read as zeros). Returns gather [W, size], valid [W, size], slot [N]."""
  n = segments.size
  starts = np.concatenate([[0], np.flatnonzero(np.diff(segments)) + 1])
  ends = np.concatenate([starts[1:], [n]])
  blocks = [(c, min(c + size, e)) for s, e in zip(starts, ends) if segments[s] != _PAD_SEGMENT
            for c in range(s, e, size)]
  if count is not None and count < len(blocks):
    raise ValueError(f"{len(blocks)} attention blocks of {size} patches do not fit in the forced count {count}")
  count = count if count is not None else (count_bucket(len(blocks)) if count_bucket else len(blocks))
  gather = np.zeros((count, size), np.int32)
  valid = np.zeros((count, size), bool)
  slot = np.full((n,), count * size, np.int32)
  for w, (s, e) in enumerate(blocks):
    gather[w, :e - s] = np.arange(s, e)
    valid[w, :e - s] = True
    slot[s:e] = w * size + np.arange(e - s)
  return gather, valid, slot


def _padding_layout(cfg: VisionConfig, n: int, window_blocks, frame_blocks, frame_len) -> VisionLayout:
  """Layout of n padding patches and no image (a batch row without screenshots in a grouped layout)."""
  unit = cfg.spatial_merge_size ** 2
  if n % unit:
    raise ValueError(f"pad_patches_to {n} must be a multiple of {unit}")
  seg = np.full(n, _PAD_SEGMENT, np.int32)
  win = (cfg.window_size // cfg.patch_size) ** 2
  gather, valid, slot = _window_blocks(seg, win, None, window_blocks or 1)
  fgather, fvalid, fslot = _window_blocks(seg, frame_len or unit, None, frame_blocks or 1)
  idx = np.arange(n // unit, dtype=np.int32)
  return VisionLayout(window_index=idx, reverse_index=idx.copy(), rot_pos=np.zeros((n, 2), np.int32),
                      window_segments=seg, full_segments=seg.copy(), window_gather=gather, window_valid=valid,
                      window_slot=slot, full_gather=fgather, full_valid=fvalid, full_slot=fslot)


def grouped_vision_layout(grids, cfg: VisionConfig, pad_patches_to: int) -> VisionLayout:
  """One layout per group (a batch row's images, `grids[g]` [n_images_g, 3], possibly empty), all padded to
  `pad_patches_to` patches and to common window / frame block counts and frame length (4 buckets per octave), stacked
  on a leading group axis: every array [G, ...]. Use with pixel_values [G, pad_patches_to, D]."""
  grids = [np.asarray(g, np.int64).reshape(-1, 3) for g in grids]
  if not grids:
    raise ValueError("grouped_vision_layout needs at least one group")
  exact = [vision_layout(g, cfg, pad_patches_to, bucket=False) for g in grids if g.shape[0]]
  # counts rounded to 4 buckets per octave (<= 25 % padded blocks), shared by every group
  shapes = dict(window_blocks=bucket_up(max([lay.window_gather.shape[0] for lay in exact], default=1)),
                frame_blocks=bucket_up(max([lay.full_gather.shape[0] for lay in exact], default=1)),
                frame_len=bucket_up(max([lay.full_gather.shape[1] for lay in exact],
                                        default=cfg.spatial_merge_size ** 2)))
  layouts = [vision_layout(g, cfg, pad_patches_to, **shapes) for g in grids]
  return jax.tree.map(lambda *a: np.stack(a), *layouts)


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
  def __init__(self, cfg: VisionConfig, dtype, param_dtype, rngs: nnx.Rngs, attention_impl: str = "auto"):
    d = cfg.hidden_size
    self.num_heads, self.head_dim = cfg.num_heads, cfg.head_dim
    self.attention_impl = attention_impl
    self.qkv = Linear(d, 3 * d, ("vision_embed", "vision_qkv"), bias=True, dtype=dtype,
                      param_dtype=param_dtype, rngs=rngs)
    self.proj = Linear(d, d, ("vision_heads", "vision_embed"), bias=True, dtype=dtype,
                       param_dtype=param_dtype, rngs=rngs)

  def __call__(self, x, cos, sin, layout: VisionLayout, windowed: bool):
    """x [G, N, D] (window order, per group); cos/sin [G, N, head_dim]; layout arrays [G, ...] -> [G, N, D].

    windowed: attention inside each window block ([W, S, S] scores, XLA: the blocks are small). Otherwise inside
    each image frame's block ([F, P, P], the configured attention kernel). Blocks of all groups run as one
    batch of G * blocks."""
    grp, n = x.shape[:2]
    q, k, v = jnp.moveaxis(self.qkv(x).reshape(grp, n, 3, self.num_heads, self.head_dim), 2, 0)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    if windowed:
      g, ok, slot, impl = layout.window_gather, layout.window_valid, layout.window_slot, "xla"
    else:
      g, ok, slot, impl = layout.full_gather, layout.full_valid, layout.full_slot, self.attention_impl
    blocks = jax.vmap(lambda a, i: a[i])  # per group: [N, H, hd][W, S] -> [W, S, H, hd]

    def flat(a):
      return blocks(a, g).reshape(-1, g.shape[-1], self.num_heads, self.head_dim)  # [G * W, S, H, hd]
    seg = jnp.asarray(ok).astype(jnp.int32).reshape(-1, g.shape[-1])  # 1 = patch, 0 = empty slot
    out = attention(flat(q), flat(k), flat(v), seg, causal=False, scale=self.head_dim ** -0.5, impl=impl)
    out = out.reshape(grp, -1, self.num_heads * self.head_dim)
    # back to patch order; padding patches (slot one past the end) read zeros
    out = jax.vmap(lambda o, s: o.at[s].get(mode="fill", fill_value=0))(out, slot)
    return self.proj(out)


class VisionBlock(nnx.Module):
  def __init__(self, cfg: VisionConfig, dtype, param_dtype, rngs: nnx.Rngs, attention_impl: str = "auto"):
    self.norm1 = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "vision_embed", dtype=dtype, param_dtype=param_dtype)
    self.norm2 = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, "vision_embed", dtype=dtype, param_dtype=param_dtype)
    self.attn = VisionAttention(cfg, dtype, param_dtype, rngs, attention_impl)
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
    """x [G, N, D] -> [G, N / merge**2, out]."""
    x = self.ln_q(x).reshape(x.shape[0], -1, self.merged_dim)
    return self.mlp_out(jax.nn.gelu(self.mlp_in(x), approximate=False))


def _remat_block(windowed: bool, policy: str):
  """nnx.remat of one (unstacked) block call with its attention kind fixed."""
  def run(blk, x, cos, sin, layout):
    return blk(x, cos, sin, layout, windowed=windowed)
  return nnx.remat(run, policy=remat_policy_fn(policy))


class VisionTower(nnx.Module):
  """pixel_values [N, C*T*P*P] + VisionLayout -> image features [N / merge**2, out_hidden]."""

  def __init__(self, cfg: VisionConfig, dtype, param_dtype, rngs: nnx.Rngs, remat: bool | str = False, *,
               scan_layers: bool = False, attention_impl: str = "auto"):
    self.cfg = cfg
    self.dtype = dtype
    self.remat_policy = "full" if remat is True else ("none" if not remat else str(remat))
    self.scan_layers = scan_layers
    self.patch_embed = Linear(cfg.patch_dim, cfg.hidden_size, ("vision_patch", "vision_embed"), bias=False,
                              dtype=dtype, param_dtype=param_dtype, rngs=rngs)
    blocks = [VisionBlock(cfg, dtype, param_dtype, rngs, attention_impl) for _ in range(cfg.depth)]
    self.blocks = stack_modules(blocks) if scan_layers else nnx.List(blocks)
    self.merger = PatchMerger(cfg, dtype, param_dtype, rngs)

  @property
  def remat(self) -> bool:
    return self.remat_policy != "none"

  def rotary(self, rot_pos: jax.Array) -> tuple[jax.Array, jax.Array]:
    """rot_pos [..., N, 2] -> cos, sin [..., N, head_dim]: first half rotates by row, second half by column."""
    quarter = self.cfg.head_dim // 2
    inv_freq = 1.0 / (self.cfg.rope_theta ** (jnp.arange(0, quarter, 2, dtype=jnp.float32) / quarter))
    freqs = rot_pos.astype(jnp.float32)[..., None] * inv_freq  # [..., N, 2, head_dim/4]
    emb = freqs.reshape(freqs.shape[:-2] + (-1,))               # [..., N, head_dim/2] = [rows | cols]
    emb = jnp.concatenate([emb, emb], axis=-1)
    return jnp.cos(emb), jnp.sin(emb)

  def __call__(self, pixel_values: jax.Array, layout: VisionLayout) -> jax.Array:
    """pixel_values [N, D] with a flat layout -> [N/U, out]; or [G, N, D] with a grouped layout -> [G, N/U, out]."""
    unit = self.cfg.spatial_merge_size ** 2
    grouped = pixel_values.ndim == 3
    layout = jax.tree.map(jnp.asarray, layout)
    if grouped != (layout.window_segments.ndim == 2):
      raise ValueError(f"pixel_values {pixel_values.shape} and vision layout (window_segments "
                       f"{layout.window_segments.shape}) disagree on the group axis: use grouped_vision_layout "
                       "with [G, N, D] pixel values, vision_layout with [N, D]")
    if not grouped:
      pixel_values, layout = pixel_values[None], jax.tree.map(lambda a: a[None], layout)
    x = self.patch_embed(pixel_values.astype(self.dtype))
    n = x.shape[1]
    if layout.window_segments.shape[1] != n:
      raise ValueError(f"pixel_values has {n} patches but the vision layout covers "
                       f"{layout.window_segments.shape[1]} (pad pixel_values or rebuild the layout)")

    def to_window_order(a):
      return jax.vmap(lambda r, i: r.reshape(n // unit, unit, -1)[i].reshape(n, -1))(a, layout.window_index)

    # activations split over the batch mesh axes (groups = rows; the flat form splits its patches): a batch of
    # screenshots' activations, and the copies rematerialisation saves per block, must not sit on every chip
    axes = ("batch", None, None) if grouped else (None, "batch", None)
    x = constrain(to_window_order(x), axes)
    cos, sin = self.rotary(layout.rot_pos)
    cos, sin = to_window_order(cos), to_window_order(sin)
    full_blocks = set(self.cfg.fullatt_block_indexes)
    if self.scan_layers:
      x = self._scan_blocks(x, cos, sin, layout, axes)
    else:
      for i, block in enumerate(self.blocks):
        if self.remat:
          x = _remat_block(i not in full_blocks, self.remat_policy)(block, x, cos, sin, layout)
        else:
          x = block(x, cos, sin, layout, windowed=i not in full_blocks)
    merged = self.merger(x)  # [G, N/U, out] in window order
    merged = jax.vmap(lambda m, r: m[r])(merged, layout.reverse_index)
    return merged if grouped else merged[0]

  def _scan_blocks(self, x, cos, sin, layout, axes):
    """Stacked blocks: one lax.scan per run of same-kind blocks, or a scan over [groups, period] when the
    full-attention blocks are every period-th block ending the stack (period-1 windowed, then 1 full)."""
    graphdef, params = nnx.split(self.blocks)
    depth = self.cfg.depth

    def block_fn(windowed):
      def run(p, h):
        return constrain(nnx.merge(graphdef, p)(h, cos, sin, layout, windowed=windowed), axes)
      if self.remat:
        run = jax.checkpoint(run, policy=remat_policy_fn(self.remat_policy), prevent_cse=False)
      return run

    run_window, run_full = block_fn(True), block_fn(False)

    def scan_run(p, h, windowed):
      fn = run_window if windowed else run_full
      return jax.lax.scan(lambda c, pi: (fn(pi, c), None), h, p)[0]

    full = tuple(sorted(self.cfg.fullatt_block_indexes))
    period = full[0] + 1 if full else 0
    if full and depth % period == 0 and full == tuple(range(period - 1, depth, period)) and depth > period:
      grouped = jax.tree.map(lambda a: a.reshape((depth // period, period) + a.shape[1:]), params)

      def group(h, p):
        if period > 1:
          h = scan_run(jax.tree.map(lambda a: a[:period - 1], p), h, True)
        return run_full(jax.tree.map(lambda a: a[period - 1], p), h), None
      return jax.lax.scan(group, x, grouped)[0]
    kinds = [i not in full for i in range(depth)]
    start = 0
    for i in range(1, depth + 1):
      if i == depth or kinds[i] != kinds[start]:
        x = scan_run(jax.tree.map(lambda a, s=start, e=i: a[s:e], params), x, kinds[start])
        start = i
    return x
