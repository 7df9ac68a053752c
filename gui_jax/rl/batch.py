"""Batch builder: trained steps (prompt + response token ids, images) → padded model inputs.

One row per trained step: the prompt holds the goal, the history (as the policy wrote it or as
patched) and the observation; only that step's response tokens are trained (loss mask). Rows are
right-padded to a length bucket; images of all rows are concatenated in row order and padded to a
patch bucket so a few shapes cover a whole run (no recompilation per batch).

Arrays (B rows, L tokens; position k holds token k and its log-prob given tokens < k):
  input_ids, attention_mask, loss_mask, step_ids [B, L]; advantages, old_logp, ref_logp [B, L];
  position_ids [3, B, L]; pixel_values [N, D] (+ vision_layout) when images are present.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from gui_jax.models.qwen2_5_vl.rope_index import get_rope_index
from gui_jax.models.qwen2_5_vl.vision import vision_layout as build_vision_layout

DEFAULT_LENGTH_BUCKETS = (64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192)
RESPONSE_BUCKETS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


@dataclasses.dataclass
class TrainSample:
    """One trained step."""

    prompt_ids: np.ndarray                      # int32 [P]
    response_ids: np.ndarray                    # int32 [R]
    advantage: float = 1.0                      # broadcast to every response token
    old_logprobs: Optional[np.ndarray] = None   # float32 [R] (sampler's); zeros when absent
    ref_logprobs: Optional[np.ndarray] = None   # float32 [R]
    pixel_values: Optional[np.ndarray] = None   # [patches, D]
    image_grid_thw: Optional[np.ndarray] = None  # [n_images, 3]

    def __post_init__(self):
        self.prompt_ids = np.asarray(self.prompt_ids, np.int32).reshape(-1)
        self.response_ids = np.asarray(self.response_ids, np.int32).reshape(-1)
        if self.response_ids.size == 0:
            raise ValueError("TrainSample has an empty response (nothing to train)")
        for name in ("old_logprobs", "ref_logprobs"):
            v = getattr(self, name)
            if v is not None and np.asarray(v).shape != self.response_ids.shape:
                raise ValueError(f"TrainSample.{name} has shape {np.asarray(v).shape}, "
                                 f"response has {self.response_ids.shape}")

    def __len__(self):
        return self.prompt_ids.size + self.response_ids.size


def bucket(n: int, buckets: Sequence[int], what: str) -> int:
    for b in sorted(buckets):
        if n <= b:
            return b
    raise ValueError(f"{what} {n} exceeds the largest bucket {max(buckets)}; raise the bucket list")


def build_batch(samples: Sequence[TrainSample], model_cfg, *, pad_id: int,
                length_buckets: Sequence[int] = DEFAULT_LENGTH_BUCKETS,
                rows: Optional[int] = None, truncate_prompt_to: Optional[int] = None) -> dict:
    """Pads `samples` into one batch (numpy arrays + optional VisionLayout).

    rows: pad the batch to this many rows (filler rows have an all-zero loss mask).
    """
    if not samples:
        raise ValueError("build_batch needs at least one sample")
    n_rows = rows or len(samples)
    if n_rows < len(samples):
        raise ValueError(f"{len(samples)} samples do not fit in {n_rows} rows")
    longest = max(len(s) for s in samples)
    length = bucket(longest, length_buckets, "sequence length")
    ids = np.full((n_rows, length), pad_id, np.int32)
    attn = np.zeros((n_rows, length), bool)
    loss_mask = np.zeros((n_rows, length), np.float32)
    step_ids = np.full((n_rows, length), -1, np.int32)
    adv = np.zeros((n_rows, length), np.float32)
    old = np.zeros((n_rows, length), np.float32)
    ref = np.zeros((n_rows, length), np.float32)
    pixels, grids = [], []
    for i, s in enumerate(samples):
        p, r = s.prompt_ids.size, s.response_ids.size
        ids[i, :p] = s.prompt_ids
        ids[i, p:p + r] = s.response_ids
        attn[i, :p + r] = True
        loss_mask[i, p:p + r] = 1.0
        step_ids[i, p:p + r] = 0  # one trained step per row
        adv[i, p:p + r] = s.advantage
        if s.old_logprobs is not None:
            old[i, p:p + r] = s.old_logprobs
        if s.ref_logprobs is not None:
            ref[i, p:p + r] = s.ref_logprobs
        if s.pixel_values is not None:
            pixels.append(np.asarray(s.pixel_values, np.float32))
            grids.append(np.asarray(s.image_grid_thw).reshape(-1, 3))
    for i in range(len(samples), n_rows):
        attn[i, 0] = True  # filler row: one pad token so every row has a valid position
    # Response token positions per row: the LM head only runs where a loss is taken.
    resp_len = bucket(max(s.response_ids.size for s in samples), RESPONSE_BUCKETS, "response length")
    target_pos = np.zeros((n_rows, resp_len), np.int32)
    target_valid = np.zeros((n_rows, resp_len), bool)
    for i, s in enumerate(samples):
        p, r = s.prompt_ids.size, s.response_ids.size
        target_pos[i, :r] = np.arange(p, p + r)
        target_valid[i, :r] = True
    grid = np.concatenate(grids) if grids else None
    pos, _ = get_rope_index(ids, grid, attn, model_cfg)
    batch = {"input_ids": ids, "attention_mask": attn, "loss_mask": loss_mask, "step_ids": step_ids,
             "target_positions": target_pos, "target_valid": target_valid,
             "advantages": adv, "old_logp": old, "ref_logp": ref, "position_ids": pos.astype(np.int32)}
    if pixels:
        pv = np.concatenate(pixels)
        unit = model_cfg.vision.spatial_merge_size ** 2
        n_patch = bucket(pv.shape[0], [unit * 2 ** k for k in range(40)], "image patches")
        batch["pixel_values"] = np.concatenate([pv, np.zeros((n_patch - pv.shape[0], pv.shape[1]), np.float32)])
        batch["vision_layout"] = build_vision_layout(grid, model_cfg.vision, pad_patches_to=n_patch)
    return batch


def split_micro_batches(samples: Sequence[TrainSample], micro_batch_size: int,
                        sort_by_length: bool = True) -> list[list[TrainSample]]:
    """Chunks of `micro_batch_size`; a step is never split across micro-batches.

    With sort_by_length, samples are grouped by length first so each micro-batch pads to a
    smaller length bucket (the accumulated update is the same: losses are sums).
    """
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    order = sorted(range(len(samples)), key=lambda i: len(samples[i])) if sort_by_length else range(len(samples))
    ordered = [samples[i] for i in order]
    return [ordered[i:i + micro_batch_size] for i in range(0, len(ordered), micro_batch_size)]


@jax.jit
def token_logprobs(logits: jax.Array, input_ids: jax.Array) -> jax.Array:
    """logits [B, L, V], input_ids [B, L] → logp [B, L]: logp[:, k] = log p(ids[:, k] | ids[:, :k]),
    logp[:, 0] = 0."""
    lp = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32), axis=-1)
    picked = jnp.take_along_axis(lp, input_ids[:, 1:, None], axis=-1)[..., 0]
    return jnp.concatenate([jnp.zeros_like(picked[:, :1]), picked], axis=1)


def model_forward_logprobs(model, batch: dict) -> tuple[jax.Array, jax.Array]:
    """(token logprobs [B, L], target logits [B, R, V]) on a batch from `build_batch`.

    Only the R target (response) positions go through the LM head: logits at position k − 1
    score token k. logp is scattered back to [B, L] (0 elsewhere); target logits row r scores
    the token at target_positions[:, r].
    """
    out = model(batch["input_ids"], attention_mask=batch["attention_mask"],
                pixel_values=batch.get("pixel_values"), position_ids=batch["position_ids"],
                vision_layout=batch.get("vision_layout"), compute_logits=False)
    pos = jnp.asarray(batch["target_positions"])
    valid = jnp.asarray(batch["target_valid"])
    hidden = jnp.take_along_axis(out.last_hidden_state, jnp.maximum(pos - 1, 0)[..., None], axis=1)
    logits = model.logits_from_hidden(hidden)                              # [B, R, V]
    ids = jnp.take_along_axis(jnp.asarray(batch["input_ids"]), pos, axis=1)
    lp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    picked = jnp.where(valid, jnp.take_along_axis(lp, ids[..., None], axis=-1)[..., 0], 0.0)
    rows = jnp.arange(pos.shape[0])[:, None]
    logp = jnp.zeros(batch["input_ids"].shape, jnp.float32).at[rows, jnp.where(valid, pos, 0)].add(picked)
    return logp, logits
