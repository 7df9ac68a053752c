"""Per-row (grouped) vision inputs: pixel_values [B, N, D] with grouped_vision_layout give exactly the logits and
gradients of the flat form [N, D] (all images of the batch concatenated), for rows with different image counts
and sizes and a row without images; shapes are shared across groups; mismatched inputs are refused."""
import jax
import numpy as np
import pytest
from flax import nnx

from gui_jax.models.qwen2_5_vl import (Qwen25VLForConditionalGeneration, get_rope_index, grouped_vision_layout,
                                       preset, vision_layout)

jax.config.update("jax_default_matmul_precision", "highest")


def _row(cfg, rng, grids, n_text=7):
  ids = rng.integers(0, 4000, n_text).tolist()
  for g in grids:
    ids += [cfg.vision_start_token_id] + [cfg.image_token_id] * (int(np.prod(g)) // 4) + [cfg.vision_end_token_id]
    ids += rng.integers(0, 4000, 3).tolist()
  return np.array(ids, np.int64)


@pytest.mark.parametrize("scan", [False, True])
def test_grouped_equals_flat_logits_and_grads(scan):
  cfg = preset("tiny", attention_impl="xla", scan_layers=scan)
  model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0))
  rng = np.random.default_rng(1)
  row_grids = [[(1, 4, 8), (1, 8, 4)], [], [(1, 4, 4)]]   # 2 images, none, 1 image
  seqs = [_row(cfg, rng, g) for g in row_grids]
  length = max(s.size for s in seqs) + 3
  ids, mask = np.zeros((3, length), np.int64), np.zeros((3, length), bool)
  pos = np.zeros((3, 3, length), np.int64)
  row_pixels = []
  for i, (s, g) in enumerate(zip(seqs, row_grids)):
    ids[i, :s.size], mask[i, :s.size] = s, True
    grid = np.array(g, np.int64).reshape(-1, 3)
    pos[:, i] = get_rope_index(ids[i:i + 1], grid if g else None, mask[i:i + 1], cfg)[0][:, 0]
    row_pixels.append(rng.standard_normal((int(grid.prod(1).sum()), cfg.vision.patch_dim)).astype(np.float32))

  flat_grid = np.array([g for gs in row_grids for g in gs], np.int64)
  flat_pix = np.concatenate(row_pixels)
  flat_layout = vision_layout(flat_grid, cfg.vision)
  n_row = 64
  grouped_pix = np.stack([np.concatenate([p, np.zeros((n_row - len(p), p.shape[1]), np.float32)])
                          for p in row_pixels])
  grouped_layout = grouped_vision_layout([np.array(g, np.int64).reshape(-1, 3) for g in row_grids], cfg.vision,
                                         pad_patches_to=n_row)
  assert all(a.shape[0] == 3 for a in jax.tree.leaves(grouped_layout))

  def loss(m, pix, lay):
    logits = m(ids, attention_mask=mask, pixel_values=pix, vision_layout=lay, position_ids=pos).logits
    return (logits * mask[..., None]).sum() / 1e3, logits

  grad_fn = nnx.jit(nnx.value_and_grad(loss, has_aux=True))
  (l_flat, logits_flat), g_flat = grad_fn(model, flat_pix, flat_layout)
  (l_grp, logits_grp), g_grp = grad_fn(model, grouped_pix, grouped_layout)
  np.testing.assert_allclose(np.asarray(logits_grp)[mask], np.asarray(logits_flat)[mask], atol=2e-5, rtol=1e-5)
  for a, b in zip(jax.tree.leaves(g_flat), jax.tree.leaves(g_grp)):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), atol=2e-5, rtol=1e-4)
  # the vision tower really contributed (images change the logits)
  no_img = model(ids, attention_mask=mask, position_ids=pos).logits
  assert np.abs(np.asarray(no_img)[mask] - np.asarray(logits_flat)[mask]).max() > 1e-3


def test_grouped_layout_shapes_and_errors():
  cfg = preset("tiny").vision
  lay = grouped_vision_layout([np.array([[1, 8, 8]]), np.array([[1, 4, 4], [1, 4, 4]]), np.zeros((0, 3))], cfg,
                              pad_patches_to=96)
  assert lay.window_segments.shape == (3, 96) and lay.full_gather.shape[0] == 3
  # frame blocks: the largest group needs 2 frames, all groups share that count (bucketed to a power of 2)
  assert lay.full_gather.shape[1] == 2 and lay.full_valid[2].sum() == 0 and lay.full_valid[1].sum() == 32
  assert (lay.full_slot[2] == lay.full_gather.shape[1] * lay.full_gather.shape[2]).all()  # padding reads zeros
  with pytest.raises(ValueError, match="forced count"):
    vision_layout(np.array([[1, 4, 4], [1, 4, 4]]), cfg, pad_patches_to=32, frame_blocks=1)
  model = Qwen25VLForConditionalGeneration(preset("tiny"), rngs=nnx.Rngs(0))
  with pytest.raises(ValueError, match="group axis"):
    model.visual(np.zeros((96, cfg.patch_dim), np.float32), lay)
