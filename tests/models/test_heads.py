"""Value head and label-token scoring on a tiny Qwen2.5-VL."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from gui_jax.models import heads
from gui_jax.models.qwen2_5_vl.config import tiny
from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration

jax.config.update("jax_default_matmul_precision", "highest")
POS, NEG = 17, 905


def _cfg(tie: bool):
  base = tiny(vocab_size=1024)
  text = dataclasses.replace(base.text, num_hidden_layers=2)
  return base.replace(text=text, tie_word_embeddings=tie)


@pytest.fixture(scope="module", params=[True, False], ids=["tied", "untied"])
def model(request):
  return Qwen25VLForConditionalGeneration(_cfg(request.param), rngs=nnx.Rngs(0))


def _inputs():
  ids = np.array([[0, 0, 5, 9, 33, 2], [4, 8, 15, 16, 23, 42]], np.int32)
  mask = np.array([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]], bool)
  return ids, mask


def test_score_labels_matches_full_logits(model):
  ids, mask = _inputs()
  full = model(ids, attention_mask=mask).logits  # [B, L, V]
  s = heads.score_labels(model, ids, POS, NEG, attention_mask=mask)
  last = full[:, -1]  # both rows end at column 5
  lp, ln = np.asarray(last[:, POS]), np.asarray(last[:, NEG])
  np.testing.assert_allclose(s["pos_logit"], lp, atol=1e-5)
  np.testing.assert_allclose(s["neg_logit"], ln, atol=1e-5)
  p_two = np.exp(lp) / (np.exp(lp) + np.exp(ln))  # softmax over the two label logits
  np.testing.assert_allclose(s["p_pos"], p_two, atol=1e-6)
  ref = heads.label_scores(last, POS, NEG)
  np.testing.assert_allclose(ref["p_pos"], p_two, atol=1e-6)
  # Explicit label positions (one step earlier) select those logits.
  s2 = heads.score_labels(model, ids, POS, NEG, attention_mask=mask, label_positions=np.array([3, 4]))
  np.testing.assert_allclose(s2["pos_logit"], [full[0, 3, POS], full[1, 4, POS]], atol=1e-5)


def test_value_model_head_and_init_from_labels(model):
  ids, mask = _inputs()
  vm = heads.ValueModel(model)
  v0 = vm(ids, attention_mask=mask)
  assert v0.shape == ids.shape and v0.dtype == jnp.float32 and np.all(np.asarray(v0) == 0)
  heads.init_value_head_from_labels(vm, POS, NEG)
  v = np.asarray(vm(ids, attention_mask=mask))
  logits = np.asarray(model(ids, attention_mask=mask).logits)
  np.testing.assert_allclose(v, logits[..., POS] - logits[..., NEG], atol=1e-4)

  # Gradients reach the head and the shared backbone.
  def loss(m):
    return jnp.sum(m(ids, attention_mask=mask)[:, -1] ** 2)
  grads = nnx.grad(loss)(vm)
  assert float(jnp.abs(grads["value_kernel"][...]).sum()) > 0
  assert float(jnp.abs(grads["backbone"]["language_model"]["norm"]["scale"][...]).sum()) > 0


def test_value_head_random_init_needs_rngs(model):
  with pytest.raises(ValueError, match="needs rngs"):
    heads.ValueModel(model, init_scale=0.02)
  vm = heads.ValueModel(model, rngs=nnx.Rngs(1), init_scale=0.02)
  assert float(jnp.std(vm.value_kernel[...])) > 0.01


def test_label_token_nll_exact():
  logits = jnp.log(jnp.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]))
  labels = jnp.array([True, False])
  np.testing.assert_allclose(heads.label_token_nll(logits, labels, 0, 2), [-np.log(0.6), -np.log(0.6)], rtol=1e-6)
  # pair: softmax over (pos=0, neg=2) only: row0 0.6/0.7, row1 neg 0.6/0.8.
  np.testing.assert_allclose(heads.label_token_nll(logits, labels, 0, 2, over="pair"),
                             [-np.log(0.6 / 0.7), -np.log(0.6 / 0.8)], rtol=1e-5)
  with pytest.raises(ValueError, match="'vocab' or 'pair'"):
    heads.label_token_nll(logits, labels, 0, 2, over="x")
