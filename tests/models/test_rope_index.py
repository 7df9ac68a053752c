"""M-RoPE position ids and vision window layout vs transformers, on multi-image multi-turn padded batches."""
import numpy as np
import pytest
import torch
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel
from transformers.vision_utils import get_vision_cu_seqlens, get_vision_position_ids, get_vision_window_index

from gui_jax.models.qwen2_5_vl import Qwen25VLConfig, get_rope_index, text_position_ids, vision_layout
from support.qwen_hf import IMAGE_ID, build_inputs, hf_config

ROWS = [[4, "img", 3, "img", 5, "img", 2],     # multi-turn, three images
        [9],                                    # text only
        [2, "img", 12],                         # one image (two frames)
        [1, "img", 1, "img", 1]]                # short turns between images
GRIDS = [(1, 8, 12), (1, 6, 4), (1, 4, 14), (2, 4, 8), (1, 10, 2), (1, 2, 2)]


@pytest.fixture(scope="module")
def hf_model():
  cfg = hf_config(tie=False, layers=1, depth=1, fullatt=(0,))
  return Qwen2_5_VLModel(cfg).eval(), Qwen25VLConfig.from_hf_dict(cfg.to_dict())


@pytest.mark.parametrize("side", ["left", "right"])
def test_rope_index_matches_transformers(hf_model, side):
  model, cfg = hf_model
  inputs = build_inputs(ROWS, GRIDS, pad_side=side, seed=1, patch_dim=4)
  ids, mask, grid = inputs["input_ids"], inputs["attention_mask"], inputs["image_grid_thw"]
  ref_pos, ref_delta = model.get_rope_index(
      torch.from_numpy(ids), mm_token_type_ids=torch.from_numpy((ids == IMAGE_ID).astype(np.int64)),
      image_grid_thw=torch.from_numpy(grid), attention_mask=torch.from_numpy(mask))
  pos, delta = get_rope_index(ids, grid, mask, cfg)
  np.testing.assert_array_equal(pos, ref_pos.numpy())
  np.testing.assert_array_equal(delta, ref_delta.numpy().reshape(-1))
  # Decoding convention: the k-th valid token sits at k + delta; the text-only row is plain 0..n-1.
  np.testing.assert_array_equal(pos[:, 1][:, mask[1] == 1], np.broadcast_to(np.arange(9), (3, 9)))
  np.testing.assert_array_equal(text_position_ids(mask)[:, 1], pos[:, 1])
  assert (pos.max(axis=(0, 2)) + 1 == mask.sum(1) + delta).all()


def test_rope_index_errors_name_the_problem(hf_model):
  _, cfg = hf_model
  inputs = build_inputs([[2, "img", 2]], [(1, 4, 4)], patch_dim=4)
  with pytest.raises(ValueError, match="more image-pad runs than image_grid_thw entries"):
    get_rope_index(inputs["input_ids"], None, inputs["attention_mask"], cfg)
  with pytest.raises(ValueError, match=r"grid \(1, 4, 8\) needs 8 consecutive"):
    get_rope_index(inputs["input_ids"], np.array([[1, 4, 8]]), inputs["attention_mask"], cfg)


@pytest.mark.parametrize("window", [16, 24, 8])
def test_vision_layout_matches_transformers_windows(window):
  cfg = Qwen25VLConfig.from_hf_dict(hf_config(tie=False, window=window).to_dict()).vision
  grid = np.array(GRIDS)
  layout = vision_layout(grid, cfg)
  tg = torch.from_numpy(grid)
  ref_index, ref_cu = get_vision_window_index(tg, spatial_merge_size=2, window_size=window, patch_size=4)
  np.testing.assert_array_equal(layout.window_index, ref_index.numpy())
  np.testing.assert_array_equal(layout.window_index[layout.reverse_index], np.arange(len(ref_index)))
  # Segment ids change exactly at the transformers cu_seqlens boundaries (windows, then frames).
  for segs, cu in ((layout.window_segments, ref_cu.numpy()), (layout.full_segments, get_vision_cu_seqlens(tg))):
    cu = np.asarray(cu)
    assert cu[-1] == len(segs)
    starts = np.flatnonzero(np.diff(segs)) + 1
    np.testing.assert_array_equal(starts, cu[1:-1])
  ref_rot = get_vision_position_ids(tg, 2).numpy()
  np.testing.assert_array_equal(layout.rot_pos, ref_rot)
  # Window blocks: each window's patches, in order, once; slot inverts gather.
  flat = layout.window_gather[layout.window_valid]
  np.testing.assert_array_equal(flat, np.arange(len(ref_rot)))
  np.testing.assert_array_equal(layout.window_gather.reshape(-1)[layout.window_slot], np.arange(len(ref_rot)))
  assert len(layout.window_gather) == len(ref_cu) - 1
  # Padding patches form their own segment and do not move the real ones.
  padded = vision_layout(grid, cfg, pad_patches_to=len(ref_rot) + 8)
  assert (padded.window_segments[-8:] == -1).all() and (padded.full_segments[-8:] == -1).all()
  np.testing.assert_array_equal(padded.window_index[:len(ref_index)], layout.window_index)
