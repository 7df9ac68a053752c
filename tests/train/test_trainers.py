"""Trainers on synthetic episodes: sampler/trainer logprob parity, kill-and-resume exactness."""
import jax
import ml_collections
import numpy as np
import pytest

from gui_jax.rl.batch import build_batch, model_forward_logprobs
from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, semi_online_rollouts
from gui_jax.rl.agent import Agent
from gui_jax.train.config_blocks import model_block, rl_block, sft_block
from gui_jax.train.fit import StopRequested
from gui_jax.train.rl_common import RLRun, samples_from_generations
from gui_jax.train.semi_online import train_semi_online
from gui_jax.train.sft import train_sft

from support.fake_policy import make_episode


@pytest.fixture(scope="module")
def episodes():
    # 112x252 screenshots: multiples of 28, so the processor keeps them as they are.
    return [make_episode(g, n=3, size=(112, 252)) for g in ("Turn on Wi-Fi", "Open the clock", "Add a contact")]


def _agent(seed=0):
    m = model_block()
    m.num_hidden_layers, m.vision_depth = 2, 2  # smaller than the tiny preset: fast CI
    return Agent(ml_collections.ConfigDict({"model": m}), seed=seed)


@pytest.mark.parametrize("observation,target", [("ui_text", "element"), ("screenshot", "coordinate")])
def test_training_logprobs_equal_sampler_logprobs(episodes, observation, target):
    agent = _agent()
    pcfg = PromptConfig(observation=observation, target=target, history_turns=2)  # previous + current screen
    steps = semi_online_rollouts(agent.policy, episodes[:2], pcfg,
                                 SemiOnlineConfig(num_rollouts=2, patch_threshold=-1, temperature=1.0), seed=3)
    samples = samples_from_generations([s.generation for s in steps], [1.0] * len(steps))
    assert len(samples) >= 4
    batch = build_batch(samples, agent.model_config, pad_id=agent.tokenizer.pad_id)
    logp, _ = model_forward_logprobs(agent.model(), batch)
    logp, m = np.asarray(logp), batch["loss_mask"] > 0
    np.testing.assert_allclose(logp[m], batch["old_logp"][m], atol=1e-5)
    if observation == "screenshot":
        assert "pixel_values" in batch


def _sft_cfg(steps):
    c = sft_block()
    c.num_steps, c.batch_size, c.micro_batch_size, c.checkpoint_every = steps, 4, 2, 2
    return c


def test_sft_kill_and_resume_matches_uninterrupted(episodes, tmp_path):
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)
    ref = _agent()
    train_sft(ref, episodes, pcfg, _sft_cfg(5), workdir=str(tmp_path / "a"))
    run = _agent()
    cfg = _sft_cfg(5)
    cfg.stop_after_steps = 3
    with pytest.raises(StopRequested):
        train_sft(run, episodes, pcfg, cfg, workdir=str(tmp_path / "b"))
    resumed = _agent(seed=1)  # a fresh process would start from different weights
    train_sft(resumed, episodes, pcfg, _sft_cfg(5), workdir=str(tmp_path / "b"))
    for x, y in zip(jax.tree.leaves(ref.params), jax.tree.leaves(resumed.params)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-6)


def test_semi_online_kill_and_resume_matches_uninterrupted(episodes, tmp_path):
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)

    def cfg(stop=None):
        c = rl_block()
        c.iterations, c.episodes_per_iteration, c.num_rollouts = 3, 2, 2
        c.dynamic_sampling, c.patch_threshold, c.checkpoint_every = False, -1, 1
        c.learning_rate, c.stop_after_steps = 1e-3, stop
        return c
    ref = _agent()
    train_semi_online(ref, episodes, pcfg, cfg(), workdir=str(tmp_path / "a"))
    run = _agent()
    with pytest.raises(StopRequested):
        train_semi_online(run, episodes, pcfg, cfg(stop=2), workdir=str(tmp_path / "b"))
    resumed = _agent(seed=1)
    train_semi_online(resumed, episodes, pcfg, cfg(), workdir=str(tmp_path / "b"))
    moved = False
    init = _agent()
    for x, y, z in zip(jax.tree.leaves(ref.params), jax.tree.leaves(resumed.params), jax.tree.leaves(init.params)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-6)
        moved |= not np.allclose(np.asarray(x), np.asarray(z))
    assert moved  # the updates did something


def test_update_recomputes_old_logprobs_and_reports_all_mini_batches(episodes, tmp_path):
    """recompute_old_logprobs: π_old = the training forward at the update's start, so with lr 0 every
    ratio is exactly 1 (approx_kl 0) although the samples carry made-up old logprobs (all 0); the
    metrics cover both mini-batches (tokens = every response token)."""
    agent = _agent()
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)
    gens = [agent.policy.encode(build_messages(ep.goal, [], ep.observations[0], pcfg),
                                expert_response(ep.actions[0], ep.observations[0], pcfg, element=0))
            for ep in episodes]
    samples = samples_from_generations(gens, [1.0, -1.0, 0.5])
    assert all(not s.old_logprobs.any() for s in samples)
    cfg = rl_block()
    cfg.kl_coef, cfg.num_mini_batches, cfg.micro_batch_size, cfg.learning_rate = 0.0, 2, 2, 0.0
    cfg.recompute_old_logprobs = True
    metrics = RLRun(agent, len(episodes), cfg, workdir=str(tmp_path), prefix="rl").update(samples)
    assert metrics["mini_batches"] == 2
    assert metrics["tokens"] == sum(s.response_ids.size for s in samples)
    assert abs(metrics["ratio_mean"] - 1.0) < 1e-6 and abs(metrics["approx_kl"]) < 1e-6
    assert metrics["clip_frac"] == 0.0
    assert 0.0 < metrics["update_seconds"] < 600.0  # the update's wall time (rollouts: rollout_seconds)
