"""Batch builder: trained steps (prompt + response token ids, images) → padded model inputs.

One trained step = one *segment*: the prompt holds the goal, the history (as the policy wrote it or
as patched) and the observation; only that step's response tokens are trained (loss mask).

Unpacked (default): one segment per row, rows right-padded to a length bucket.
Packed (`packing=True`, `row_length`): several segments per row (first-fit decreasing by length, a
segment never split); every segment keeps its own M-RoPE positions (starting at 0, as if alone), its
own loss mask / advantages / old and ref logprobs, and a distinct `segment_ids` value so attention
never crosses segments (the model's `segment_ids` argument). Losses are sums over tokens, so a packed
batch gives the same per-step losses as the unpacked one (tests/rl/test_packing.py).

Shape buckets (so a run compiles a bounded number of programs): row length (`length_buckets`; a
packed row is padded to the `row_length` bucket, longer only where one step alone is longer), response
tokens per row (`RESPONSE_BUCKETS`; packed rows at least PACKED_MIN_RESPONSE), rows (`rows=`, or
`row_buckets` when rows is None), image patches (`bucketed_vision_inputs`: merge**2 · 2^k patches; the
vision layout then buckets its window and frame block counts; padded patches and blocks are masked).

Arrays (B rows, L tokens; position k holds token k and its log-prob given tokens < k):
  input_ids, attention_mask, loss_mask, step_ids [B, L]; advantages, old_logp, ref_logp [B, L];
  position_ids [3, B, L]; target_positions, target_valid [B, R] (response tokens through the LM head);
  segment_ids [B, L] int32 (packed batches only; 1.. per row, 0 = padding);
  pixel_values [N, D] + vision_layout when images are present (images in row, then segment order);
  with the model config's `vision_per_row`, pixel_values [B, N, D] + a grouped layout (row i's images).
step_ids = index of the segment within its row on its response tokens, −1 elsewhere (the losses'
per-step grouping).
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from gui_jax.models.qwen2_5_vl.rope_index import get_rope_index
from gui_jax.models.sampler import PATCH_UNIT_BUCKETS_POW2, bucketed_vision_inputs, per_row_vision_inputs
from gui_jax.rl.names import MICRO_ROWS

DEFAULT_LENGTH_BUCKETS = (64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
                          12288, 16384)
RESPONSE_BUCKETS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
DEFAULT_ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PACKED_MIN_RESPONSE = 64  # response slots per packed row at least (make_micro_batches: fewer distinct shapes)


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
    pointers: Optional[np.ndarray] = None       # int32 [K, 4] attention targets (train/attention_pointers.py)
    weight: float = 1.0                         # copies of this sample the loss counts (`merge_duplicates`)
    token_weights: Optional[np.ndarray] = None  # float32 [R] per response token loss multipliers (None: all 1)

    def __post_init__(self):
        self.prompt_ids = np.asarray(self.prompt_ids, np.int32).reshape(-1)
        self.response_ids = np.asarray(self.response_ids, np.int32).reshape(-1)
        if self.response_ids.size == 0:
            raise ValueError("TrainSample has an empty response (nothing to train)")
        for name in ("old_logprobs", "ref_logprobs", "token_weights"):
            v = getattr(self, name)
            if v is not None and np.asarray(v).shape != self.response_ids.shape:
                raise ValueError(f"TrainSample.{name} has shape {np.asarray(v).shape}, "
                                 f"response has {self.response_ids.shape}")

    def __len__(self):
        return self.prompt_ids.size + self.response_ids.size

    @property
    def num_images(self) -> int:
        return 0 if self.image_grid_thw is None else int(np.asarray(self.image_grid_thw).reshape(-1, 3).shape[0])


def merge_duplicates(samples: Sequence[TrainSample], across_signs: bool = False) -> list[TrainSample]:
    """Identical samples (prompt, response, images) whose advantages have the same sign (any sign when
    `across_signs`), as one sample of weight = their total weight and advantage = their weighted mean, in order of
    first occurrence.

    Under token_mean aggregation the PPO-clip loss (dual clip included) and the KL term of such a merged sample
    equal those of the copies exactly: for a fixed advantage sign each token's loss is linear in the advantage,
    and the loss mask carries the weight into the sum and the denominator. Across signs the loss stays linear only
    while no ratio leaves the clip range, which holds in the first optimizer step of an on-policy update (every
    ratio is 1). GRPO groups repeat many steps (four rollouts of one task share their first prompt and often
    their answer), so an update trains ~half the tokens.
    """
    merged: dict = {}
    for s in samples:
        key = (s.prompt_ids.tobytes(), s.response_ids.tobytes(), 0 if across_signs else int(np.sign(s.advantage)),
               None if s.pixel_values is None else np.asarray(s.pixel_values).tobytes(),
               None if s.pointers is None else np.asarray(s.pointers).tobytes(),
               None if s.token_weights is None else np.asarray(s.token_weights).tobytes())
        first = merged.get(key)
        if first is None:
            merged[key] = dataclasses.replace(s)
            continue
        w = first.weight + s.weight
        first.advantage = (first.advantage * first.weight + s.advantage * s.weight) / w
        first.weight = w
    return list(merged.values())


def drop_cancelled(samples: Sequence[TrainSample], tol: float = 1e-6) -> tuple[list[TrainSample], int]:
    """Merged samples (`merge_duplicates(..., across_signs=True)`) without those whose advantage is ~0 (|A| ≤ tol:
    copies whose advantages cancel, e.g. every rollout of a group took the same step); the others' advantages
    scaled by kept / all weighted response tokens, so that at ratio 1 the token_mean policy-gradient term and its
    gradient equal the full batch's (the dropped samples' KL term is left out). -> (samples, number dropped)."""
    tokens = lambda s: s.weight * s.response_ids.size  # noqa: E731
    total = sum(tokens(s) for s in samples)
    kept = [s for s in samples if abs(s.advantage) > tol]
    if not kept:
        return [], len(samples)
    scale = sum(tokens(s) for s in kept) / total
    return [dataclasses.replace(s, advantage=s.advantage * scale) for s in kept], len(samples) - len(kept)


def bucket(n: int, buckets: Sequence[int], what: str) -> int:
    for b in sorted(buckets):
        if n <= b:
            return b
    raise ValueError(f"{what} {n} exceeds the largest bucket {max(buckets)}; raise the bucket list")


def pack_rows(samples: Sequence[TrainSample], row_length: int) -> list[list[int]]:
    """First-fit decreasing: sample indices grouped into rows of at most `row_length` tokens.

    Deterministic (ties by index); a sample longer than row_length gets a row of its own.
    """
    if row_length < 1:
        raise ValueError(f"row_length must be >= 1, got {row_length}")
    order = sorted(range(len(samples)), key=lambda i: (-len(samples[i]), i))
    rows: list[list[int]] = []
    fill: list[int] = []
    for i in order:
        n = len(samples[i])
        for r, used in enumerate(fill):
            if used + n <= row_length:
                rows[r].append(i)
                fill[r] += n
                break
        else:
            rows.append([i])
            fill.append(n)
    return rows


def build_batch(samples: Sequence[TrainSample], model_cfg, *, pad_id: int,
                length_buckets: Sequence[int] = DEFAULT_LENGTH_BUCKETS,
                rows: Optional[int] = None, truncate_prompt_to: Optional[int] = None,
                packing: bool = False, row_length: Optional[int] = None,
                row_buckets: Optional[Sequence[int]] = None) -> dict:
    """Pads `samples` into one batch (numpy arrays + optional VisionLayout).

    rows: pad the batch to this many rows (filler rows have an all-zero loss mask); None: one row
    per (packed) row, rounded up to `row_buckets` when given.
    packing: several samples per row (needs row_length; see the module docstring).
    truncate_prompt_to: accepted for compatibility; prompts are never truncated here.
    """
    del truncate_prompt_to
    if not samples:
        raise ValueError("build_batch needs at least one sample")
    if packing:
        if not row_length:
            raise ValueError("packing=True needs row_length (tokens per packed row)")
        groups = [[samples[i] for i in g] for g in pack_rows(samples, bucket(row_length, length_buckets,
                                                                              "row_length"))]
    else:
        groups = [[s] for s in samples]
    return build_rows(groups, model_cfg, pad_id=pad_id, length_buckets=length_buckets, rows=rows,
                      row_buckets=row_buckets, with_segment_ids=packing)


def build_rows(groups: Sequence[Sequence[TrainSample]], model_cfg, *, pad_id: int,
               length_buckets: Sequence[int] = DEFAULT_LENGTH_BUCKETS, rows: Optional[int] = None,
               row_buckets: Optional[Sequence[int]] = None, with_segment_ids: bool = True,
               min_length: int = 0, min_response: int = 0) -> dict:
    """One batch row per group; the group's samples are the row's segments, in order. The row length and the
    response slots per row are buckets of at least `min_length` / `min_response` (fewer distinct shapes)."""
    if not groups or any(not g for g in groups):
        raise ValueError("build_rows needs at least one row and no empty rows")
    if rows is None:
        rows = bucket(len(groups), row_buckets, "rows") if row_buckets else len(groups)
    n_rows = rows
    if n_rows < len(groups):
        raise ValueError(f"{len(groups)} rows of samples do not fit in {n_rows} rows")
    fills = [sum(len(s) for s in g) for g in groups]
    length = bucket(max(max(fills), min_length), length_buckets, "sequence length")
    ids = np.full((n_rows, length), pad_id, np.int32)
    attn = np.zeros((n_rows, length), bool)
    seg = np.zeros((n_rows, length), np.int32)
    pos = np.zeros((3, n_rows, length), np.int32)
    loss_mask = np.zeros((n_rows, length), np.float32)
    step_ids = np.full((n_rows, length), -1, np.int32)
    adv = np.zeros((n_rows, length), np.float32)
    old = np.zeros((n_rows, length), np.float32)
    ref = np.zeros((n_rows, length), np.float32)
    resp_tokens = [sum(s.response_ids.size for s in g) for g in groups]
    resp_len = bucket(max(max(resp_tokens), min_response), RESPONSE_BUCKETS, "response tokens per row")
    target_pos = np.zeros((n_rows, resp_len), np.int32)
    target_valid = np.zeros((n_rows, resp_len), bool)
    pixels, grids = [[] for _ in range(n_rows)], [[] for _ in range(n_rows)]  # per row
    pointer_rows = [[] for _ in range(n_rows)]
    for i, group in enumerate(groups):
        at, r_at = 0, 0  # next free column; next free target slot
        for k, s in enumerate(group):
            p, r = s.prompt_ids.size, s.response_ids.size
            sl, resp = slice(at, at + p + r), slice(at + p, at + p + r)
            ids[i, at:at + p] = s.prompt_ids
            ids[i, resp] = s.response_ids
            attn[i, sl] = True
            seg[i, sl] = k + 1
            loss_mask[i, resp] = s.weight if s.token_weights is None else s.weight * np.asarray(s.token_weights)
            step_ids[i, resp] = k
            adv[i, resp] = s.advantage
            if s.old_logprobs is not None:
                old[i, resp] = s.old_logprobs
            if s.ref_logprobs is not None:
                ref[i, resp] = s.ref_logprobs
            grid = None
            if s.pixel_values is not None:
                grid = np.asarray(s.image_grid_thw).reshape(-1, 3)
                pixels[i].append(np.asarray(s.pixel_values, np.float32))
                grids[i].append(grid)
            # Each segment's own M-RoPE positions, as if it were alone in its row.
            seg_pos, _ = get_rope_index(ids[i:i + 1, sl], grid, None, model_cfg)
            pos[:, i, sl] = seg_pos[:, 0]
            target_pos[i, r_at:r_at + r] = np.arange(at + p, at + p + r)
            target_valid[i, r_at:r_at + r] = True
            if s.pointers is not None:  # (hop, query, lo, hi): positions move with the segment
                pointer_rows[i].append(np.asarray(s.pointers, np.int32).reshape(-1, 4) + np.asarray([0, at, at, at]))
            at, r_at = at + p + r, r_at + r
    for i in range(len(groups), n_rows):
        attn[i, 0] = True  # filler row: one pad token so every row has a valid position
        seg[i, 0] = 1
    batch = {"input_ids": ids, "attention_mask": attn, "loss_mask": loss_mask, "step_ids": step_ids,
             "target_positions": target_pos, "target_valid": target_valid,
             "advantages": adv, "old_logp": old, "ref_logp": ref, "position_ids": pos}
    if with_segment_ids:
        batch["segment_ids"] = seg
    if any(pointer_rows):
        batch["pointers"] = _pointer_array(pointer_rows)
    if any(pixels):
        if getattr(model_cfg, "vision_per_row", False):
            batch["pixel_values"], batch["vision_layout"] = per_row_vision_inputs(pixels, grids, model_cfg.vision)
        else:
            batch["pixel_values"], batch["vision_layout"] = bucketed_vision_inputs(
                np.concatenate(sum(pixels, [])), np.concatenate(sum(grids, [])), model_cfg.vision,
                unit_buckets=PATCH_UNIT_BUCKETS_POW2)
    return batch



def _pointer_array(rows: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """int32 [rows, K, 4] of the rows' pointers, K a power of two ≥ 64 (few compiled shapes); padding rows
    are (−1, 0, 0, −1): no hop, an empty key range."""
    per_row = [np.concatenate(r) if r else np.zeros((0, 4), np.int32) for r in rows]
    k = max(64, 1 << int(np.ceil(np.log2(max(1, max(len(r) for r in per_row))))))
    out = np.tile(np.asarray([-1, 0, 0, -1], np.int32), (len(rows), k, 1))
    for i, r in enumerate(per_row):
        out[i, :len(r)] = r
    return out


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


def split_packed_rows(fills: Sequence[int], micro_batch_size: int, row_length: int) -> list[list[int]]:
    """Row indices per micro-batch for `micro_rows='even'`: rows over `row_length` (one step longer than a row)
    apart, so that they do not pad a micro-batch of full rows to the next length bucket; each kind split into
    the fewest micro-batches of at most `micro_batch_size` rows, of near-equal sizes (less padding than filling
    micro-batches in turn and padding the last). fills: tokens per row, ascending."""
    out = []
    fit = [i for i, f in enumerate(fills) if f <= row_length]
    for part in (fit, [i for i, f in enumerate(fills) if f > row_length]):
        if part:
            m = -(-len(part) // micro_batch_size)
            size = -(-len(part) // m)
            out += [part[k:k + size] for k in range(0, len(part), size)]
    return out


def make_micro_batches(samples: Sequence[TrainSample], model_cfg, *, pad_id: int, micro_batch_size: int,
                       packing: bool = False, row_length: Optional[int] = None,
                       length_buckets: Sequence[int] = DEFAULT_LENGTH_BUCKETS, micro_rows: str = "fixed") -> list[dict]:
    """The micro-batches of one logical batch.

    Unpacked: `micro_batch_size` samples per micro-batch (length-sorted). Packed: samples are packed into rows
    of `row_length` tokens, each micro-batch padded to rows of at least the row_length bucket (longer only
    where one step alone is longer) with at least PACKED_MIN_RESPONSE response slots. micro_rows='fixed':
    `micro_batch_size` rows in turn, every micro-batch padded to that many rows: the fewest distinct shapes,
    each one more XLA program (~2-10 s to compile on 2 CPU cores). micro_rows='even' (`split_packed_rows`):
    near-equal micro-batches of at most that many rows and over-long rows apart: more shapes, fewer padded
    tokens (the quickstart's SFT batches: 64 % real tokens in the slots computed fixed, 80 % even).
    """
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    if micro_rows not in MICRO_ROWS:
        raise ValueError(f"micro_rows must be one of {MICRO_ROWS}, got {micro_rows!r}")
    if not packing:
        return [build_batch(mb, model_cfg, pad_id=pad_id, rows=micro_batch_size, length_buckets=length_buckets)
                for mb in split_micro_batches(samples, micro_batch_size)]
    if not row_length:
        raise ValueError("packing=True needs row_length (tokens per packed row)")
    row_length = bucket(row_length, length_buckets, "row_length")
    groups = [[samples[i] for i in g] for g in pack_rows(samples, row_length)]
    groups.sort(key=lambda g: sum(len(s) for s in g))  # similar fills share a micro-batch
    if micro_rows == "even":
        parts = split_packed_rows([sum(len(s) for s in g) for g in groups], micro_batch_size, row_length)
        return [build_rows([groups[i] for i in part], model_cfg, pad_id=pad_id, length_buckets=length_buckets,
                           min_length=row_length, min_response=PACKED_MIN_RESPONSE) for part in parts]
    return [build_rows(groups[i:i + micro_batch_size], model_cfg, pad_id=pad_id, rows=micro_batch_size,
                       length_buckets=length_buckets, min_length=row_length, min_response=PACKED_MIN_RESPONSE)
            for i in range(0, len(groups), micro_batch_size)]


def shape_key(batch: dict) -> tuple:
    """The array shapes that select a compiled program for `batch` (sorted (path, shape) pairs)."""
    flat = jax.tree_util.tree_flatten_with_path(batch)[0]
    return tuple(sorted((jax.tree_util.keystr(p), tuple(np.shape(v))) for p, v in flat))


@jax.jit
def token_logprobs(logits: jax.Array, input_ids: jax.Array) -> jax.Array:
    """logits [B, L, V], input_ids [B, L] → logp [B, L]: logp[:, k] = log p(ids[:, k] | ids[:, :k]),
    logp[:, 0] = 0."""
    lp = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32), axis=-1)
    picked = jnp.take_along_axis(lp, input_ids[:, 1:, None], axis=-1)[..., 0]
    return jnp.concatenate([jnp.zeros_like(picked[:, :1]), picked], axis=1)


def _accepts_segment_ids(model) -> bool:
    try:
        return "segment_ids" in inspect.signature(type(model).__call__).parameters
    except (TypeError, ValueError):
        return False


def model_forward_logprobs(model, batch: dict, *, with_hidden: bool = False, with_layers: bool = False):
    """(token logprobs [B, L], target logits [B, R, V]) on a batch from `build_batch` (and the last
    hidden states [B, L, H] with `with_hidden`, for losses on other positions; with `with_layers` also the
    residual stream before each layer: a tuple of [B, L, H], input of layer l at index l).

    Only the R target (response) positions go through the LM head: logits at position k − 1
    score token k. logp is scattered back to [B, L] (0 elsewhere); target logits row r scores
    the token at target_positions[:, r]. Packed batches (with segment_ids) need a model whose
    __call__ takes `segment_ids`.
    """
    kw = {}
    if "segment_ids" in batch:
        if not _accepts_segment_ids(model):
            raise ValueError(f"a packed batch (segment_ids) needs a model whose __call__ takes segment_ids; "
                             f"{type(model).__name__} does not: build the batch with packing=False")
        kw["segment_ids"] = batch["segment_ids"]
    out = model(batch["input_ids"], attention_mask=batch["attention_mask"],
                pixel_values=batch.get("pixel_values"), position_ids=batch["position_ids"],
                vision_layout=batch.get("vision_layout"), compute_logits=False, output_hidden_states=with_layers,
                **kw)
    pos = jnp.asarray(batch["target_positions"])
    valid = jnp.asarray(batch["target_valid"])
    hidden = jnp.take_along_axis(out.last_hidden_state, jnp.maximum(pos - 1, 0)[..., None], axis=1)
    logits = model.logits_from_hidden(hidden)                              # [B, R, V]
    ids = jnp.take_along_axis(jnp.asarray(batch["input_ids"]), pos, axis=1)
    lp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    picked = jnp.where(valid, jnp.take_along_axis(lp, ids[..., None], axis=-1)[..., 0], 0.0)
    rows = jnp.arange(pos.shape[0])[:, None]
    logp = jnp.zeros(batch["input_ids"].shape, jnp.float32).at[rows, jnp.where(valid, pos, 0)].add(picked)
    out_tuple = (logp, logits) + ((out.last_hidden_state,) if with_hidden else ())
    return out_tuple + ((out.hidden_states,) if with_layers else ())
