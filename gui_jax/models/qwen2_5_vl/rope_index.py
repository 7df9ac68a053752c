"""Host-side (numpy) M-RoPE position ids for interleaved text + image sequences (transformers' get_rope_index).

Text tokens advance all three axes (t, h, w) together by 1. An image with grid (t, h, w) patches occupies
t * (h/m) * (w/m) <|image_pad|> tokens (m = spatial_merge_size) whose positions are
(start + frame, start + row, start + col); the next token starts at start + max(h/m, w/m).
Images are consumed from `image_grid_thw` in order of appearance, row by row through the batch.
Padding tokens (attention_mask == 0) get position 0 and are skipped.
rope_deltas[b] = max position + 1 - number of valid tokens, so that during decoding the k-th valid token
(0-based) sits at position k + rope_deltas[b].
"""
from __future__ import annotations

import numpy as np

from gui_jax.models.qwen2_5_vl.config import Qwen25VLConfig


def get_rope_index(input_ids, image_grid_thw, attention_mask, cfg: Qwen25VLConfig):
  """input_ids [B, L] int; image_grid_thw [num_images, 3] or None; attention_mask [B, L] or None.

  Returns (position_ids [3, B, L] int32, rope_deltas [B] int32).
  """
  ids = np.asarray(input_ids)
  if ids.ndim != 2:
    raise ValueError(f"input_ids must be [B, L], got shape {ids.shape}")
  b, l = ids.shape
  mask = np.ones((b, l), bool) if attention_mask is None else np.asarray(attention_mask).astype(bool)
  grids = np.zeros((0, 3), np.int64) if image_grid_thw is None else np.asarray(image_grid_thw).reshape(-1, 3)
  m = cfg.vision.spatial_merge_size
  positions = np.zeros((3, b, l), np.int64)
  deltas = np.zeros((b,), np.int64)
  next_image = 0
  for row in range(b):
    cols = np.nonzero(mask[row])[0]
    tokens = ids[row, cols]
    is_image = tokens == cfg.image_token_id
    out = np.zeros((3, tokens.size), np.int64)
    cur, i = 0, 0
    while i < tokens.size:
      if not is_image[i]:
        j = i
        while j < tokens.size and not is_image[j]:
          j += 1
        out[:, i:j] = cur + np.arange(j - i)
        cur += j - i
        i = j
        continue
      if next_image >= len(grids):
        raise ValueError(f"row {row}: more image-pad runs than image_grid_thw entries ({len(grids)})")
      t, h, w = (int(x) for x in grids[next_image])
      lh, lw = h // m, w // m
      n = t * lh * lw
      if i + n > tokens.size or not is_image[i:i + n].all():
        raise ValueError(f"row {row}: image {next_image} with grid {(t, h, w)} needs {n} consecutive "
                         f"image-pad tokens at valid position {i}")
      tt, hh, ww = np.meshgrid(np.arange(t), np.arange(lh), np.arange(lw), indexing="ij")
      out[:, i:i + n] = cur + np.stack([tt.ravel(), hh.ravel(), ww.ravel()])
      cur += max(lh, lw)
      next_image += 1
      i += n
    positions[:, row, cols] = out
    deltas[row] = (out.max() + 1 - tokens.size) if tokens.size else 0
  if next_image != len(grids):
    raise ValueError(f"image_grid_thw has {len(grids)} images but the sequences hold {next_image}")
  return positions.astype(np.int32), deltas.astype(np.int32)


def text_position_ids(attention_mask, offset=None):
  """Positions for text-only rows: cumsum(mask) - 1 (+ offset [B]), padding at 0; returns [3, B, L] int32."""
  mask = np.asarray(attention_mask).astype(np.int64)
  pos = np.where(mask > 0, np.cumsum(mask, axis=1) - 1, 0)
  if offset is not None:
    pos = pos + np.asarray(offset).reshape(-1, 1) * (mask > 0)
  return np.broadcast_to(pos[None], (3,) + pos.shape).astype(np.int32)
