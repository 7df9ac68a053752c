"""scan_layers (stacked decoder layers / vision blocks under lax.scan) and packed rows (segment ids):
the scanned model equals the layer loop (logits, grads, KV-cache decoding), remat policies keep the gradients,
and a row packing two sequences gives each token the logits it gets alone."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from gui_jax.models.qwen2_5_vl import Qwen25VLForConditionalGeneration, get_rope_index, logical_axes, preset
from gui_jax.models.qwen2_5_vl import vision_layout
from gui_jax.models.qwen2_5_vl.model import segment_positions

jax.config.update("jax_default_matmul_precision", "highest")
CFG = preset("tiny", attention_impl="xla")


def _seq(cfg, rng, n_text, grid=None):
  """Token ids of one sequence: text, optionally an image (vision_start, pads, vision_end), text."""
  ids = rng.integers(0, 4000, n_text).tolist()
  if grid is not None:
    ids[2:2] = [cfg.vision_start_token_id] + [cfg.image_token_id] * (int(np.prod(grid)) // 4) + [
        cfg.vision_end_token_id]
  return np.array(ids, np.int64)


def _pixels(rng, n):
  return rng.standard_normal((n, CFG.vision.patch_dim)).astype(np.float32)


def test_packed_row_gives_each_sequence_its_own_logits():
  """Sequence A (text + image) and B (text + image) packed into one row with segment ids 1, 2 and restarting
  M-RoPE positions, then padding: every token's logits equal those of the sequence run alone (f32)."""
  cfg = CFG.replace(scan_layers=True)
  model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0))
  rng = np.random.default_rng(0)
  grid_a, grid_b = np.array([[1, 4, 8]]), np.array([[1, 4, 4]])
  a, b = _seq(cfg, rng, 9, grid_a[0]), _seq(cfg, rng, 6, grid_b[0])
  pix_a, pix_b = _pixels(rng, 32), _pixels(rng, 16)
  fwd = nnx.jit(lambda m, ids, mask, seg, pos, pix, lay: m(ids, attention_mask=mask, segment_ids=seg,
                                                            position_ids=pos, pixel_values=pix,
                                                            vision_layout=lay).logits)
  # Alone: A and B as two right-padded rows of one batch. Packed: one row [A, B, padding], segment ids 1, 2, 0
  # and each sequence's own M-RoPE positions (restarting at its start).
  length = a.size + b.size + 5
  grid = np.concatenate([grid_a, grid_b])
  pixels = np.concatenate([pix_a, pix_b])
  rows, masks, poss = np.zeros((2, length), np.int64), np.zeros((2, length), bool), []
  for i, (ids, g) in enumerate(((a, grid_a), (b, grid_b))):
    rows[i, :ids.size], masks[i, :ids.size] = ids, True
    poss.append(get_rope_index(rows[i:i + 1], g, masks[i:i + 1], cfg)[0])
  alone = np.asarray(fwd(model, rows, masks, None, np.concatenate(poss, 1), pixels, vision_layout(grid, cfg.vision)))
  packed_ids = np.concatenate([a, b, np.zeros(5, np.int64)])[None]
  seg = np.concatenate([np.full(a.size, 1), np.full(b.size, 2), np.zeros(5)]).astype(np.int32)[None]
  pos = np.concatenate([poss[0][:, :, :a.size], poss[1][:, :, :b.size], np.zeros((3, 1, 5), np.int64)], axis=2)
  packed = np.asarray(fwd(model, packed_ids, seg != 0, seg, pos, pixels, vision_layout(grid, cfg.vision)))[0]
  diff = max(np.abs(packed[:a.size] - alone[0, :a.size]).max(),
             np.abs(packed[a.size:a.size + b.size] - alone[1, :b.size]).max())
  assert diff <= 1e-5, diff
  with pytest.raises(ValueError, match="segment_ids with images need position_ids"):
    model(packed_ids, segment_ids=seg, image_features=jnp.zeros((12, cfg.text.hidden_size)))
  # Text-only packed rows: without position_ids, text positions restart at each segment's first token.
  seg = jnp.array([[1, 1, 1, 2, 2, 0, 3, 3], [0, 0, 1, 1, 1, 1, 2, 2]])
  np.testing.assert_array_equal(segment_positions(seg, seg != 0), [[0, 1, 2, 0, 1, 0, 0, 1], [0, 0, 0, 1, 2, 3, 0, 1]])


def test_scanned_model_equals_layer_loop_logits_grads_remat_and_kv_cache():
  rng = np.random.default_rng(1)
  grid = np.array([[1, 8, 8], [1, 4, 8]])
  ids = np.stack([_seq(CFG, rng, 8, grid[0])[:-4].tolist() + [CFG.vision_start_token_id] + [CFG.image_token_id] * 8
                  + [CFG.vision_end_token_id, 11, 12, 13]])
  mask = np.ones(ids.shape, bool)
  mask[0, :2] = False  # left padding
  pixels = _pixels(rng, 128)
  layout = vision_layout(grid, CFG.vision, pad_patches_to=128)
  pos, _ = get_rope_index(ids, grid, mask, CFG)

  @nnx.jit
  def loss_and_grads(m):
    def f(m):
      logits = m(ids, attention_mask=mask, pixel_values=pixels, vision_layout=layout, position_ids=pos).logits
      return jnp.sum(jnp.where(mask[..., None], jnp.sin(logits), 0.0)), logits
    return nnx.value_and_grad(f, has_aux=True)(m)

  loop = Qwen25VLForConditionalGeneration(CFG, rngs=nnx.Rngs(3))
  # Same seed: the stacked params are the loop's params, slice i = layer i; depth 4 with block 3 full -> runs.
  scan = Qwen25VLForConditionalGeneration(CFG.replace(scan_layers=True, remat_policy="dots_saveable"),
                                          rngs=nnx.Rngs(3))
  axes = logical_axes(scan)
  assert axes["language_model.layers.self_attn.k_proj.kernel"] == ("layers", "embed", "kv_heads")
  assert axes["visual.blocks.attn.qkv.kernel"] == ("layers", "vision_embed", "vision_qkv")
  (l_loop, logits_loop), g_loop = loss_and_grads(loop)
  (l_scan, logits_scan), g_scan = loss_and_grads(scan)
  assert np.abs(np.asarray(logits_loop) - np.asarray(logits_scan))[mask].max() <= 1e-5
  def rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max()

  for i in range(CFG.text.num_hidden_layers):  # stacked grad slice i == layer i's grad
    assert rel(g_scan["language_model"]["layers"]["mlp"]["down_proj"]["kernel"][...][i],
               g_loop["language_model"]["layers"][i]["mlp"]["down_proj"]["kernel"][...]) <= 1e-5
  for i in range(CFG.vision.depth):
    assert rel(g_scan["visual"]["blocks"]["attn"]["qkv"]["kernel"][...][i],
               g_loop["visual"]["blocks"][i]["attn"]["qkv"]["kernel"][...]) <= 1e-5
  # KV cache with scan: prefill all but the last 2 tokens, decode them one by one -> the full forward's logits.
  cut = ids.shape[1] - 2
  pre_pos, _ = get_rope_index(ids[:, :cut], grid, mask[:, :cut], CFG)
  prefill = nnx.jit(lambda m, c: m(ids[:, :cut], attention_mask=mask[:, :cut], pixel_values=pixels,
                                   vision_layout=layout, position_ids=pre_pos, cache=c))
  step = nnx.jit(lambda m, tok, c: m(tok, cache=c))
  from gui_jax.models.qwen2_5_vl.text import KVCache
  cache = scan.init_cache(1, ids.shape[1] + 2)
  assert cache.k.shape == (CFG.text.num_hidden_layers, 1, 2, ids.shape[1] + 2, 32)
  per_layer = loop.init_cache(1, ids.shape[1] + 2)  # unrolled layers: a tuple of per-layer arrays
  assert len(per_layer.k) == CFG.text.num_hidden_layers and per_layer.k[0].shape == (1, 2, ids.shape[1] + 2, 32)
  stacked = KVCache.init(CFG.text, 1, ids.shape[1] + 2, stacked=True)  # unrolled layers on a stacked cache
  for model, cache in ((scan, cache), (loop, per_layer), (loop, stacked)):
    out = prefill(model, cache)
    diff = np.abs(np.asarray(out.logits) - np.asarray(logits_loop)[:, :cut])[mask[:, :cut]].max()
    c = out.cache
    for j in range(cut, ids.shape[1]):
      o = step(model, jnp.asarray(ids[:, j:j + 1]), c)
      c = o.cache
      diff = max(diff, np.abs(np.asarray(o.logits[:, 0]) - np.asarray(logits_loop)[:, j]).max())
    assert diff <= 1e-5, diff
