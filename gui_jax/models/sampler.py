"""Batched autoregressive sampling with the Qwen2.5-VL static KV cache: jitted prefill + jitted decode loop.

  sampler = Sampler(model, eos_ids=[cfg.text.eos_token_id], pad_id=cfg.text.pad_token_id, detokenize=tok.decode)
  out = sampler.generate([[1, 2, 3], [4, 5]], max_new_tokens=32, temperature=0.7, top_p=0.9,
                         stop_strings=["</action>"])
  out.tokens [B, T] int32 (pad_id after each row's end), out.logprobs [B, T] float32 (0 after the end),
  out.lengths [B] (generated tokens, the stop token included), out.finish_reasons ('eos' | 'stop' | 'length').

Log-probabilities are log_softmax of the RAW logits (temperature 1, no top-k / top-p) at the sampled token: the
number a training forward recomputes for the same tokens (the RL "old logprob"), not the log-probability under
the filtered distribution the token was drawn from (they coincide for temperature 1 with no filtering).

Multimodal prompts: pass `pixel_values` [N, C*T*P*P] and `image_grid_thw` [num_images, 3] for the whole batch
(images in row order, as the processor emits them); M-RoPE ids come from `get_rope_index`, and decode steps use
the cache's `next_position`, which carries each row's rope delta.

No recompilation per call: the batch, prompt length, new-token count and image-patch count are padded up to
fixed buckets, and sampling settings are traced scalars. Each (bucket shape) compiles once.
Stop conditions: EOS ids and token-sequence stops are checked inside the jitted loop; stop strings are checked
on the host on decoded text between decode chunks of `stop_check_every` tokens (needs `detokenize`), and the
row is cut after the token that completed the string (the string stays in the tokens and text).
Weight sync: `sampler.update_weights(model_or_state)` swaps in new parameters without recompiling.
Vision: the tower runs once per prompt batch inside prefill (each image's features once); decode steps never
touch it. Image patches (and, inside `vision_layout`, window / frame blocks) are padded to buckets
(`bucketed_vision_inputs`), so prompts with 1-3 screenshots of any size share a few programs.
Chunked prefill (`prefill_chunk=C`): the prompt bucket is rounded up to a multiple of C and run through the
cache C tokens at a time inside one `lax.fori_loop` (attention scores [B, heads, C, cache_len] instead of
[B, heads, P, P]; one chunk body compiled, whatever the prompt length). Image features are computed once,
before the loop, and each chunk splices the rows of its own image tokens.
KV cache dtype (`cache_dtype`, e.g. 'bfloat16'): halves cache memory; attention still runs in the model's compute
dtype. Under `sharding.activation_sharding(mesh)` the cache is constrained to logical axes
('batch', 'act_kv_heads', 'kv_length', None), i.e. sharded over batch and kv heads by the mesh rules.
Decode loop (`decode_impl`): 'while_loop' runs all steps in one jitted `lax.while_loop` (default; ~2x the
tokens/s of 'python' for the tiny preset on CPU, where per-step dispatch dominates); 'python' calls a jitted
single step with the decode state donated (in-place cache update); it was ~1.25x faster for a 50M model on a
loaded 2-core CPU (benchmarks/model.py reports both).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models import sharding
from gui_jax.models.qwen2_5_vl.rope_index import get_rope_index
from gui_jax.models.qwen2_5_vl.text import KVCache
from gui_jax.models.qwen2_5_vl.vision import VisionLayout, grouped_vision_layout
from gui_jax.models.qwen2_5_vl.vision import vision_layout as build_vision_layout
from gui_jax.models.sampling import sample_tokens

# Powers of two and their 3/2 midpoints from 64 on (<= 33% padding; a 10k-token prompt pads to 12288, not 16384;
# the quickstart's ~165-token prompts to 192, not 256: prefill and every decode step's cache read shrink with it).
DEFAULT_PROMPT_BUCKETS = (16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
                          16384, 24576, 32768)
DEFAULT_NEW_TOKEN_BUCKETS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
DEFAULT_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# Image patch counts are padded to unit * b (unit = merge**2 patches): 4 buckets per octave (<= 19% waste) for
# sampling; training batches use powers of two (fewer train-step programs, each far costlier to compile).
PATCH_UNIT_BUCKETS = tuple(sorted({-(-f * 2 ** k // 4) for k in range(30) for f in (4, 5, 6, 7)}))
PATCH_UNIT_BUCKETS_POW2 = tuple(2 ** k for k in range(30))
_PATCH_BUCKETS_UNITS = PATCH_UNIT_BUCKETS


@dataclasses.dataclass
class SampleOutput:
  tokens: np.ndarray          # [B, T] int32 generated ids, pad_id after each row's end
  logprobs: np.ndarray        # [B, T] float32 raw-model log-probabilities of `tokens`, 0 after the end
  lengths: np.ndarray         # [B] int32 number of generated tokens (the EOS / stop token included)
  finish_reasons: list[str]   # per row: 'eos', 'stop' (stop string or token sequence) or 'length'
  texts: list[str] | None = None  # detokenized tokens[:length] when a detokenizer was given

  def row(self, i: int) -> tuple[list[int], list[float]]:
    n = int(self.lengths[i])
    return self.tokens[i, :n].tolist(), self.logprobs[i, :n].tolist()


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class DecodeState:
  """Loop carry of the decode loop (all device arrays; B rows, T = new-token bucket)."""
  cache: KVCache
  tokens: jax.Array       # [B, T] int32
  logprobs: jax.Array     # [B, T] float32
  last: jax.Array         # [B] int32 token to feed next
  done: jax.Array         # [B] bool
  stopped_by: jax.Array   # [B] int32 0 running/length, 1 eos, 2 token-sequence stop
  lengths: jax.Array      # [B] int32 tokens generated by the row (frozen once done)
  step: jax.Array         # [] int32 tokens generated so far (= next column of tokens)
  rng: jax.Array          # PRNG key


def _bucket(n: int, buckets: Sequence[int], what: str) -> int:
  for b in buckets:
    if b >= n:
      return b
  raise ValueError(f"{what} {n} exceeds the largest bucket {buckets[-1]}; pass larger buckets to Sampler")


def bucketed_vision_inputs(pixel_values, image_grid_thw, vision_cfg,
                           unit_buckets: Sequence[int] = _PATCH_BUCKETS_UNITS):
  """(pixel_values padded to a patch bucket [N_b, D] float32, its VisionLayout).

  The patch count N is padded to merge**2 * b, b from `unit_buckets` (4 per octave); the padded patches form
  their own masked segment, and `vision_layout` then rounds its window / frame block counts up to buckets too,
  so only the buckets, not the exact image count and sizes, select a compiled program.
  """
  grid = np.asarray(image_grid_thw).reshape(-1, 3)
  pv = np.asarray(pixel_values, np.float32)
  unit = vision_cfg.spatial_merge_size ** 2
  n_patch = unit * _bucket(-(-pv.shape[0] // unit), unit_buckets, "image patches (merged units)")
  pv = np.concatenate([pv, np.zeros((n_patch - pv.shape[0], pv.shape[1]), np.float32)])
  return pv, build_vision_layout(grid, vision_cfg, pad_patches_to=n_patch)


def per_row_vision_inputs(pixels: Sequence[Sequence[np.ndarray]], grids: Sequence[Sequence[np.ndarray]],
                          vision_cfg) -> tuple[np.ndarray, VisionLayout]:
  """Per-row images (row i: a list of pixel arrays [n, D] and their grids [k, 3], possibly empty) ->
  pixel_values [B, N, D] with every row padded to one patch bucket (4 per octave: <= 25 % padding) and the grouped
  VisionLayout ([B, ...]): under a mesh the vision tower then stays split over the batch axes with its rows."""
  unit = vision_cfg.spatial_merge_size ** 2
  counts = [sum(np.shape(p)[0] for p in row) for row in pixels]
  n = unit * _bucket(-(-max(counts) // unit), _PATCH_BUCKETS_UNITS, "image patches per row (merged units)")
  dim = next(np.shape(p)[1] for row in pixels for p in row)
  pv = np.zeros((len(pixels), n, dim), np.float32)
  for i, row in enumerate(pixels):
    if row:
      pv[i, :counts[i]] = np.concatenate([np.asarray(p, np.float32) for p in row])
  row_grids = [np.concatenate([np.asarray(g).reshape(-1, 3) for g in row]) if row else np.zeros((0, 3), np.int64)
               for row in grids]
  return pv, grouped_vision_layout(row_grids, vision_cfg, pad_patches_to=n)


def split_images_by_row(pixel_values, grid: np.ndarray, ids: np.ndarray, cfg) -> tuple[list, list]:
  """Flat batch images (row order) -> per-row lists of (pixel arrays, grids), by each row's image-token count."""
  unit = cfg.vision.spatial_merge_size ** 2
  per_image = np.prod(grid, axis=1)                # patches per image
  tokens = np.sum(np.asarray(ids) == cfg.image_token_id, axis=1)
  pixels, grids, img, at = [], [], 0, 0
  for r, want in enumerate(tokens.tolist()):
    row_px, row_g, got = [], [], 0
    while got < want:
      if img >= len(per_image):
        raise ValueError(f"row {r} has {want} image tokens but the images run out after {got}")
      row_px.append(np.asarray(pixel_values[at:at + per_image[img]]))
      row_g.append(grid[img:img + 1])
      got += int(per_image[img]) // unit
      at += int(per_image[img])
      img += 1
    if got != want:
      raise ValueError(f"row {r}: {want} image tokens do not match its images' {got} merged patches")
    pixels.append(row_px)
    grids.append(row_g)
  if img != len(per_image):
    raise ValueError(f"{len(per_image) - img} images left over after the rows' image tokens")
  return pixels, grids


def _constrain_cache(cache: KVCache) -> KVCache:
  """Pins the KV cache k / v ([layers,] B, kv_heads, S, head_dim) to ('batch', 'act_kv_heads', 'kv_length')
  under an activation mesh (a no-op without one)."""
  axes = ("batch", "act_kv_heads", "kv_length", None)

  def pin(x):
    if isinstance(x, (tuple, list)):
      return type(x)(sharding.constrain(a, axes) for a in x)
    return sharding.constrain(x, (None,) * (x.ndim - 4) + axes)
  return dataclasses.replace(cache, k=pin(cache.k), v=pin(cache.v),
                             valid=sharding.constrain(cache.valid, ("batch", "kv_length")))


def _stop_seq_hit(tokens: jax.Array, step: jax.Array, stop_seqs: jax.Array) -> jax.Array:
  """tokens [B, T]; step [] = number of tokens written; stop_seqs [S, K] right-aligned, -1 = unused.
  Returns [B] bool: the last generated tokens end with one of the sequences."""
  b, t = tokens.shape
  s, k = stop_seqs.shape
  if s == 0:
    return jnp.zeros((b,), bool)
  cols = step - k + jnp.arange(k)                                   # [K] columns of the last K tokens
  tail = jnp.where(cols[None] >= 0, tokens[:, jnp.clip(cols, 0, t - 1)], -2)   # [B, K]
  match = (stop_seqs[None] == tail[:, None]) | (stop_seqs[None] < 0)           # [B, S, K]
  used = jnp.any(stop_seqs >= 0, axis=1)                                       # [S]
  return jnp.any(jnp.all(match, axis=2) & used[None], axis=1)


class Sampler:
  """Generation for a `Qwen25VLForConditionalGeneration` (or any module with the same call signature)."""

  def __init__(self, model: nnx.Module, eos_ids: Sequence[int] | int | None = None, pad_id: int | None = None,
               detokenize: Callable[[list[int]], str] | None = None, padding_side: str = "left",
               prompt_buckets: Sequence[int] = DEFAULT_PROMPT_BUCKETS,
               new_token_buckets: Sequence[int] = DEFAULT_NEW_TOKEN_BUCKETS,
               batch_buckets: Sequence[int] = DEFAULT_BATCH_BUCKETS, decode_impl: str = "while_loop",
               stop_check_every: int = 16, banned_ids: Sequence[int] | None = None,
               prefill_chunk: int | None = None, cache_dtype: str | None = None):
    """prefill_chunk: run prompts longer than this through the cache in chunks of this many tokens (None: one
    pass). cache_dtype: KV cache dtype (None: the model's compute dtype), e.g. 'bfloat16'."""
    cfg = model.cfg
    if prefill_chunk is not None and int(prefill_chunk) < 1:
      raise ValueError(f"prefill_chunk must be >= 1 or None, got {prefill_chunk}")
    self.prefill_chunk = None if prefill_chunk is None else int(prefill_chunk)
    self.cache_dtype = None if cache_dtype is None else jnp.dtype(cache_dtype).name
    if eos_ids is None:
      eos_ids = [cfg.text.eos_token_id]
    self.eos_ids = tuple(int(e) for e in (eos_ids if isinstance(eos_ids, (list, tuple)) else [eos_ids])
                         if e is not None)
    self.pad_id = int(pad_id if pad_id is not None else (cfg.text.pad_token_id or 0))
    if self.pad_id == cfg.image_token_id:
      raise ValueError(f"pad_id {self.pad_id} equals the image token id")
    if padding_side not in ("left", "right"):
      raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    if decode_impl not in ("while_loop", "python"):
      raise ValueError(f"decode_impl must be 'while_loop' or 'python', got {decode_impl!r}")
    self.cfg = cfg
    self.detokenize = detokenize
    self.padding_side = padding_side
    self.prompt_buckets = tuple(sorted(prompt_buckets))
    self.new_token_buckets = tuple(sorted(new_token_buckets))
    self.batch_buckets = tuple(sorted(batch_buckets))
    self.decode_impl = decode_impl
    self.stop_check_every = int(stop_check_every)
    # Never emitted: by default the image / video pad tokens (a generated one would break the next forward,
    # which expects one image feature per pad token). The logprob stays that of the raw distribution.
    banned = (cfg.image_token_id, cfg.video_token_id) if banned_ids is None else tuple(banned_ids)
    self.banned_ids = tuple(int(i) for i in banned if 0 <= int(i) < cfg.text.vocab_size)
    self.graphdef, self.state = nnx.split(model)
    self._eos = jnp.asarray(self.eos_ids or (-1,), jnp.int32)
    self._banned = jnp.asarray(self.banned_ids, jnp.int32)
    # Jitted functions are module-level with the graphdef static, so samplers of the same architecture share
    # compilations (a new Sampler after a weight update, or with other stop settings, compiles nothing).

  def update_weights(self, model_or_state: Any) -> None:
    """New parameters (same structure and shapes): no recompilation."""
    if isinstance(model_or_state, nnx.Module):
      _, model_or_state = nnx.split(model_or_state)
    self.state = model_or_state

  # ------------------------------------------------------------------------------------------- host side
  def _pad_prompts(self, prompts, attention_mask) -> tuple[np.ndarray, np.ndarray, int]:
    """-> ids [Bb, P] int32, mask [Bb, P] bool (batch and length bucketed), real batch size."""
    if isinstance(prompts, (np.ndarray, jax.Array)):
      arr = np.asarray(prompts)
      if arr.ndim != 2:
        raise ValueError(f"prompt array must be [B, L], got shape {arr.shape}")
      m = np.ones(arr.shape, bool) if attention_mask is None else np.asarray(attention_mask).astype(bool)
      rows = [arr[i][m[i]].tolist() for i in range(arr.shape[0])]
    else:
      if attention_mask is not None:
        raise ValueError("attention_mask is only accepted with a [B, L] prompt array")
      rows = [list(map(int, r)) for r in prompts]
    for i, r in enumerate(rows):
      if not r:
        raise ValueError(f"prompt {i} is empty")
    n = len(rows)
    if n == 0:
      raise ValueError("no prompts given")
    bb = _bucket(n, self.batch_buckets, "batch size")
    p = _bucket(max(len(r) for r in rows), self.prompt_buckets, "prompt length")
    if self.prefill_chunk and p > self.prefill_chunk:
      p = -(-p // self.prefill_chunk) * self.prefill_chunk  # whole chunks
    ids = np.full((bb, p), self.pad_id, np.int32)
    mask = np.zeros((bb, p), bool)
    for i in range(bb):
      r = rows[i] if i < n else [self.pad_id]  # filler rows: one valid pad token
      sl = slice(p - len(r), p) if self.padding_side == "left" else slice(0, len(r))
      ids[i, sl] = r
      mask[i, sl] = True
    return ids, mask, n

  def generate(self, prompts, *, attention_mask=None, pixel_values=None, image_grid_thw=None,
               max_new_tokens: int = 64, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
               seed: int | jax.Array = 0, stop_strings: Sequence[str] | None = None,
               stop_token_sequences: Sequence[Sequence[int]] | None = None,
               copies: Sequence[int] | None = None) -> SampleOutput:
    """Samples up to `max_new_tokens` per prompt.

    prompts: list of token-id lists (any lengths), or a [B, L] array with `attention_mask` (any padding).
    temperature 0 = greedy; top_k 0 = off; top_p 1 = off. seed: int or a PRNG key.
    copies: samples per prompt (default 1 each): each prompt is prefilled once and its KV cache copied to its
    rows, which then decode independently; output rows are prompt 0's copies, then prompt 1's, ...
    """
    if max_new_tokens < 1:
      raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if stop_strings and self.detokenize is None:
      raise ValueError("stop_strings need a detokenize function (Sampler(detokenize=...))")
    ids, mask, n = self._pad_prompts(prompts, attention_mask)
    bb, p = ids.shape
    rows = None
    if copies is not None:
      copies = np.asarray(copies, np.int64).reshape(-1)
      if copies.shape[0] != n or (copies < 1).any():
        raise ValueError(f"copies needs one count >= 1 per prompt ({n} prompts), got {copies.tolist()}")
      total = int(copies.sum())
      rows = np.zeros((_bucket(total, self.batch_buckets, "batch size"),), np.int32)  # filler rows: row 0, done
      rows[:total] = np.repeat(np.arange(n), copies)
      n = total
    t = _bucket(max_new_tokens, self.new_token_buckets, "max_new_tokens")

    grid = None if image_grid_thw is None else np.asarray(image_grid_thw).reshape(-1, 3)
    pos, _ = get_rope_index(ids, grid, mask, self.cfg)
    pv, layout = None, None
    if pixel_values is not None:
      if grid is None:
        raise ValueError("pixel_values given without image_grid_thw")
      if getattr(self.cfg, "vision_per_row", False):
        pv, layout = per_row_vision_inputs(*split_images_by_row(pixel_values, grid, ids, self.cfg),
                                           self.cfg.vision)
      else:
        pv, layout = bucketed_vision_inputs(pixel_values, grid, self.cfg.vision)

    stop_seqs = jnp.asarray(_stop_seq_array(stop_token_sequences))
    rng = seed if isinstance(seed, jax.Array) else jax.random.key(int(seed))
    settings = (jnp.float32(temperature), jnp.int32(top_k), jnp.float32(top_p), self._banned)
    chunk = self.prefill_chunk if self.prefill_chunk and p > self.prefill_chunk else None
    cache, h_last = _prefill_jit(self.graphdef, self.state, ids, mask, pos, pv, layout, cache_len=p + t, chunk=chunk,
                                 cache_dtype=self.cache_dtype)
    if rows is None:
      dstate = _start_decode_donated_jit(self.graphdef, self.state, cache, h_last, jnp.int32(n), rng, settings,
                                         stop_seqs, self._eos, new_tokens=t)
    else:
      dstate = _start_decode_jit(self.graphdef, self.state, cache, h_last, jnp.int32(n), rng, settings, stop_seqs,
                                 self._eos, jnp.asarray(rows), new_tokens=t)
    del cache, h_last  # the prefill's cache is freed before decoding (the decode state holds its own)

    limit = int(max_new_tokens)
    stop_at = np.full((dstate.last.shape[0],), -1, np.int64)  # length cut by a stop string, -1 = none
    while True:
      step = int(dstate.step)
      if step >= limit or bool(np.asarray(dstate.done).all()):
        break
      until = limit if not stop_strings else min(limit, step + self.stop_check_every)
      dstate = self._run_decode(dstate, until, settings, stop_seqs)
      if stop_strings:
        dstate = self._check_stop_strings(dstate, stop_strings, stop_at, n)
    return self._finish(dstate, n, limit, stop_at)

  def _run_decode(self, dstate: DecodeState, until: int, settings, stop_seqs) -> DecodeState:
    if self.decode_impl == "while_loop":
      return _decode_loop_jit(self.graphdef, self.state, dstate, jnp.int32(until), settings, stop_seqs, self._eos)
    step = int(dstate.step)
    while step < until:
      dstate = _decode_step_jit(self.graphdef, self.state, dstate, settings, stop_seqs, self._eos)
      step += 1
      if step % 8 == 0 and bool(np.asarray(dstate.done).all()):  # a sync every 8 steps, not every step
        break
    return dstate

  def _check_stop_strings(self, dstate: DecodeState, stop_strings, stop_at: np.ndarray, n: int) -> DecodeState:
    """Host-side: rows whose decoded text contains a stop string are cut after the completing token."""
    tokens = np.asarray(dstate.tokens)
    lengths = np.asarray(dstate.lengths)
    done = np.asarray(dstate.done).copy()
    changed = False
    for i in range(n):
      if stop_at[i] >= 0:
        continue
      text = self.detokenize(tokens[i, :lengths[i]].tolist())
      if not any(s in text for s in stop_strings):
        continue
      lo, hi = 1, int(lengths[i])  # shortest prefix containing a stop string (it may span tokens)
      while lo < hi:
        mid = (lo + hi) // 2
        if any(s in self.detokenize(tokens[i, :mid].tolist()) for s in stop_strings):
          hi = mid
        else:
          lo = mid + 1
      stop_at[i] = lo
      changed |= not done[i]
      done[i] = True
    if changed:
      dstate = dataclasses.replace(dstate, done=jnp.asarray(done))
    return dstate

  def _finish(self, dstate: DecodeState, n: int, limit: int, stop_at: np.ndarray) -> SampleOutput:
    tokens = np.asarray(dstate.tokens)[:n, :limit].copy()
    logprobs = np.asarray(dstate.logprobs)[:n, :limit].copy()
    stopped_by = np.asarray(dstate.stopped_by)[:n]
    lengths = np.minimum(np.asarray(dstate.lengths)[:n], limit).astype(np.int64)
    reasons = []
    for i in range(n):
      if 0 <= stop_at[i] <= lengths[i]:
        lengths[i] = stop_at[i]
        reasons.append("stop")
      else:
        reasons.append({1: "eos", 2: "stop"}.get(int(stopped_by[i]), "length"))
    after = np.arange(tokens.shape[1])[None] >= lengths[:, None]
    tokens[after] = self.pad_id
    logprobs[after] = 0.0
    texts = None
    if self.detokenize is not None:
      texts = [self.detokenize(tokens[i, :lengths[i]].tolist()) for i in range(n)]
    return SampleOutput(tokens=tokens, logprobs=logprobs, lengths=lengths.astype(np.int32),
                        finish_reasons=reasons, texts=texts)


def _stop_seq_array(seqs) -> np.ndarray:
  """[S, K] right-aligned, -1 padded; S and K rounded up to multiples of 4 so few shapes get compiled."""
  seqs = list(seqs or [])
  if any(len(s) == 0 for s in seqs):
    raise ValueError("empty stop token sequence")
  k = max([len(s) for s in seqs] + [1])
  arr = np.full((-(-max(len(seqs), 1) // 4) * 4, -(-k // 4) * 4), -1, np.int32)
  k = arr.shape[1]
  for i, s in enumerate(seqs):
    arr[i, k - len(s):] = s
  return arr


# ------------------------------------------------------------------------------------------------ jitted
def _emit(dstate: DecodeState, logits: jax.Array, settings, stop_seqs: jax.Array, eos: jax.Array) -> DecodeState:
  """Samples from logits [B, V] into column `step` for rows still running; updates done / lengths."""
  rng, sub = jax.random.split(dstate.rng)
  temperature, top_k, top_p, banned = settings
  tok, lp = sample_tokens(sub, logits, temperature, top_k, top_p, banned_ids=banned)
  active = ~dstate.done
  col = dstate.step
  tokens = jax.lax.dynamic_update_slice(dstate.tokens, jnp.where(active, tok, 0)[:, None], (0, col))
  logprobs = jax.lax.dynamic_update_slice(dstate.logprobs, jnp.where(active, lp, 0.0)[:, None], (0, col))
  hit_eos = jnp.any(tok[:, None] == eos[None, :], axis=1) & active
  hit_seq = _stop_seq_hit(tokens, col + 1, stop_seqs) & active & ~hit_eos
  return DecodeState(cache=dstate.cache, tokens=tokens, logprobs=logprobs, last=tok,
                     done=dstate.done | hit_eos | hit_seq,
                     stopped_by=jnp.where(hit_eos, 1, jnp.where(hit_seq, 2, dstate.stopped_by)),
                     lengths=jnp.where(active, col + 1, dstate.lengths), step=col + 1, rng=rng)


def _prefill_chunks(model, ids, mask, pos, features, cache: KVCache, last_index, chunk: int):
  """Runs ids / mask [B, P], pos [3, B, P] (P a multiple of `chunk`) through `cache` chunk by chunk.

  features [M, H] or None: image features of the whole batch in row-major image-token order; each chunk gets
  the rows of its own image tokens. Per-row features [B, M, H] (vision_per_row): the same within each row. Returns (cache, hidden [B, H] at last_index [B])."""
  b, p = ids.shape
  image_id = model.cfg.image_token_id
  per_row = features is not None and features.ndim == 3   # [B, M, H]: row b's image tokens take features[b]
  if features is not None:
    is_image = ids == image_id
    if per_row:
      feature_index = jnp.cumsum(is_image, axis=1) - 1                     # [B, P] image-token rank in its row
    else:
      feature_index = (jnp.cumsum(is_image.reshape(-1)) - 1).reshape(b, p)  # [B, P] row-major image-token rank

  def body(c, carry):
    cache, h_last = carry
    start = c * chunk
    sl = lambda a, axis: jax.lax.dynamic_slice_in_dim(a, start, chunk, axis=axis)
    ids_c, kw = sl(ids, 1), {}
    if per_row:
      # Row b's k-th image token of the chunk takes features[b, feature_index of that token].
      def row_features(f, is_img, index):
        (where,) = jnp.nonzero(is_img, size=chunk, fill_value=0)
        return f[jnp.clip(index[where], 0, f.shape[0] - 1)]
      kw["image_features"] = jax.vmap(row_features)(features, ids_c == image_id, sl(feature_index, 1))
    elif features is not None:
      # The chunk's k-th image token (row-major) takes features[feature_index of that token].
      (where,) = jnp.nonzero((ids_c == image_id).reshape(-1), size=b * chunk, fill_value=0)
      kw["image_features"] = features[jnp.clip(sl(feature_index, 1).reshape(-1)[where], 0, features.shape[0] - 1)]
    out = model(ids_c, attention_mask=sl(mask, 1), position_ids=sl(pos, 2), cache=cache, compute_logits=False,
                **kw)
    local = jnp.clip(last_index - start, 0, chunk - 1)
    h = jnp.take_along_axis(out.last_hidden_state, local[:, None, None], axis=1)[:, 0]
    here = (last_index >= start) & (last_index < start + chunk)
    return _constrain_cache(out.cache), jnp.where(here[:, None], h.astype(h_last.dtype), h_last)

  h0 = jnp.zeros((b, model.cfg.text.hidden_size), jnp.dtype(model.cfg.dtype))
  return jax.lax.fori_loop(0, p // chunk, body, (cache, h0))


def _gather_rows(cache: KVCache, rows: jax.Array) -> KVCache:
  """The cache of batch rows `rows` [B'] (k / v: [layers,] B, kv_heads, S, head_dim, or per-layer lists)."""
  def take(x):
    if isinstance(x, (tuple, list)):
      return type(x)(jnp.take(a, rows, axis=a.ndim - 4) for a in x)
    return jnp.take(x, rows, axis=x.ndim - 4)
  return dataclasses.replace(cache, k=take(cache.k), v=take(cache.v), valid=jnp.take(cache.valid, rows, axis=0),
                             next_position=jnp.take(cache.next_position, rows, axis=0))


def _prefill_cache(graphdef, state, ids, mask, pos, pixel_values, layout, *, cache_len: int,
                   chunk: int | None = None, cache_dtype: str | None = None) -> tuple[KVCache, jax.Array]:
  """ids / mask [B, P], pos [3, B, P]: runs the prompt into a fresh cache -> (cache, last hidden state [B, H])."""
  model = nnx.merge(graphdef, state)
  b, p = ids.shape
  cache = _constrain_cache(model.init_cache(b, cache_len, dtype=cache_dtype))
  last_index = p - 1 - jnp.argmax(mask[:, ::-1], axis=1)           # last valid column per row (any padding)
  if chunk is None:
    out = model(ids, attention_mask=mask, pixel_values=pixel_values, position_ids=pos, cache=cache,
                vision_layout=layout, compute_logits=False)
    h_last = jnp.take_along_axis(out.last_hidden_state, last_index[:, None, None], axis=1)[:, 0]
    return _constrain_cache(out.cache), h_last
  features = None if pixel_values is None else model.image_features(pixel_values, layout)
  return _prefill_chunks(model, ids, mask, pos, features, cache, last_index, chunk)


def _start_decode(graphdef, state, cache: KVCache, h_last, n_real, rng, settings, stop_seqs, eos, rows=None, *,
                  new_tokens: int) -> DecodeState:
  """The decode state after a prefill (h_last [B, H]), its first token sampled. rows [B'] (optional): decode
  rows B' taking prompt rows[i]'s cache, each sampled on its own."""
  model = nnx.merge(graphdef, state)
  b = h_last.shape[0]
  if rows is not None:
    cache, h_last, b = _constrain_cache(_gather_rows(cache, rows)), h_last[rows], rows.shape[0]
  logits = model.logits_from_hidden(h_last)
  t = new_tokens
  dstate = DecodeState(cache=cache, tokens=jnp.zeros((b, t), jnp.int32),
                       logprobs=jnp.zeros((b, t), jnp.float32), last=jnp.zeros((b,), jnp.int32),
                       done=jnp.arange(b) >= n_real, stopped_by=jnp.zeros((b,), jnp.int32),
                       lengths=jnp.zeros((b,), jnp.int32), step=jnp.zeros((), jnp.int32), rng=rng)
  return _emit(dstate, logits, settings, stop_seqs, eos)


def _prefill(graphdef, state, ids, mask, pos, pixel_values, layout, n_real, rng, settings, stop_seqs, eos,
             rows=None, *, cache_len: int, chunk: int | None = None, cache_dtype: str | None = None) -> DecodeState:
  """Prefill and first token in one function (the AOT report compiles it as one program); `generate` jits the
  two halves apart so that the large prefill program is keyed by (batch, prompt length) alone, not also by
  the number of copies (rows)."""
  cache, h_last = _prefill_cache(graphdef, state, ids, mask, pos, pixel_values, layout, cache_len=cache_len,
                                 chunk=chunk, cache_dtype=cache_dtype)
  return _start_decode(graphdef, state, cache, h_last, n_real, rng, settings, stop_seqs, eos, rows,
                       new_tokens=cache_len - ids.shape[1])


def _decode_step(graphdef, state, dstate: DecodeState, settings, stop_seqs, eos) -> DecodeState:
  """Feeds `last` [B] through the cache and samples the next token (one column)."""
  model = nnx.merge(graphdef, state)
  b = dstate.last.shape[0]
  out = model(dstate.last[:, None], attention_mask=jnp.ones((b, 1), bool), cache=dstate.cache)
  dstate = dataclasses.replace(dstate, cache=_constrain_cache(out.cache))
  return _emit(dstate, out.logits[:, -1], settings, stop_seqs, eos)


def _decode_loop(graphdef, state, dstate: DecodeState, until, settings, stop_seqs, eos) -> DecodeState:
  """Decode steps inside one jax.lax.while_loop until `step == until` or every row is done."""
  def cond(d):
    return (d.step < until) & ~jnp.all(d.done)
  return jax.lax.while_loop(cond, lambda d: _decode_step(graphdef, state, d, settings, stop_seqs, eos), dstate)


# The decode state (KV cache included) is donated: updated in place, no copy per call.
_prefill_jit = jax.jit(_prefill_cache, static_argnums=(0,), static_argnames=("cache_len", "chunk", "cache_dtype"))
# Without copies the prefill's cache becomes the decode state's (donated: no copy); with copies the gathered
# cache has another shape, so donating would only make XLA warn that it cannot reuse the input.
_start_decode_jit = jax.jit(_start_decode, static_argnums=(0,), static_argnames=("new_tokens",))
_start_decode_donated_jit = jax.jit(_start_decode, static_argnums=(0,), static_argnames=("new_tokens",),
                                    donate_argnums=(2,))
_decode_step_jit = jax.jit(_decode_step, static_argnums=(0,), donate_argnums=(2,))
_decode_loop_jit = jax.jit(_decode_loop, static_argnums=(0,), donate_argnums=(2,))
