"""Bounded compilation: a 10-step screenshot rollout and a 20-step training run whose rows hold 1-3 screenshots
compile at most one program per shape bucket visited (XLA compilations counted through jax.monitoring), with
images batched flat and per row (the 7B recipe's `vision_per_row`)."""
import collections
import contextlib
import itertools

import jax
import ml_collections
import numpy as np
import pytest

import gui_jax.models.sampler as sampler_mod
from gui_jax.rl.agent import Agent
from gui_jax.rl.batch import make_micro_batches, shape_key
from gui_jax.rl.prompting import PromptConfig, build_messages
from gui_jax.train.config_blocks import model_block, rl_block
from gui_jax.train.rl_common import make_rl_updater
from gui_jax.train.state import init_train_state

from support.fake_policy import make_episode
from support.xla_cache import persistent_cache_off

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def count_compiles():
    """Counter of XLA compilations by function name while the context is open (the persistent cache off, so that
    every program compiles)."""
    counts = collections.Counter()

    def listener(event, duration, **kw):
        if event == COMPILE_EVENT:
            name = kw.get("fun_name", "?")
            counts[name.removeprefix("jit(").removesuffix(")")] += 1
            counts["seconds"] += duration
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with persistent_cache_off():
            yield counts
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@pytest.fixture(scope="module", params=[False, True], ids=["flat_images", "per_row_images"])
def setup(request):
    m = model_block()
    m.num_hidden_layers, m.vision_depth, m.max_new_tokens, m.sample_batch_size = 1, 2, 8, 4
    m.vision_per_row = request.param   # per row: the 7B recipe's layout (grouped vision inputs)
    agent = Agent(ml_collections.ConfigDict({"model": m}), seed=0)
    # 56x112 screenshots (multiples of 28: the processor keeps them); 3 steps, K = 3 -> 1, 2, 3 screenshots.
    episodes = [make_episode(g, n=3, size=(56, 112)) for g in ("Turn on Wi-Fi", "Open the clock app now")]
    pcfg = PromptConfig(observation="screenshot", target="coordinate", history_turns=3)

    def prompt(e, t):
        ep = episodes[e]
        hist = [(ep.observations[k], f"step {k}") for k in range(t)]
        return build_messages(ep.goal, hist, ep.observations[t], pcfg)
    return agent, prompt


def test_rollout_compiles_one_program_per_bucket(setup, monkeypatch):
    agent, prompt = setup
    buckets, raw = set(), set()
    real_prefill = sampler_mod._prefill_jit

    def recording_prefill(graphdef, state, ids, mask, pos, pv, layout, *args, **kw):
        buckets.add((shape_key({"ids": ids, "pv": pv, "layout": layout}), kw["cache_len"]))
        return real_prefill(graphdef, state, ids, mask, pos, pv, layout, *args, **kw)
    monkeypatch.setattr(sampler_mod, "_prefill_jit", recording_prefill)
    with count_compiles() as compiles:
        for step in range(10):  # one rollout step: 4 rollouts of one episode step (1-3 screenshots each)
            e, t = step % 2, step % 3
            prompts = [prompt(e, t)] * 4
            agent.policy.generate(prompts, temperature=1.0, seed=step)
            inputs = agent.policy.prompt_inputs(prompts[0])
            raw.add((inputs["input_ids"].size, inputs["pixel_values"].shape[0]))
    programs = compiles["_prefill_cache"] + compiles["_decode_loop"]
    print(f"rollout: {dict(compiles)}; shape buckets {len(buckets)}; exact shapes {len(raw)}")
    assert compiles["_prefill_cache"] >= 1
    assert compiles["_prefill_cache"] <= len(buckets)
    assert compiles["_decode_loop"] <= len({b[1] for b in buckets})  # (batch, cache length) per bucket
    # the first token (copies gathered) is a small program per (prompts, rows, cache length) bucket
    assert 1 <= compiles["_start_decode"] <= len(buckets)
    assert programs <= 2 * len(buckets) < 10


def test_training_compiles_one_program_per_bucket(setup):
    agent, prompt = setup
    cfg = rl_block()
    cfg.kl_coef, cfg.micro_batch_size = 0.0, 2
    updater = make_rl_updater(agent, cfg)
    state = init_train_state(agent.copy_params(), updater.optimizer, 0)
    rng = np.random.default_rng(0)
    combos = list(itertools.product(range(2), range(3)))
    buckets, raw = set(), set()
    with count_compiles() as compiles:
        for step in range(20):
            picks = [combos[i] for i in rng.choice(len(combos), size=rng.integers(2, 5), replace=True)]
            samples = []
            for e, t in picks:
                g = agent.policy.encode(prompt(e, t), "<action>click</action>" + " x" * int(rng.integers(0, 6)))
                samples.append(g)
            from gui_jax.train.rl_common import samples_from_generations
            samples = samples_from_generations(samples, rng.normal(size=len(samples)))
            micro = make_micro_batches(samples, agent.model_config, pad_id=agent.tokenizer.pad_id,
                                       micro_batch_size=cfg.micro_batch_size)
            for mb in micro:
                buckets.add(shape_key(mb))
                raw.add(tuple(sorted((len(s), s.pixel_values.shape[0]) for s in samples)))
            state, metrics = updater.step(state, micro)
            assert np.isfinite(metrics["loss"])
    accumulate = sum(v for k, v in compiles.items() if "accumulate" in k or "micro" in k)
    print(f"training: {dict(compiles)}; shape buckets {len(buckets)}; exact batch shapes {len(raw)}")
    assert 1 <= accumulate <= len(buckets) < 20
    assert sum(v for k, v in compiles.items() if "apply" in k) == 1


def test_policy_batch_buckets_are_powers_then_the_chunk_size():
    from gui_jax.rl.jax_policy import policy_batch_buckets
    assert policy_batch_buckets(64) == (1, 4, 16, 64)
    assert policy_batch_buckets(32) == (1, 4, 16, 32)
    assert policy_batch_buckets(1) == (1,)
    assert policy_batch_buckets(32, "full") == (32,)
    assert policy_batch_buckets(32, "powers_of_2") == (1, 2, 4, 8, 16, 32)
    assert policy_batch_buckets(24, "powers_of_2") == (1, 2, 4, 8, 16, 24)
    with pytest.raises(ValueError, match="batch bucketing 'half'"):
        policy_batch_buckets(32, "half")
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        policy_batch_buckets(0)


def test_a_long_call_runs_in_prompt_length_order_and_answers_in_call_order(setup, monkeypatch):
    """More prompts than sample_batch_size: chunks hold prompts of similar length (each pads to its own longest),
    and every generation comes back at its prompt's place; `batch_bucketing` pads calls as asked, then restores."""
    agent, prompt = setup
    prompts = [prompt(e, t) for e, t in ((0, 2), (1, 0), (0, 0), (1, 2), (0, 1), (1, 1))]
    lengths = [agent.policy.prompt_inputs(p)["input_ids"].size for p in prompts]
    chunks = []
    real_generate = agent.policy.sampler.generate

    def recording(ids, **kw):
        chunks.append(sorted(len(i) for i in ids))
        return real_generate(ids, **kw)
    monkeypatch.setattr(agent.policy.sampler, "generate", recording)
    out = agent.policy.generate(prompts, temperature=0.0, seed=0)
    assert [g.prompt_ids.size for g in out] == lengths
    for g, p in zip(out, prompts):
        np.testing.assert_array_equal(g.prompt_ids, agent.policy.prompt_inputs(p)["input_ids"])
    assert [len(c) for c in chunks] == [4, 2] and sum(chunks, []) == sorted(lengths)
    assert agent.policy.sampler.batch_buckets == (1, 4)
    with agent.policy.batch_bucketing("full"):
        assert agent.policy.sampler.batch_buckets == (4,)
    with agent.policy.batch_bucketing(""):
        assert agent.policy.sampler.batch_buckets == (1, 4)
    assert agent.policy.sampler.batch_buckets == (1, 4)
