"""Sampler: greedy parity with transformers' generate, logprobs = training forward, padding invariance, filters."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/ (for support/)

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from support.qwen_hf import IMAGE_ID, VIDEO_ID, build_inputs, hf_config, make_hf_model

from gui_jax.models import sampling
from gui_jax.models.qwen2_5_vl import hf_io
from gui_jax.models.sampler import Sampler

jax.config.update("jax_default_matmul_precision", "highest")
PATCH_DIM = 3 * 2 * 4 * 4
NEW = 32
# One bucket per axis everywhere: every sampler in this file shares one compiled prefill / decode per input kind.
BUCKETS = {"prompt_buckets": (32,), "new_token_buckets": (32,), "batch_buckets": (4,)}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
  """(transformers model, our model) from one save/load of the same random weights."""
  hf = make_hf_model(hf_config(tie=False), seed=0)
  path = str(tmp_path_factory.mktemp("ckpt"))
  hf.save_pretrained(path)
  model, _ = hf_io.load_hf_checkpoint(path)
  return hf, model


@pytest.fixture(scope="module")
def sampler(models):
  # No EOS inside the tiny vocabulary's range unless a test asks for it: runs are full length.
  return Sampler(models[1], eos_ids=[-1], pad_id=0, **BUCKETS)


def _hf_generate(hf, inputs):
  t = {k: torch.from_numpy(v) for k, v in inputs.items()}
  kw = {"input_ids": t["input_ids"], "attention_mask": t["attention_mask"], "max_new_tokens": NEW, "do_sample": False,
            "pad_token_id": 0, "eos_token_id": None, "suppress_tokens": [IMAGE_ID, VIDEO_ID]}  # our default bans
  if "pixel_values" in t:
    kw.update(pixel_values=t["pixel_values"], image_grid_thw=t["image_grid_thw"],
              mm_token_type_ids=(t["input_ids"] == IMAGE_ID).long())
  with torch.no_grad():
    out = hf.generate(**kw)
  return out[:, t["input_ids"].shape[1]:].numpy()


def test_greedy_matches_transformers_generate_multimodal(models, sampler):
  hf, _ = models
  inputs = build_inputs([[5, "img", 3], [2, "img", 6]], [(1, 4, 8), (1, 8, 4)], pad_side="left", seed=1,
                        patch_dim=PATCH_DIM)
  want = _hf_generate(hf, inputs)
  got = sampler.generate(inputs["input_ids"], attention_mask=inputs["attention_mask"],
                         pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"],
                         max_new_tokens=NEW)
  np.testing.assert_array_equal(got.tokens, want)
  assert got.lengths.tolist() == [NEW, NEW] and got.finish_reasons == ["length", "length"]


def test_greedy_matches_transformers_generate_text(models, sampler):
  hf, _ = models
  inputs = build_inputs([[9], [4]], [], pad_side="left", seed=2, patch_dim=PATCH_DIM)
  inputs = {k: inputs[k] for k in ("input_ids", "attention_mask")}
  want = _hf_generate(hf, inputs)
  got = sampler.generate(inputs["input_ids"], attention_mask=inputs["attention_mask"], max_new_tokens=NEW)
  np.testing.assert_array_equal(got.tokens, want)


def test_sampled_logprobs_equal_training_forward(models, sampler):
  """Sampled (temperature 0.8, top-p 0.9) tokens: sampler logprobs == log_softmax of a full forward."""
  _, model = models
  inputs = build_inputs([[4, "img", 2], [6]], [(1, 8, 8)], pad_side="left", seed=3, patch_dim=PATCH_DIM)
  out = sampler.generate(inputs["input_ids"], attention_mask=inputs["attention_mask"],
                         pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"],
                         max_new_tokens=20, temperature=0.8, top_p=0.9, seed=7)
  assert out.lengths.tolist() == [20, 20]
  ids = np.concatenate([inputs["input_ids"], out.tokens], axis=1)
  mask = np.concatenate([inputs["attention_mask"], np.ones_like(out.tokens)], axis=1)
  full = model(ids, attention_mask=mask, pixel_values=inputs["pixel_values"],
               image_grid_thw=inputs["image_grid_thw"])
  p = inputs["input_ids"].shape[1]
  want = sampling.token_logprobs(full.logits[:, p - 1:-1], jnp.asarray(out.tokens))
  np.testing.assert_allclose(out.logprobs, np.asarray(want), atol=1e-5, rtol=0)
  # Sampling did something non-greedy (the test would be vacuous otherwise).
  greedy = sampler.generate(inputs["input_ids"], attention_mask=inputs["attention_mask"],
                            pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"],
                            max_new_tokens=20)
  assert not np.array_equal(greedy.tokens, out.tokens)


@pytest.mark.parametrize("padding_side", ["left", "right"])
def test_batched_with_padding_equals_unbatched(models, padding_side):
  _, model = models
  s = Sampler(model, eos_ids=[-1], pad_id=0, padding_side=padding_side, **BUCKETS)
  rng = np.random.default_rng(5)
  prompts = [rng.integers(0, 240, n).tolist() for n in (3, 11, 7)]
  batched = s.generate(prompts, max_new_tokens=12)
  for i, p in enumerate(prompts):
    single = s.generate([p], max_new_tokens=12)
    np.testing.assert_array_equal(batched.tokens[i], single.tokens[0])
    np.testing.assert_allclose(batched.logprobs[i], single.logprobs[0], atol=1e-5)
  assert batched.tokens.shape == (3, 12)


def test_top_k_one_equals_greedy(sampler):
  prompts = [[1, 2, 3, 4], [7, 8]]
  greedy = sampler.generate(prompts, max_new_tokens=16)
  topk1 = sampler.generate(prompts, max_new_tokens=16, temperature=1.5, top_k=1, seed=11)
  np.testing.assert_array_equal(topk1.tokens, greedy.tokens)
  np.testing.assert_allclose(topk1.logprobs, greedy.logprobs, atol=1e-6)


def test_eos_and_stop_sequences(models, sampler):
  _, model = models
  prompts = [[1, 2, 3, 4], [7, 8]]
  ref = sampler.generate(prompts, max_new_tokens=16)
  eos = int(ref.tokens[0, 5])
  first0 = int(np.argmax(ref.tokens[0] == eos))
  hits1 = np.nonzero(ref.tokens[1] == eos)[0]
  s = Sampler(model, eos_ids=[eos], pad_id=0, **BUCKETS)
  out = s.generate(prompts, max_new_tokens=16)
  assert out.lengths[0] == first0 + 1 and out.finish_reasons[0] == "eos"
  np.testing.assert_array_equal(out.tokens[0, :first0 + 1], ref.tokens[0, :first0 + 1])
  assert (out.tokens[0, first0 + 1:] == 0).all() and (out.logprobs[0, first0 + 1:] == 0).all()
  want1 = hits1[0] + 1 if hits1.size else 16
  assert out.lengths[1] == want1
  # Token-sequence stop: the two tokens at positions 2, 3 of row 1.
  seq = ref.tokens[1, 2:4].tolist()
  out = sampler.generate(prompts, max_new_tokens=16, stop_token_sequences=[seq])
  assert out.finish_reasons[1] == "stop" and out.lengths[1] <= 4
  assert ref.tokens[1, out.lengths[1] - 2:out.lengths[1]].tolist() == seq


def test_stop_strings_host_side(models):
  _, model = models
  detok = lambda ids: " ".join(f"t{i}" for i in ids)
  s = Sampler(model, eos_ids=[-1], pad_id=0, detokenize=detok, **BUCKETS, stop_check_every=4)
  prompts = [[1, 2, 3, 4], [7, 8]]
  ref = s.generate(prompts, max_new_tokens=24)
  # Stop string spanning tokens 9 and 10 of row 0 (found in a later chunk than the first).
  stop = f"t{ref.tokens[0, 9]} t{ref.tokens[0, 10]}"
  first = next(k for k in range(1, 25) if stop in detok(ref.tokens[0, :k].tolist()))
  out = s.generate(prompts, max_new_tokens=24, stop_strings=[stop])
  assert out.lengths[0] == first and out.finish_reasons[0] == "stop"
  assert out.texts[0] == detok(ref.tokens[0, :first].tolist()) and out.texts[0].endswith(stop)
  np.testing.assert_array_equal(out.tokens[0, :first], ref.tokens[0, :first])


def test_decode_impls_agree(models):
  _, model = models
  kw = dict(eos_ids=[-1], pad_id=0, **BUCKETS)
  a = Sampler(model, decode_impl="while_loop", **kw).generate([[3, 4, 5], [9]], max_new_tokens=10,
                                                              temperature=1.0, seed=4)
  b = Sampler(model, decode_impl="python", **kw).generate([[3, 4, 5], [9]], max_new_tokens=10,
                                                          temperature=1.0, seed=4)
  np.testing.assert_array_equal(a.tokens, b.tokens)
  np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-6)


# ------------------------------------------------------------------------------------------- pure filters
def test_top_k_and_top_p_filters_exact():
  x = jnp.array([[1.0, 3.0, 2.0, 0.5], [0.0, 0.1, 5.0, 1.0]])
  k2 = np.asarray(sampling.top_k_filter(x, 2))
  assert np.isinf(k2[0, [0, 3]]).all() and k2[0, 1] == 3.0 and k2[0, 2] == 2.0
  assert np.isinf(k2[1, [0, 1]]).all()
  np.testing.assert_array_equal(np.asarray(sampling.top_k_filter(x, 0)), np.asarray(x))
  probs = np.asarray(jax.nn.softmax(x[0]))  # [0.0844, 0.6234, 0.2293, 0.0629]
  p = np.asarray(sampling.top_p_filter(x, 0.7))  # 0.62 < 0.7 -> also keep the 2nd most likely
  assert np.isfinite(p[0, [1, 2]]).all() and np.isinf(p[0, [0, 3]]).all()
  p = np.asarray(sampling.top_p_filter(x, float(probs[1]) - 1e-3))
  assert np.isfinite(p[0, 1]) and np.isinf(p[0, [0, 2, 3]]).all()
  np.testing.assert_array_equal(np.asarray(sampling.top_p_filter(x, 1.0)), np.asarray(x))


def test_sample_tokens_distribution_and_raw_logprob():
  logits = jnp.log(jnp.array([[0.5, 0.3, 0.15, 0.05]]))
  keys = jax.random.split(jax.random.key(0), 4000)
  draw = jax.vmap(lambda k: sampling.sample_tokens(k, logits, 1.0, 0, 0.7))
  toks, lps = draw(keys)
  counts = np.bincount(np.asarray(toks).ravel(), minlength=4) / 4000
  # top-p 0.7 keeps {0, 1}: renormalised 0.625 / 0.375.
  assert counts[2] == 0 and counts[3] == 0 and abs(counts[0] - 0.625) < 0.03
  # Logprobs are of the RAW distribution, not the filtered one.
  np.testing.assert_allclose(np.asarray(lps)[np.asarray(toks) == 0], np.log(0.5), rtol=1e-5)


# ------------------------------------------------------------------------------ chunked prefill, bf16 cache
@pytest.mark.parametrize("padding_side", ["left", "right"])
def test_chunked_prefill_equals_one_pass_multimodal(models, sampler, padding_side):
  """Prompt buckets of 32 run as 4 chunks of 8 (an image straddles two chunks): same tokens and logprobs."""
  _, model = models
  # The images of test_greedy_matches_transformers_generate_multimodal (its one-pass program is reused); with
  # left padding the second image's tokens span columns 20-27 (chunks 2 and 3).
  inputs = build_inputs([[5, "img", 3], [2, "img", 6]], [(1, 4, 8), (1, 8, 4)],
                        pad_side=padding_side, seed=4, patch_dim=PATCH_DIM)
  kw = dict(attention_mask=inputs["attention_mask"], pixel_values=inputs["pixel_values"],
            image_grid_thw=inputs["image_grid_thw"], max_new_tokens=16, temperature=1.0, seed=3)
  chunked = Sampler(model, eos_ids=[-1], pad_id=0, padding_side=padding_side, prefill_chunk=8, **BUCKETS)
  one = Sampler(model, eos_ids=[-1], pad_id=0, padding_side=padding_side, **BUCKETS)
  a = one.generate(inputs["input_ids"], **kw)
  b = chunked.generate(inputs["input_ids"], **kw)
  np.testing.assert_array_equal(b.tokens, a.tokens)
  np.testing.assert_allclose(b.logprobs, a.logprobs, atol=1e-5, rtol=0)


def test_bf16_kv_cache_close_to_f32(models):
  _, model = models
  prompts = [[3, 4, 5, 6, 7], [9, 1]]
  kw = dict(eos_ids=[-1], pad_id=0, **BUCKETS)
  f32 = Sampler(model, **kw).generate(prompts, max_new_tokens=8)
  bf16 = Sampler(model, cache_dtype="bfloat16", prefill_chunk=16, **kw).generate(prompts, max_new_tokens=8)
  # Greedy tokens agree for the first steps; logprobs within bf16 rounding of the cached keys / values, and
  # not bitwise equal (the cache really is bf16).
  np.testing.assert_array_equal(bf16.tokens[:, :4], f32.tokens[:, :4])
  np.testing.assert_allclose(bf16.logprobs[:, :4], f32.logprobs[:, :4], atol=5e-2)
  assert not np.array_equal(bf16.logprobs, f32.logprobs)


@pytest.mark.parametrize("chunk", [None, 8])
def test_copies_sample_like_repeated_prompts(models, chunk):
  """copies=[2, 1, 1]: one prefill per prompt, its cache copied to two rows: the same tokens and logprobs as
  the prompts written out [p0, p0, p1, p2] (same seed, same rows), the copies sampled independently."""
  _, model = models
  s = Sampler(model, eos_ids=[-1], pad_id=0, prefill_chunk=chunk, **BUCKETS)
  rng = np.random.default_rng(8)
  prompts = [rng.integers(0, 240, n).tolist() for n in (9, 4, 13)]
  kw = dict(max_new_tokens=16, temperature=1.0, seed=21)
  copied = s.generate(prompts, copies=[2, 1, 1], **kw)
  written = s.generate([prompts[0], prompts[0], prompts[1], prompts[2]], **kw)
  assert copied.tokens.shape == (4, 16)
  np.testing.assert_array_equal(copied.tokens, written.tokens)
  np.testing.assert_allclose(copied.logprobs, written.logprobs, atol=1e-5, rtol=0)
  assert (copied.tokens[0] != copied.tokens[1]).any()
  greedy = s.generate(prompts[:1], copies=[3], max_new_tokens=16)
  np.testing.assert_array_equal(greedy.tokens, np.repeat(s.generate(prompts[:1], max_new_tokens=16).tokens, 3, 0))
  with pytest.raises(ValueError, match=r"copies needs one count >= 1 per prompt \(3 prompts\), got \[1, 0, 2\]"):
    s.generate(prompts, copies=[1, 0, 2], max_new_tokens=4)


def test_fast_categorical_and_argmax_pick_the_library_calls_tokens_exactly():
  """sampling.categorical / first_argmax replace jax.random.categorical / jnp.argmax in the decode step for speed;
  they must pick the same token for every key, with filtered (-inf) entries and with ties (first index wins)."""
  x = jax.random.normal(jax.random.key(0), (8, 257)) * 3
  filtered = jnp.where(x > 1.0, x, -jnp.inf)
  ties = jnp.round(x)  # many equal maxima per row
  ours, ref = jax.jit(sampling.categorical), jax.jit(lambda k, l: jax.random.categorical(k, l, axis=-1))
  for logits in (x, filtered, ties):
    for i in range(50):
      k = jax.random.key(i)
      np.testing.assert_array_equal(np.asarray(ours(k, logits)), np.asarray(ref(k, logits)))
    np.testing.assert_array_equal(np.asarray(sampling.first_argmax(logits)), np.asarray(jnp.argmax(logits, axis=-1)))
  assert sampling.first_argmax(ties).dtype == jnp.int32
