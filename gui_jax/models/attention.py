"""Attention with segment ids: one entry point, a kernel per platform.

  out = attention(q, k, v, segment_ids, causal=True, scale=d ** -0.5, impl="auto")

  q [B, T, H, D]; k, v [B, S, KV, D] (H a multiple of KV: grouped-query attention); segment_ids [B, T] int32
  (kv_segment_ids [B, S], default segment_ids when S == T). A query attends only to keys with the same segment id
  (and, with causal, at a key index <= its own index). Segment id 0 marks padding: padding queries return zeros.
  Several sequences packed in one row are separate segments (ids 1, 2, ...), so they never see each other.
  Returns [B, T, H, D] in q's dtype.

Implementations (`impl`, the model config's `attention_impl`):
  'xla'    einsum reference: float32 scores [B, KV, G, T, S] materialised (over query chunks of XLA_QUERY_CHUNK
           when they would exceed XLA_SCORE_BYTES, e.g. a full-resolution screenshot's vision attention on CPU).
           Causal self-attention of T >= 2 * XLA_CAUSAL_BLOCK runs over query blocks, each against the keys up to
           its end only (the blocks above the diagonal are skipped: about half the scores, and blocks small enough
           that XLA:CPU does not copy and mask whole [T, S] score tensors). Any platform.
  'splash' Pallas splash attention (TPU flash kernel; block-sparse over the causal mask, segment ids in-kernel).
           K/V are not repeated for GQA: the MQA kernel runs once per kv head over its group of query heads.
           Sequences are padded to the block size and head_dim to a multiple of 128 (the TPU lane width).
           On CPU it runs in Pallas interpret mode (slow; for tests). Under an activation mesh
           (sharding.activation_sharding) it runs per shard in a shard_map over rows and kv heads.
  'cudnn'  cuDNN flash attention through `jax.nn.dot_product_attention(implementation='cudnn')` (GPU, bf16/fp16):
           causal via is_causal (cuDNN skips masked blocks), segments via a boolean mask [B, 1, T, S]; GQA native.
  'auto'   splash on TPU; cudnn on GPU for bf16/fp16 inputs (xla for float32); xla on CPU.

The platform is jax.default_backend(), or the one set by `with target_platform("tpu"):` while tracing, e.g. to
lower for a TPU topology ahead of time on a CPU host (then splash is lowered as the real Mosaic kernel).
"""
from __future__ import annotations

import contextlib
import functools
import threading

import jax
import jax.numpy as jnp

IMPLS = ("auto", "xla", "splash", "cudnn")
SPLASH_BLOCK = 512   # query / key block of the splash kernel (shorter sequences use one block)
_LANES = 128         # TPU lane width: splash blocks and head_dim are multiples of it
XLA_SCORE_BYTES = 1 << 28  # 'xla' above this many bytes of float32 scores runs over query chunks
XLA_QUERY_CHUNK = 1024
XLA_CAUSAL_BLOCK = 256     # query block of the causal 'xla' path (benchmarks/attention.py: fwd+bwd 3.4x on CPU)


class _Target(threading.local):
  platform: str | None = None


_TARGET = _Target()


@contextlib.contextmanager
def target_platform(platform: str | None):
  """Within this context (active while tracing), kernels are chosen for `platform` ('tpu', 'gpu', 'cpu')
  instead of jax.default_backend(): AOT lowering for another platform."""
  old, _TARGET.platform = _TARGET.platform, platform
  try:
    yield
  finally:
    _TARGET.platform = old


def current_platform() -> str:
  return _TARGET.platform or jax.default_backend()


def resolve_impl(impl: str, dtype=jnp.float32, platform: str | None = None) -> str:
  """'auto' -> the kernel for the platform (see module doc); other names are checked and returned."""
  if impl not in IMPLS:
    raise ValueError(f"attention impl {impl!r} unknown; choose one of {IMPLS}")
  if impl != "auto":
    return impl
  platform = platform or current_platform()
  if platform == "tpu":
    return "splash"
  if platform in ("gpu", "cuda", "rocm") and jnp.dtype(dtype) in (jnp.bfloat16, jnp.float16):
    return "cudnn"
  return "xla"


def masked_attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array, scale: float) -> jax.Array:
  """Softmax attention with an explicit mask and grouped kv heads (the XLA reference math).

  q [B, Lq, H, D], k/v [B, Lk, KV, D] (H multiple of KV), mask [B, Lq, Lk] bool (True = may attend).
  Returns [B, Lq, H, D]. Fully masked rows give zeros (padding queries), not NaN.
  """
  b, lq, h, d = q.shape
  kv = k.shape[2]
  g = h // kv
  qg = q.reshape(b, lq, kv, g, d)
  logits = jnp.einsum("bqkgd,bskd->bkgqs", qg, k, preferred_element_type=jnp.float32) * scale
  m = mask[:, None, None, :, :]
  logits = jnp.where(m, logits, jnp.finfo(jnp.float32).min)
  probs = jax.nn.softmax(logits, axis=-1)
  probs = jnp.where(m, probs, 0.0).astype(v.dtype)
  out = jnp.einsum("bkgqs,bskd->bqkgd", probs, v)
  return out.reshape(b, lq, h, d)


def cached_attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array, scale: float) -> jax.Array:
  """masked_attention over a KV cache laid out [B, KV, S, D] (slots beside the head dim): both contractions then
  take k / v as they are stored, where the [B, S, KV, D] layout made XLA transpose the whole cache every decode
  step. q [B, Lq, H, D], mask [B, Lq, S] bool. Returns [B, Lq, H, D]; fully masked rows give zeros."""
  b, lq, h, d = q.shape
  kv = k.shape[1]
  qg = q.reshape(b, lq, kv, h // kv, d)
  logits = jnp.einsum("bqkgd,bksd->bkgqs", qg, k, preferred_element_type=jnp.float32) * scale
  m = mask[:, None, None, :, :]
  logits = jnp.where(m, logits, jnp.finfo(jnp.float32).min)
  probs = jnp.where(m, jax.nn.softmax(logits, axis=-1), 0.0).astype(v.dtype)
  return jnp.einsum("bkgqs,bksd->bqkgd", probs, v).reshape(b, lq, h, d)


def segment_mask(segment_ids: jax.Array, kv_segment_ids: jax.Array, causal: bool) -> jax.Array:
  """[B, T], [B, S] -> [B, T, S] bool: same segment (and key index <= query index when causal)."""
  mask = segment_ids[:, :, None] == kv_segment_ids[:, None, :]
  if causal:
    t, s = segment_ids.shape[1], kv_segment_ids.shape[1]
    mask = mask & (jnp.arange(s)[None, :] <= jnp.arange(t)[:, None])[None]
  return mask


def attention(q: jax.Array, k: jax.Array, v: jax.Array, segment_ids: jax.Array, *, causal: bool, scale: float,
              impl: str = "auto", kv_segment_ids: jax.Array | None = None, interpret: bool | None = None,
              block: int = SPLASH_BLOCK, causal_block: int | None = None) -> jax.Array:
  """Segment-masked attention (see module doc). interpret: Pallas interpret mode for 'splash' (default: on
  when the platform is not TPU). causal_block: the causal 'xla' path's query block (None: XLA_CAUSAL_BLOCK;
  0: the whole score matrix)."""
  b, t, h, d = q.shape
  s, kvh = k.shape[1], k.shape[2]
  if h % kvh:
    raise ValueError(f"attention: {h} query heads not a multiple of {kvh} kv heads")
  if segment_ids.shape != (b, t):
    raise ValueError(f"attention: segment_ids shape {segment_ids.shape} != (batch, q_len) {(b, t)}")
  kv_segment_ids = segment_ids if kv_segment_ids is None else kv_segment_ids
  if kv_segment_ids.shape != (b, s):
    raise ValueError(f"attention: kv_segment_ids shape {kv_segment_ids.shape} != (batch, kv_len) {(b, s)}")
  if causal and s != t:
    raise ValueError(f"attention: causal masking needs q_len == kv_len, got {t} and {s} (use the KV-cache path)")
  segment_ids = segment_ids.astype(jnp.int32)
  kv_segment_ids = kv_segment_ids.astype(jnp.int32)
  impl = resolve_impl(impl, q.dtype)
  causal_block = XLA_CAUSAL_BLOCK if causal_block is None else causal_block
  if impl == "xla" and causal and causal_block and t >= 2 * causal_block:
    out = causal_blocked_attention(q, k, v, segment_ids, scale, causal_block)
  elif impl == "xla" and b * h * t * s * 4 > XLA_SCORE_BYTES and t > XLA_QUERY_CHUNK:
    out = _query_chunked(q, k, v, segment_ids, kv_segment_ids, causal, scale, XLA_QUERY_CHUNK)
  elif impl == "xla":
    out = masked_attention(q, k, v, segment_mask(segment_ids, kv_segment_ids, causal), scale)
  elif impl == "cudnn":
    out = _dot_product_attention(q, k, v, segment_ids, kv_segment_ids, causal, scale, "cudnn")
  else:
    if interpret is None:
      interpret = current_platform() != "tpu"
    out = _splash_on_mesh(q, k, v, segment_ids, kv_segment_ids, causal, scale, interpret, block)
  return jnp.where((segment_ids != 0)[:, :, None, None], out, 0).astype(q.dtype)


def causal_blocked_attention(q: jax.Array, k: jax.Array, v: jax.Array, segment_ids: jax.Array, scale: float,
                             block: int) -> jax.Array:
  """Causal segment-masked self-attention over query blocks of `block` rows, block i against keys [0, (i+1)·block)
  only. q [B, T, H, D], k/v [B, T, KV, D], segment_ids [B, T]; returns [B, T, H, D]. The mask is an additive
  bias (a select over the scores costs a pass in the backward as well); no query is fully masked, since each sees
  itself (padding queries see padding keys, and `attention` zeroes them). Same math as masked_attention."""
  b, t, h, d = q.shape
  kvh = k.shape[2]
  g = h // kvh
  tp = _round_up(t, block)
  if tp != t:   # padding rows are segment 0: real queries never see them
    q, k, v = (jnp.pad(x, ((0, 0), (0, tp - t), (0, 0), (0, 0))) for x in (q, k, v))
    segment_ids = jnp.pad(segment_ids, ((0, 0), (0, tp - t)))
  qg = q.reshape(b, tp, kvh, g, d).transpose(0, 2, 3, 1, 4)            # [B, KV, G, T, D]
  kt, vt = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)            # [B, KV, T, D]
  outs = []
  for i in range(tp // block):
    lo, hi = i * block, (i + 1) * block
    allowed = ((segment_ids[:, lo:hi, None] == segment_ids[:, None, :hi])
               & (jnp.arange(hi)[None, :] <= jnp.arange(lo, hi)[:, None])[None])            # [B, c, hi]
    bias = jnp.where(allowed, 0.0, -1e30)[:, None, None]
    logits = jnp.einsum("bkgqd,bksd->bkgqs", qg[:, :, :, lo:hi], kt[:, :, :hi],
                        preferred_element_type=jnp.float32) * scale + bias
    probs = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
    outs.append(jnp.einsum("bkgqs,bksd->bkgqd", probs, vt[:, :, :hi]))
  out = jnp.concatenate(outs, axis=3).transpose(0, 3, 1, 2, 4).reshape(b, tp, h, d)
  return out[:, :t]


def _query_chunked(q, k, v, seg_q, seg_kv, causal, scale, chunk):
  """The XLA reference over query chunks of `chunk` rows (lax.map, each chunk rematerialised in the backward
  pass): float32 scores [B, KV, G, chunk, S] at a time instead of [.., T, S] (a 13k-patch screenshot's full
  attention would otherwise hold GBs of scores on a CPU). Same math as masked_attention."""
  b, t, h, d = q.shape
  s = k.shape[1]
  tp = _round_up(t, chunk)
  n = tp // chunk
  qc = jnp.pad(q, ((0, 0), (0, tp - t), (0, 0), (0, 0))).reshape(b, n, chunk, h, d).swapaxes(0, 1)
  sc = jnp.pad(seg_q, ((0, 0), (0, tp - t))).reshape(b, n, chunk).swapaxes(0, 1)

  @jax.checkpoint
  def one(args):
    qi, si, start = args                                   # [B, c, H, D], [B, c], []
    mask = si[:, :, None] == seg_kv[:, None, :]
    if causal:
      mask = mask & (jnp.arange(s)[None, :] <= (start + jnp.arange(chunk))[:, None])[None]
    return masked_attention(qi, k, v, mask, scale)
  out = jax.lax.map(one, (qc, sc, jnp.arange(n) * chunk))  # [n, B, c, H, D]
  return out.swapaxes(0, 1).reshape(b, tp, h, d)[:, :t]


# ------------------------------------------------------------------------------------------------ cuDNN
def _dot_product_attention(q, k, v, seg_q, seg_kv, causal, scale, implementation):
  """jax.nn.dot_product_attention with the segment mask [B, 1, T, S]; `implementation` 'cudnn' on GPU ('xla'
  exercises the same call on CPU). Padding queries see the padding keys, so no row is fully masked."""
  mask = (seg_q[:, :, None] == seg_kv[:, None, :])[:, None]
  return jax.nn.dot_product_attention(q, k, v, mask=mask, is_causal=causal, scale=scale,
                                      implementation=implementation)


# ------------------------------------------------------------------------------------------------ splash (Pallas)
def _round_up(n: int, m: int) -> int:
  return -(-n // m) * m


@functools.lru_cache(maxsize=64)
def _splash_kernel(group: int, q_len: int, kv_len: int, causal: bool, block_q: int, block_kv: int,
                   interpret: bool):
  """The MQA splash kernel for `group` query heads sharing one kv head (built once per static shape)."""
  from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_kernel as sk
  from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_mask as sm
  one = sm.CausalMask((q_len, kv_len)) if causal else sm.FullMask((q_len, kv_len))
  sizes = sk.BlockSizes(block_q=block_q, block_kv=block_kv, block_kv_compute=block_kv, block_q_dkv=block_q,
                        block_kv_dkv=block_kv, block_kv_dkv_compute=block_kv, block_q_dq=block_q,
                        block_kv_dq=block_kv)
  with jax.ensure_compile_time_eval():  # mask tables are constants, never tracers cached across traces
    return sk.make_splash_mqa_single_device(sm.MultiHeadMask([one] * group), block_sizes=sizes,
                                            interpret=interpret)


def _splash_on_mesh(q, k, v, seg_q, seg_kv, causal, scale, interpret, block):
  """`_splash` under the enclosing `sharding.activation_sharding` mesh: a Mosaic kernel cannot be partitioned
  automatically, so it runs per shard in a shard_map (rows over the 'batch' rule, kv heads and their query
  groups over 'act_kv_heads' when they divide). Without a mesh context: `_splash` as is."""
  from gui_jax.models import sharding as shd
  mesh = shd.current_mesh()
  if mesh is None or mesh.size == 1:
    return _splash(q, k, v, seg_q, seg_kv, causal, scale, interpret, block)
  from jax.sharding import PartitionSpec as P
  rules = shd.current_rules()
  rows = shd.logical_to_spec(("batch",), rules, mesh, (q.shape[0],))[0]
  heads = shd.logical_to_spec(("act_kv_heads",), rules, mesh, (k.shape[2],))[0]
  spec4, spec2 = P(rows, None, heads, None), P(rows, None)
  fn = functools.partial(_splash, causal=causal, scale=scale, interpret=interpret, block=block)
  return jax.shard_map(lambda a, b_, c, d, e: fn(a, b_, c, d, e), mesh=mesh,
                       in_specs=(spec4, spec4, spec4, spec2, spec2), out_specs=spec4, check_vma=False)(
      q, k, v, seg_q, seg_kv)


def _splash(q, k, v, seg_q, seg_kv, causal, scale, interpret, block):
  from jax.experimental.pallas.ops.tpu.splash_attention.splash_attention_kernel import SegmentIds
  b, t, h, d = q.shape
  s, kvh = k.shape[1], k.shape[2]
  g = h // kvh
  bq = min(block, _round_up(t, _LANES))
  bk = min(block, _round_up(s, _LANES))
  tp, sp, dp = _round_up(t, bq), _round_up(s, bk), _round_up(d, _LANES)
  # Scale q in float32 (the kernel does not scale); zero-pad length (segment 0) and head_dim (q.k unchanged).
  qs = (q.astype(jnp.float32) * scale).astype(q.dtype)
  qs = jnp.pad(qs, ((0, 0), (0, tp - t), (0, 0), (0, dp - d)))
  kp = jnp.pad(k, ((0, 0), (0, sp - s), (0, 0), (0, dp - d)))
  vp = jnp.pad(v, ((0, 0), (0, sp - s), (0, 0), (0, dp - d)))
  sq = jnp.pad(seg_q, ((0, 0), (0, tp - t)))
  skv = jnp.pad(seg_kv, ((0, 0), (0, sp - s)))
  qg = qs.reshape(b, tp, kvh, g, dp).transpose(0, 2, 3, 1, 4)  # [B, KV, G, T, D]
  kg, vg = kp.transpose(0, 2, 1, 3), vp.transpose(0, 2, 1, 3)  # [B, KV, S, D]
  kernel = _splash_kernel(g, tp, sp, causal, bq, bk, interpret)

  def one_head(qh, kh, vh, sq_row, skv_row):  # [G, T, D], [S, D], [S, D], [T], [S]
    return kernel(qh, kh, vh, segment_ids=SegmentIds(q=sq_row, kv=skv_row))

  per_row = jax.vmap(one_head, in_axes=(0, 0, 0, None, None))    # over kv heads
  out = jax.vmap(per_row)(qg, kg, vg, sq, skv)                    # over batch -> [B, KV, G, T, D]
  out = out.transpose(0, 3, 1, 2, 4).reshape(b, tp, h, dp)
  return out[:, :t, :, :d]
