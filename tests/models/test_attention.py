"""Attention kernels with segment ids: every path matches the XLA reference (splash in Pallas interpret mode on CPU,
the cuDNN wrapper through the same jax.nn.dot_product_attention call with implementation='xla'); packed segments
equal separate rows; the vision layout's buckets give one compiled program for different image counts."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from gui_jax.models import attention as attn
from gui_jax.models.qwen2_5_vl import Qwen25VLForConditionalGeneration, preset, vision_layout

jax.config.update("jax_default_matmul_precision", "highest")
B, T, H, KV, D = 2, 200, 4, 2, 32  # GQA 4/2; T pads to 2 splash blocks of 128


def _inputs(dtype, seed=0):
  r = np.random.default_rng(seed)
  q, k, v = (jnp.asarray(r.standard_normal((B, T, n, D)), dtype) for n in (H, KV, KV))
  seg = np.zeros((B, T), np.int32)
  seg[0, :90], seg[0, 90:170] = 1, 2  # two packed sequences, then right padding
  seg[1, 30:] = 1                     # left padding
  return q, k, v, jnp.asarray(seg)


def _naive(q, k, v, seg, causal):
  """float64 softmax attention in numpy, one (row, segment) at a time (independent of the library's masking)."""
  q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
  seg = np.asarray(seg)
  out = np.zeros_like(q)
  g = H // KV
  for b in range(B):
    for s_id in set(seg[b].tolist()) - {0}:
      idx = np.flatnonzero(seg[b] == s_id)
      kk, vv = np.repeat(k[b, idx], g, axis=1), np.repeat(v[b, idx], g, axis=1)  # [n, H, D]
      s = np.einsum("qhd,khd->hqk", q[b, idx], kk) * D ** -0.5
      if causal:
        s = np.where(idx[None, None, :] <= idx[None, :, None], s, -np.inf)
      p = np.exp(s - s.max(-1, keepdims=True))
      out[b, idx] = np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), vv)
  return out


@pytest.mark.parametrize("causal", [True, False])
def test_xla_reference_and_cudnn_wrapper_match_naive_segment_attention(causal):
  q, k, v, seg = _inputs(jnp.float32)
  want = _naive(q, k, v, seg, causal)
  ref = attn.attention(q, k, v, seg, causal=causal, scale=D ** -0.5, impl="xla")
  assert np.abs(np.asarray(ref) - want).max() <= 1e-5
  # The cuDNN path's call (segment mask [B, 1, T, S], is_causal, native GQA) run by XLA on CPU.
  wrapped = attn._dot_product_attention(q, k, v, seg, seg, causal, D ** -0.5, "xla")
  wrapped = jnp.where((seg != 0)[:, :, None, None], wrapped, 0)
  assert np.abs(np.asarray(wrapped) - want).max() <= 1e-5
  qb, kb, vb = (x.astype(jnp.bfloat16) for x in (q, k, v))
  wrapped_bf16 = attn._dot_product_attention(qb, kb, vb, seg, seg, causal, D ** -0.5, "xla")
  wrapped_bf16 = jnp.where((seg != 0)[:, :, None, None], wrapped_bf16.astype(jnp.float32), 0)
  assert np.abs(np.asarray(wrapped_bf16) - np.asarray(ref)).max() <= 2e-2


def test_causal_query_blocks_equal_the_whole_score_matrix():
  """Causal self-attention of T >= 2 blocks runs over query blocks, each against the keys up to its end (T = 200 is
  not a multiple of the block 64; packed segments, left and right padding): the outputs and gradients of the whole
  [T, S] score matrix and of the float64 reference."""
  q, k, v, seg = _inputs(jnp.float32)

  def run(q, k, v, block=64):
    return attn.attention(q, k, v, seg, causal=True, scale=D ** -0.5, impl="xla", causal_block=block)

  def loss(q, k, v, block=64):
    return (run(q, k, v, block) ** 2).sum()
  whole, g_whole = run(q, k, v, 0), jax.grad(loss, argnums=(0, 1, 2))(q, k, v, 0)
  blocked = jax.jit(run)(q, k, v)
  shapes = {tuple(e.outvars[0].aval.shape) for e in jax.make_jaxpr(run)(q, k, v).eqns
            if e.primitive.name == "dot_general"}
  assert (B, KV, H // KV, 64, 256) in shapes and (B, KV, H // KV, 64, 64) in shapes  # the last and the first block
  g_blocked = jax.grad(loss, argnums=(0, 1, 2))(q, k, v)
  assert np.abs(np.asarray(blocked) - _naive(q, k, v, seg, True)).max() <= 1e-5
  assert np.abs(np.asarray(blocked) - np.asarray(whole)).max() <= 1e-5
  for a, b in zip(g_whole, g_blocked):
    assert np.abs(np.asarray(a) - np.asarray(b)).max() <= 1e-4 * max(1.0, float(np.abs(np.asarray(a)).max()))


@pytest.mark.parametrize("causal", [True, False])
def test_xla_query_chunks_equal_the_whole_score_matrix(causal, monkeypatch):
  """Above XLA_SCORE_BYTES the 'xla' path runs over query chunks (T = 200 is not a multiple of the chunk 64):
  the same outputs and gradients as the unchunked reference and the float64 one."""
  q, k, v, seg = _inputs(jnp.float32)

  def run(q, k, v):
    return attn.attention(q, k, v, seg, causal=causal, scale=D ** -0.5, impl="xla")

  def loss(q, k, v):
    return (run(q, k, v) ** 2).sum()
  whole, g_whole = run(q, k, v), jax.grad(loss, argnums=(0, 1, 2))(q, k, v)
  monkeypatch.setattr(attn, "XLA_SCORE_BYTES", 0)
  monkeypatch.setattr(attn, "XLA_QUERY_CHUNK", 64)
  jaxpr = str(jax.make_jaxpr(run)(q, k, v))
  assert "scan" in jaxpr or "while" in jaxpr  # really the chunked path
  chunked, g_chunked = run(q, k, v), jax.grad(loss, argnums=(0, 1, 2))(q, k, v)
  assert np.abs(np.asarray(chunked) - _naive(q, k, v, seg, causal)).max() <= 1e-5
  assert np.abs(np.asarray(chunked) - np.asarray(whole)).max() <= 1e-6
  for a, b in zip(g_whole, g_chunked):
    assert np.abs(np.asarray(a) - np.asarray(b)).max() <= 1e-5


def test_splash_kernel_in_interpret_mode_matches_reference_f32_bf16_and_grads():
  q, k, v, seg = _inputs(jnp.float32, seed=1)

  def both(q, k, v, seg, causal, **kw):
    ref = attn.attention(q, k, v, seg, causal=causal, scale=D ** -0.5, impl="xla")
    got = attn.attention(q, k, v, seg, causal=causal, scale=D ** -0.5, impl="splash", interpret=True, block=128,
                         **kw)
    assert got.shape == ref.shape and got.dtype == q.dtype
    return np.abs(np.asarray(got, np.float32) - np.asarray(ref, np.float32)).max()

  # 2 x 2 blocks of 128 (T = 200 padded to 256): causal block skipping, packed segments, left/right padding.
  assert both(q, k, v, seg, True) <= 1e-5
  t = 128  # one block for the rest (interpret mode is slow)
  q, k, v, seg = q[:, :t], k[:, :t], v[:, :t], seg[:, :t]
  assert both(q, k, v, seg, False) <= 1e-5
  ref = attn.attention(q, k, v, seg, causal=True, scale=D ** -0.5, impl="xla")
  qb, kb, vb = (x.astype(jnp.bfloat16) for x in (q, k, v))
  got = attn.attention(qb, kb, vb, seg, causal=True, scale=D ** -0.5, impl="splash", interpret=True, block=128)
  assert got.dtype == jnp.bfloat16 and np.abs(np.asarray(got, np.float32) - np.asarray(ref)).max() <= 2e-2

  # Gradients through the kernel's custom VJP (row 0: two packed segments).
  def grads(impl):
    def f(q, k, v):
      o = attn.attention(q, k, v, seg[:1], causal=True, scale=D ** -0.5, impl=impl, interpret=True, block=128)
      return jnp.sum(o * jnp.cos(o))
    return jax.grad(f, argnums=(0, 1, 2))(q[:1], k[:1], v[:1])

  for g_splash, g_ref in zip(grads("splash"), grads("xla")):
    assert np.abs(np.asarray(g_splash) - np.asarray(g_ref)).max() <= 1e-4


def test_auto_picks_the_platform_kernel_and_bad_inputs_raise():
  assert attn.resolve_impl("auto", jnp.bfloat16, "tpu") == "splash"
  assert attn.resolve_impl("auto", jnp.bfloat16, "gpu") == "cudnn"
  assert attn.resolve_impl("auto", jnp.float32, "gpu") == "xla"  # cuDNN flash has no float32
  assert attn.resolve_impl("auto", jnp.float32, "cpu") == "xla"
  assert attn.resolve_impl("splash", jnp.float32, "cpu") == "splash"
  with attn.target_platform("tpu"):  # AOT lowering for a TPU from a CPU host
    assert attn.resolve_impl("auto", jnp.bfloat16) == "splash" and attn.current_platform() == "tpu"
  assert attn.current_platform() == jax.default_backend()
  q, k, v, seg = _inputs(jnp.float32)
  with pytest.raises(ValueError, match="attention impl 'flash' unknown"):
    attn.attention(q, k, v, seg, causal=True, scale=1.0, impl="flash")
  with pytest.raises(ValueError, match=r"segment_ids shape \(2, 199\)"):
    attn.attention(q, k, v, seg[:, 1:], causal=True, scale=1.0)
  with pytest.raises(ValueError, match="causal masking needs q_len == kv_len"):
    attn.attention(q[:, :5], k, v, seg[:, :5], kv_segment_ids=seg, causal=True, scale=1.0)


def test_vision_buckets_share_one_program_and_do_not_change_features():
  cfg = preset("tiny", attention_impl="xla")
  model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0))
  traces = []

  @nnx.jit
  def features(m, pixels, layout):
    traces.append(1)
    return m.image_features(pixels, layout)

  rng = np.random.default_rng(0)
  n_pad = 256
  # 3 or 4 frames (largest 8x8 patches), 128-144 real patches padded to 256: W = F = 4 blocks, P = 64.
  for grid in ([[1, 8, 8], [1, 4, 8], [1, 4, 8]], [[1, 4, 8], [1, 4, 4], [1, 8, 8], [1, 4, 4]],
               [[1, 8, 8], [1, 8, 8], [1, 4, 4]]):
    grid = np.array(grid)
    n = int(grid.prod(1).sum())
    pixels = np.zeros((n_pad, cfg.vision.patch_dim), np.float32)
    pixels[:n] = rng.standard_normal((n, cfg.vision.patch_dim))
    got = np.asarray(features(model, pixels, vision_layout(grid, cfg.vision, pad_patches_to=n_pad)))
    if len(grid) == 4:  # against the exact layout: no padding, no buckets (its own program)
      exact = features(model, pixels[:n], vision_layout(grid, cfg.vision))
      assert np.abs(got[:n // 4] - np.asarray(exact)).max() <= 1e-5
    # Per-image full attention: one block per frame, none wider than the bucketed largest frame.
    lay = vision_layout(grid, cfg.vision, pad_patches_to=n_pad)
    assert lay.full_gather.shape == (4, 64) and lay.window_gather.shape == (4, 64)
    assert lay.full_valid.sum() == n and (lay.full_slot[n:] == 4 * 64).all()  # padding: in no block
  assert len(traces) == 2  # the bucketed program (all three grids) + the exact one
