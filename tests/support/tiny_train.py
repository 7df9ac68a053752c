"""A tiny Qwen2.5-VL train step for the sharding / distributed tests: model, one text+image batch, CE loss."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from gui_jax.models.qwen2_5_vl.config import preset
from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
from gui_jax.models.qwen2_5_vl.rope_index import get_rope_index
from gui_jax.models.qwen2_5_vl.vision import vision_layout

GRID = np.array([[1, 4, 4]])  # one 56x56 image: 16 patches -> 4 image tokens

# Batch keys that are not batch-major (for sharding.shard_batch).
BATCH_LOGICAL_AXES = {"position_ids": (None, "batch", None), "pixel_values": None, "layout": None}


def tiny_config():
  return preset("tiny")


def build_tiny_model(seed: int = 0) -> Qwen25VLForConditionalGeneration:
  return Qwen25VLForConditionalGeneration(tiny_config(), rngs=nnx.Rngs(seed))


def make_batch(batch: int = 4, length: int = 12, seed: int = 0) -> dict:
  """Row 0 holds the image (vision_start, 4 pads, vision_end); every row is left-padded by a random amount."""
  cfg = tiny_config()
  rng = np.random.default_rng(seed)
  ids = rng.integers(0, 4000, (batch, length)).astype(np.int32)
  mask = np.ones((batch, length), bool)
  for b in range(1, batch):
    mask[b, :b] = False
    ids[b, :b] = 0
  ids[0, 2] = cfg.vision_start_token_id
  ids[0, 3:7] = cfg.image_token_id
  ids[0, 7] = cfg.vision_end_token_id
  pos, _ = get_rope_index(ids, GRID, mask, cfg)
  pixel_values = rng.standard_normal((int(GRID.prod()), cfg.vision.patch_dim)).astype(np.float32)
  layout = vision_layout(GRID, cfg.vision)
  return {"input_ids": ids, "attention_mask": mask, "position_ids": pos, "pixel_values": pixel_values, "layout": layout}


def loss_fn(model, batch) -> jax.Array:
  """Mean next-token cross-entropy over valid, non-image targets."""
  out = model(batch["input_ids"], attention_mask=batch["attention_mask"], pixel_values=batch["pixel_values"],
              position_ids=batch["position_ids"], vision_layout=batch["layout"])
  cfg = model.cfg
  targets = batch["input_ids"][:, 1:]
  valid = batch["attention_mask"][:, 1:] & batch["attention_mask"][:, :-1] & (targets != cfg.image_token_id)
  ce = optax.softmax_cross_entropy_with_integer_labels(out.logits[:, :-1].astype(jnp.float32), targets)
  return jnp.sum(jnp.where(valid, ce, 0.0)) / jnp.sum(valid)


def make_optimizer(model, lr: float = 1e-2, eps: float = 1e-3) -> nnx.Optimizer:
  """AdamW; eps is large so that parity tests compare updates, not Adam's amplification of float noise in
  near-zero gradients (g / (|g| + 1e-8) turns a 1e-9 rounding difference into a full lr-sized step)."""
  return nnx.Optimizer(model, optax.adamw(lr, eps=eps, weight_decay=0.1), wrt=nnx.Param)





@nnx.jit
def train_step(model, opt, batch):
  """One AdamW step; returns (loss, grads) of the weights before the update."""
  loss, grads = nnx.value_and_grad(loss_fn)(model, batch)
  opt.update(model, grads)
  return loss, grads
