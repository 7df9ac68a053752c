"""Parity of the Flax Qwen2.5-VL port with transformers (float32): logits, loss, gradients; KV-cache decoding
agrees with the full forward."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import torch
from flax import nnx

from gui_jax.models.qwen2_5_vl import get_rope_index, load_hf_checkpoint, vision_layout
from support.qwen_hf import IMAGE_ID, build_inputs, hf_config, hf_forward, make_hf_model

jax.config.update("jax_default_matmul_precision", "highest")

# name: (config kwargs, rows, grids (t, h, w) in patches, padding side)
CASES = {
    # GQA 4/2, untied; 2 images in row 0 (3 + 2x... windows), non-square; right padding.
    "gqa_untied_right": (dict(tie=False), [[5, "img", 7, "img", 3], [4, "img", 6]],
                         [(1, 8, 12), (1, 6, 4), (1, 4, 8)], "right"),
    # MQA 4/1, tied, 4 vision blocks with 2 full-attention blocks; left padding; multi-turn with 3 images.
    "mqa_tied_left": (dict(tie=True, kv=1, depth=4, fullatt=(1, 3), mrope=(4, 2, 2), theta=500.0),
                      [[3, "img", 4, "img", 2, "img", 2], [6, "img", 9]],
                      [(1, 12, 8), (1, 4, 4), (1, 8, 8), (1, 10, 6)], "left"),
    # 3 heads / 1 kv head of dim 16, wider window (3 merged units), 3 text layers, untied; left padding.
    "odd_heads_left": (dict(tie=False, hidden=48, heads=3, kv=1, inter=80, layers=3, window=24, vheads=4,
                            vhidden=32, depth=3, fullatt=(2,)),
                       [[2, "img", 5], [7, "img", 1, "img", 3]], [(1, 14, 10), (1, 6, 12), (1, 4, 6)], "left"),
}
PATCH_DIM = 3 * 2 * 4 * 4


def _ce_loss(logits, labels):
  """Mean cross-entropy of shifted labels, -100 ignored (transformers' ForCausalLMLoss)."""
  logits, labels = logits[:, :-1], labels[:, 1:]
  valid = labels != -100
  ce = optax.softmax_cross_entropy_with_integer_labels(logits, jnp.where(valid, labels, 0))
  return jnp.sum(jnp.where(valid, ce, 0.0)) / jnp.sum(valid)


GRAD_SAMPLE = [  # (HF parameter name, our param path, transposed?)
    ("model.language_model.embed_tokens.weight", ("language_model", "embed_tokens"), False),
    ("model.language_model.layers.0.self_attn.q_proj.weight", ("language_model", "layers", 0, "self_attn",
                                                               "q_proj", "kernel"), True),
    ("model.language_model.layers.1.self_attn.k_proj.bias", ("language_model", "layers", 1, "self_attn",
                                                             "k_proj", "bias"), False),
    ("model.language_model.layers.1.mlp.down_proj.weight", ("language_model", "layers", 1, "mlp", "down_proj",
                                                            "kernel"), True),
    ("model.visual.blocks.0.attn.qkv.weight", ("visual", "blocks", 0, "attn", "qkv", "kernel"), True),
    ("model.visual.blocks.1.norm2.weight", ("visual", "blocks", 1, "norm2", "scale"), False),
    ("model.visual.merger.mlp.0.weight", ("visual", "merger", "mlp_in", "kernel"), True),
]


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tmp_path_factory):
  kw, rows, grids, side = CASES[request.param]
  cfg = hf_config(**kw)
  hf = make_hf_model(cfg, seed=len(request.param))
  path = str(tmp_path_factory.mktemp(request.param))
  hf.save_pretrained(path)
  model, our_cfg = load_hf_checkpoint(path)
  inputs = build_inputs(rows, grids, pad_side=side, seed=3, patch_dim=PATCH_DIM)
  return request.param, hf, model, our_cfg, inputs, path


def test_logits_loss_grads_and_kv_cache_match_transformers(case):
  name, hf, model, cfg, inputs, _ = case
  mask = inputs["attention_mask"].astype(bool)
  labels = np.where(mask, inputs["input_ids"], -100)
  labels[inputs["input_ids"] == IMAGE_ID] = -100

  hf.zero_grad()
  out = hf_forward(hf, inputs, labels=labels)
  out.loss.backward()
  ref_logits = out.logits.detach().numpy()
  hf_params = dict(hf.named_parameters())

  layout = vision_layout(inputs["image_grid_thw"], cfg.vision)
  pos, _ = get_rope_index(inputs["input_ids"], inputs["image_grid_thw"], inputs["attention_mask"], cfg)

  @nnx.jit
  def loss_and_grad(m, ids, mask, pixels, layout, pos, labels):
    def loss_fn(m):
      o = m(ids, attention_mask=mask, pixel_values=pixels, position_ids=pos, vision_layout=layout)
      return _ce_loss(o.logits, labels), o.logits
    return nnx.value_and_grad(loss_fn, has_aux=True)(m)

  (loss, logits), grads = loss_and_grad(model, inputs["input_ids"], inputs["attention_mask"],
                                        inputs["pixel_values"], layout, pos, labels)
  logit_diff = np.abs(np.asarray(logits) - ref_logits)[mask].max()
  print(f"{name}: max |logit diff| = {logit_diff:.3g} (max |logit| {np.abs(ref_logits).max():.3g})")
  assert logit_diff <= 1e-4
  assert abs(float(loss) - out.loss.item()) <= 1e-4 * abs(out.loss.item())

  worst = 0.0
  for hf_name, path, transposed in GRAD_SAMPLE:
    g_ref = hf_params[hf_name].grad.numpy()
    g = grads
    for p in path:
      g = g[p]
    g = np.asarray(g[...])
    g = g.T if transposed else g
    assert g.shape == g_ref.shape, hf_name
    rel = np.abs(g - g_ref).max() / np.abs(g_ref).max()
    worst = max(worst, rel)
    assert rel <= 1e-4, (hf_name, rel)
  print(f"{name}: loss {float(loss):.6f} vs {out.loss.item():.6f}; worst relative grad diff {worst:.3g}")
  if name.endswith("left"):  # decoding continues after the last real token: needs left padding
    cache_diff = _check_kv_cache_decoding(model, inputs, layout, np.asarray(logits))
    print(f"{name}: kv-cache decode max |logit diff| {cache_diff:.3g}")


def test_scan_layers_logits_match_transformers(case):
  """The stacked (scan_layers) model loaded from the same checkpoint: vision blocks scanned as runs
  (gqa_untied_right: full block 1 of 3), as [groups, period] (mqa_tied_left: blocks 1, 3 of 4) or one run after
  another (odd_heads_left); patch count padded to a bucket."""
  name, hf, _, _, inputs, path = case
  model, cfg = load_hf_checkpoint(path, scan_layers=True)
  with torch.no_grad():
    ref = hf_forward(hf, inputs).logits.numpy()
  n = inputs["pixel_values"].shape[0]
  pixels = np.concatenate([inputs["pixel_values"], np.zeros((n // 2 // 4 * 4, PATCH_DIM), np.float32)])
  layout = vision_layout(inputs["image_grid_thw"], cfg.vision, pad_patches_to=pixels.shape[0])
  pos, _ = get_rope_index(inputs["input_ids"], inputs["image_grid_thw"], inputs["attention_mask"], cfg)
  fwd = nnx.jit(lambda m, ids, mask, pix, lay, pos: m(ids, attention_mask=mask, pixel_values=pix,
                                                      vision_layout=lay, position_ids=pos).logits)
  logits = fwd(model, inputs["input_ids"], inputs["attention_mask"], pixels, layout, pos)
  diff = np.abs(np.asarray(logits) - ref)[inputs["attention_mask"].astype(bool)].max()
  print(f"{name} (scan_layers): max |logit diff| = {diff:.3g}")
  assert diff <= 1e-4


def _check_kv_cache_decoding(model, inputs, layout, full_logits):
  """Prefill a left-padded prompt into the static cache (jitted), decode the last 2 text tokens one by one:
  the logits equal the full forward's."""
  ids, mask = inputs["input_ids"], inputs["attention_mask"]
  cut = ids.shape[1] - 2  # every test row ends in >= 2 text tokens
  cfg = model.cfg
  pos, _ = get_rope_index(ids[:, :cut], inputs["image_grid_thw"], mask[:, :cut], cfg)

  @nnx.jit
  def prefill(m, ids, mask, pixels, layout, pos, cache):
    return m(ids, attention_mask=mask, pixel_values=pixels, vision_layout=layout, position_ids=pos, cache=cache)

  step = nnx.jit(lambda m, tok, c: m(tok, cache=c))
  pre = prefill(model, ids[:, :cut], mask[:, :cut], inputs["pixel_values"], layout, pos,
                model.init_cache(ids.shape[0], ids.shape[1] + 3))
  diff = np.abs(np.asarray(pre.logits) - full_logits[:, :cut])[mask[:, :cut].astype(bool)].max()
  c = pre.cache
  for j in range(cut, ids.shape[1]):
    o = step(model, jnp.asarray(ids[:, j:j + 1]), c)
    c = o.cache
    diff = max(diff, np.abs(np.asarray(o.logits[:, 0]) - full_logits[:, j]).max())
  assert int(c.index) == ids.shape[1]
  assert diff <= 1e-4, diff
  return diff


def test_tiny_preset_runs_jitted_with_logical_axes():
  from gui_jax.models.qwen2_5_vl import Qwen25VLForConditionalGeneration, logical_axes, preset
  from gui_jax.models.qwen2_5_vl.config import TINY_IMAGE_PAD_ID
  cfg = preset("tiny")
  assert cfg.image_token_id == TINY_IMAGE_PAD_ID < cfg.text.vocab_size
  model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0))
  axes = logical_axes(model)
  assert all(a is not None for a in axes.values())
  assert axes["language_model.layers.0.self_attn.k_proj.kernel"] == ("embed", "kv_heads")
  assert axes["language_model.embed_tokens"] == ("vocab", "embed")
  grid = np.array([[1, 4, 8]])  # 32 patches -> 8 image tokens
  ids = np.array([[5, cfg.vision_start_token_id] + [cfg.image_token_id] * 8 + [cfg.vision_end_token_id, 7]])
  pixels = np.random.default_rng(0).standard_normal((32, cfg.vision.patch_dim)).astype(np.float32)
  pos, _ = get_rope_index(ids, grid, None, cfg)
  fwd = nnx.jit(lambda m, i, p, lay, pos: m(i, pixel_values=p, vision_layout=lay, position_ids=pos))
  out = fwd(model, ids, pixels, vision_layout(grid, cfg.vision), pos)
  eager = model(ids, pixel_values=pixels, image_grid_thw=grid)  # eager path, layout built from the grid
  assert out.logits.shape == (1, 12, cfg.text.vocab_size)
  np.testing.assert_allclose(np.asarray(out.logits), np.asarray(eager.logits), atol=1e-5, rtol=0)


def test_remat_gives_the_same_gradients_and_untraceable_positions_raise():
  from gui_jax.models.qwen2_5_vl import Qwen25VLConfig, Qwen25VLForConditionalGeneration
  cfg = Qwen25VLConfig.from_hf_dict(hf_config(tie=False).to_dict())
  model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(1))
  grid = np.array([[1, 4, 4]])
  ids = np.array([[3, cfg.vision_start_token_id] + [cfg.image_token_id] * 4 + [cfg.vision_end_token_id, 9]])
  pixels = np.random.default_rng(1).standard_normal((16, cfg.vision.patch_dim)).astype(np.float32)
  pos, _ = get_rope_index(ids, grid, None, cfg)

  @nnx.jit
  def grads(m, layout):
    return nnx.grad(lambda m: m(ids, pixel_values=pixels, vision_layout=layout, position_ids=pos).logits.std())(m)

  layout = vision_layout(grid, cfg.vision)
  plain = grads(model, layout)
  model.set_remat(True)
  remat = grads(model, layout)
  diff = max(jax.tree.leaves(jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()), plain, remat)))
  assert diff <= 1e-6
  with pytest.raises(ValueError, match="need M-RoPE position_ids"):
    nnx.jit(lambda m, i, p: m(i, pixel_values=p, vision_layout=layout))(model, ids, pixels)
