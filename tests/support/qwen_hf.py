"""Shared helpers for the Qwen2.5-VL tests: tiny random transformers models and multi-image inputs."""
from __future__ import annotations

import numpy as np
import torch
from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

IMAGE_ID, VIDEO_ID, VSTART_ID, VEND_ID = 250, 251, 248, 249
VOCAB = 256


def hf_config(*, tie: bool, layers=2, hidden=64, heads=4, kv=2, inter=96, mrope=(2, 3, 3), depth=3,
              vhidden=32, vheads=2, vinter=48, patch=4, window=16, fullatt=(1,), theta=10000.0):
  return Qwen2_5_VLConfig(
      text_config=dict(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                       num_attention_heads=heads, num_key_value_heads=kv, rms_norm_eps=1e-6,
                       bos_token_id=None, eos_token_id=None,
                       rope_parameters=dict(rope_type="default", mrope_section=list(mrope), rope_theta=theta)),
      vision_config=dict(depth=depth, hidden_size=vhidden, intermediate_size=vinter, num_heads=vheads,
                         out_hidden_size=hidden, fullatt_block_indexes=list(fullatt), window_size=window,
                         patch_size=patch, temporal_patch_size=2, spatial_merge_size=2),
      bos_token_id=None, eos_token_id=None, image_token_id=IMAGE_ID, video_token_id=VIDEO_ID, vision_start_token_id=VSTART_ID,
      vision_end_token_id=VEND_ID, tie_word_embeddings=tie)


def make_hf_model(cfg, seed: int):
  """A float32 eval-mode model with random weights at non-trivial scales (norms != 1, biases != 0)."""
  torch.manual_seed(seed)
  model = Qwen2_5_VLForConditionalGeneration(cfg).float().eval()
  with torch.no_grad():
    for name, p in model.named_parameters():
      if p.ndim == 1 and ("norm" in name or "ln_q" in name):
        p.copy_(1.0 + 0.2 * torch.randn_like(p))
      elif p.ndim == 1:
        p.copy_(0.1 * torch.randn_like(p))
      elif "embed_tokens" in name:
        p.copy_(0.3 * torch.randn_like(p))
      else:
        fan_in = int(np.prod(p.shape[1:]))
        p.copy_(torch.randn_like(p) * (1.5 / np.sqrt(fan_in)))
  return model


def build_inputs(rows, grids, merge=2, pad_side="right", seed=0, patch_dim=None):
  """rows: list of segment lists; a segment is an int (that many random text tokens) or 'img' (next grid).

  Returns dict of numpy arrays: input_ids [B, L], attention_mask [B, L], pixel_values [N, patch_dim],
  image_grid_thw [num_images, 3]."""
  rng = np.random.default_rng(seed)
  seqs, gi = [], 0
  for row in rows:
    ids = []
    for seg in row:
      if seg == "img":
        t, h, w = grids[gi]
        gi += 1
        ids += [VSTART_ID] + [IMAGE_ID] * (t * h * w // merge ** 2) + [VEND_ID]
      else:
        ids += rng.integers(0, 240, size=seg).tolist()
    seqs.append(ids)
  assert gi == len(grids)
  length = max(len(s) for s in seqs)
  input_ids = np.zeros((len(seqs), length), np.int64)
  mask = np.zeros((len(seqs), length), np.int64)
  for b, s in enumerate(seqs):
    if pad_side == "right":
      input_ids[b, :len(s)], mask[b, :len(s)] = s, 1
    else:
      input_ids[b, length - len(s):], mask[b, length - len(s):] = s, 1
  grid = np.asarray(grids, np.int64).reshape(-1, 3)
  n = int(grid.prod(-1).sum())
  pixel_values = rng.standard_normal((n, patch_dim)).astype(np.float32)
  return dict(input_ids=input_ids, attention_mask=mask, pixel_values=pixel_values, image_grid_thw=grid)


def hf_forward(model, inputs, labels=None):
  """Runs transformers with mm_token_type_ids (without it, 3-D M-RoPE positions are silently skipped)."""
  t = {k: torch.from_numpy(v) for k, v in inputs.items()}
  mm = (t["input_ids"] == IMAGE_ID).long()
  return model(input_ids=t["input_ids"], attention_mask=t["attention_mask"], pixel_values=t["pixel_values"],
               image_grid_thw=t["image_grid_thw"], mm_token_type_ids=mm,
               labels=None if labels is None else torch.from_numpy(labels))
