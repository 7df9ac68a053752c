"""SFT's optional next-token loss on prompt tokens (sft.prompt_loss_weight): which positions count,
and the loss against a hand computation from the model's full logits, packed and unpacked."""
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from gui_jax.rl.agent import Agent
from gui_jax.rl.batch import TrainSample, build_batch
from gui_jax.train.config_blocks import model_block
from gui_jax.train.sft import prompt_targets, sft_loss_fn


@pytest.fixture(scope="module")
def agent():
    m = model_block()
    m.num_hidden_layers, m.vision_depth = 2, 2
    return Agent(ml_collections.ConfigDict({"model": m}), seed=0)


def _samples():
    rng = np.random.default_rng(0)
    return [TrainSample(rng.integers(10, 300, p).astype(np.int32), rng.integers(10, 300, r).astype(np.int32))
            for p, r in ((7, 3), (5, 2), (9, 4))]


def _hand(agent, samples, w):
    """Per sample alone: Σ response NLL + w · Σ_{j=1..p-1} −log p(prompt[j] | prompt[:j])."""
    model = agent.model()
    total, n = 0.0, 0
    for s in samples:
        ids = np.concatenate([s.prompt_ids, s.response_ids])[None]
        lp = np.asarray(jax.nn.log_softmax(model(jnp.asarray(ids)).logits.astype(jnp.float32), -1))[0]
        nll = -lp[np.arange(ids.shape[1] - 1), ids[0, 1:]]  # nll[j-1] scores token j
        p = s.prompt_ids.size
        total += nll[p - 1:].sum() + w * nll[:p - 1].sum()
        n += s.response_ids.size
    return total, n


def test_prompt_targets_mark_prompt_tokens_within_each_segment(agent):
    samples = _samples()
    batch = build_batch(samples, agent.model_config, pad_id=agent.tokenizer.pad_id, packing=True, row_length=64)
    keep = np.asarray(prompt_targets(batch, agent.model_config.image_token_id))
    # one row of three segments (in packing order); keep[j] scores token j+1: a segment's prompt
    # tokens after its first one, never its response, the next segment's first token or padding
    seg = batch["segment_ids"][0]
    by_length = {len(s): s for s in samples}
    want = np.zeros(seg.size - 1, np.float32)
    for k in range(1, 4):
        at = int(np.argmax(seg == k))
        s = by_length[int((seg == k).sum())]
        np.testing.assert_array_equal(batch["input_ids"][0, at:at + s.prompt_ids.size], s.prompt_ids)
        want[at:at + s.prompt_ids.size - 1] = 1.0
    np.testing.assert_array_equal(keep[0], want)
    assert keep.sum() == sum(s.prompt_ids.size - 1 for s in samples)


@pytest.mark.parametrize("packing", [False, True])
@pytest.mark.parametrize("w", [0.0, 0.25])
def test_loss_equals_hand_sum(agent, packing, w):
    samples = _samples()
    batch = build_batch(samples, agent.model_config, pad_id=agent.tokenizer.pad_id, packing=packing,
                        row_length=64 if packing else None)
    total, n, metrics = sft_loss_fn(agent.graphdef, agent.rest, w)(agent.params, batch, None)
    want, want_n = _hand(agent, samples, w)
    assert float(n) == want_n
    np.testing.assert_allclose(float(total), want, rtol=2e-5)
    assert ("prompt_nll" in metrics) == (w > 0)


@pytest.mark.parametrize("packing", [False, True])
def test_chunked_prompt_loss_equals_one_pass_with_its_gradients(agent, packing):
    """prompt_loss_chunk splits the LM head over positions (remat per chunk): the same loss and gradients
    as one pass, with a chunk that does not divide the row (7) and one longer than it."""
    samples = _samples()
    batch = build_batch(samples, agent.model_config, pad_id=agent.tokenizer.pad_id, packing=packing,
                        row_length=64 if packing else None)

    def value_and_grad(chunk):
        f = sft_loss_fn(agent.graphdef, agent.rest, 0.25, chunk)
        return jax.value_and_grad(lambda p: f(p, batch, None)[0])(agent.params)

    (ref, g_ref), want = value_and_grad(0), _hand(agent, samples, 0.25)[0]
    np.testing.assert_allclose(float(ref), want, rtol=2e-5)
    for chunk in (7, 1000):
        val, g = value_and_grad(chunk)
        np.testing.assert_allclose(float(val), float(ref), rtol=1e-6)
        for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(g_ref)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("w", [0.0, 0.1])
def test_reward_model_loss_adds_the_weighted_prompt_nll(agent, w):
    """rm.train.prompt_loss_weight: Σ weight·nll(label) + w · Σ prompt next-token nll, by hand from the
    full logits (the label is the one response token; its weight rides in `advantage`)."""
    from gui_jax.train.rm_training import rm_loss_fn
    pos_id, neg_id = 11, 12
    rng = np.random.default_rng(1)
    samples = [TrainSample(rng.integers(20, 300, p).astype(np.int32), np.asarray([lab], np.int32),
                           advantage=wt) for p, lab, wt in ((7, pos_id, 0.5), (9, neg_id, 2.0))]
    batch = build_batch(samples, agent.model_config, pad_id=agent.tokenizer.pad_id)
    total, n, metrics = rm_loss_fn(agent.graphdef, agent.rest, pos_id, neg_id, "vocab", w)(agent.params, batch, None)
    model, want = agent.model(), 0.0
    for s in samples:
        ids = np.concatenate([s.prompt_ids, s.response_ids])[None]
        lp = np.asarray(jax.nn.log_softmax(model(jnp.asarray(ids)).logits.astype(jnp.float32), -1))[0]
        nll = -lp[np.arange(ids.shape[1] - 1), ids[0, 1:]]
        want += s.advantage * nll[-1] + w * nll[:-1].sum()
    assert float(n) == 2.0
    np.testing.assert_allclose(float(total), want, rtol=2e-5)
    assert ("prompt_nll" in metrics) == (w > 0)
