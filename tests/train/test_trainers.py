"""Trainers on synthetic episodes: sampler/trainer logprob parity, kill-and-resume exactness."""
import jax
import ml_collections
import numpy as np
import pytest

from gui_jax.config_check import checkpoint_steps
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
    every = _sft_cfg(5)
    every.checkpoint_every, every.checkpoints_kept = 1, 0   # retention changes no number: only what stays on disk
    train_sft(ref, episodes, pcfg, every, workdir=str(tmp_path / "a"))
    assert checkpoint_steps(str(tmp_path / "a" / "checkpoints")) == [1, 2, 3, 4, 5]
    run = _agent()
    cfg = _sft_cfg(5)
    cfg.stop_after_steps = 3
    with pytest.raises(StopRequested):
        train_sft(run, episodes, pcfg, cfg, workdir=str(tmp_path / "b"))
    resumed = _agent(seed=1)  # a fresh process would start from different weights
    train_sft(resumed, episodes, pcfg, _sft_cfg(5), workdir=str(tmp_path / "b"))
    assert checkpoint_steps(str(tmp_path / "b" / "checkpoints")) == [3, 4, 5]   # the newest 3 (the default)
    for x, y in zip(jax.tree.leaves(ref.params), jax.tree.leaves(resumed.params)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-6)


@pytest.mark.parametrize("revisit,sampling", [(0.0, "uniform"), (1.0, "learnability")])
def test_semi_online_kill_and_resume_matches_uninterrupted(episodes, tmp_path, revisit, sampling):
    """With selective rollouts (revisit 0: tasks seen uniform are skipped), whose streaks resume, and with the
    learnability draw, whose template counts resume (the plain shuffled draw: tests/jobs/test_resume_cli.py)."""
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)

    def cfg(stop=None):
        c = rl_block()
        c.iterations, c.episodes_per_iteration, c.num_rollouts = 3, 2, 2
        c.dynamic_sampling, c.patch_threshold, c.checkpoint_every = False, -1, 1
        c.learning_rate, c.stop_after_steps, c.revisit_uniform = 1e-3, stop, revisit
        c.template_sampling = sampling
        return c
    logs = {"a": [], "b": []}

    class Log:
        def __init__(self, name):
            self.name = name

        def write(self, step, metrics, prefix=""):
            logs[self.name].append((step, dict(metrics)))
    ref = _agent()
    train_semi_online(ref, episodes, pcfg, cfg(), workdir=str(tmp_path / "a"), logger=Log("a"))
    run = _agent()
    with pytest.raises(StopRequested):
        train_semi_online(run, episodes, pcfg, cfg(stop=2), workdir=str(tmp_path / "b"), logger=Log("b"))
    resumed = _agent(seed=1)
    train_semi_online(resumed, episodes, pcfg, cfg(), workdir=str(tmp_path / "b"), logger=Log("b"))
    a, b = logs["a"], logs["b"]
    assert [m["rollout_steps"] for _, m in a] == [m["rollout_steps"] for _, m in b]
    if revisit == 0.0:  # the random policy's groups are uniform: their tasks are skipped at the next visit
        assert a[-1][1]["known_uniform"] > 0 and sum(m["skipped_tasks"] for _, m in a) > 0
        assert [m["skipped_tasks"] for _, m in a] == [m["skipped_tasks"] for _, m in b]
    else:
        assert "skipped_tasks" not in a[-1][1]
    if sampling == "learnability":  # 2 groups an iteration recorded; the draw's probabilities resume with them
        assert [m["template_prob_max"] for _, m in a] == [m["template_prob_max"] for _, m in b]
    else:
        assert "template_prob_max" not in a[-1][1]
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


def test_merged_duplicates_give_the_copies_loss_and_gradient(episodes):
    """merge_duplicates under token_mean: the PPO-clip + dual-clip + KL loss and its gradient equal those of the
    copies, with ratios far from 1 (clipping active) and copies whose advantages differ (same sign merged,
    opposite signs kept apart)."""
    from flax import nnx

    from gui_jax.rl.batch import TrainSample, merge_duplicates
    from gui_jax.train.rl_common import micro_batches, rl_loss_fn
    agent = _agent()
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)
    rng = np.random.default_rng(0)
    samples = []
    for ep, advs in zip(episodes, ((1.0, 0.5, -0.7), (-1.2, -0.3), (0.9,))):
        gen = agent.policy.encode(build_messages(ep.goal, [], ep.observations[0], pcfg),
                                  expert_response(ep.actions[0], ep.observations[0], pcfg, element=0))
        r = gen.response_ids.size
        old = rng.normal(-1.0, 0.8, r).astype(np.float32)  # ratios far from 1: clipped and dual-clipped tokens
        ref = rng.normal(-1.5, 0.5, r).astype(np.float32)
        samples += [TrainSample(gen.prompt_ids, gen.response_ids, advantage=a, old_logprobs=old, ref_logprobs=ref)
                    for a in advs]
    merged = merge_duplicates(samples)
    assert [(s.weight, round(s.advantage, 6)) for s in merged] == [(2.0, 0.75), (1.0, -0.7), (2.0, -0.75),
                                                                   (1.0, 0.9)]
    cfg = rl_block()
    cfg.kl_coef, cfg.dual_clip, cfg.packing, cfg.micro_batch_size, cfg.row_length = 0.1, 3.0, True, 2, 512
    loss = rl_loss_fn(agent.graphdef, agent.rest, cfg)

    def total(params, sample_list):
        parts = [loss(params, b, None) for b in micro_batches(agent, sample_list, cfg, None)]
        return sum(p[0] for p in parts) / sum(p[1] for p in parts)

    params = nnx.state(agent.model, nnx.Param) if not hasattr(agent, "params") else agent.params
    (a, ga), (b, gb) = (jax.value_and_grad(total)(params, s) for s in (samples, merged))
    assert abs(float(a) - float(b)) < 1e-5 * max(1.0, abs(float(a)))
    diff = max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
               for x, y in zip(jax.tree.leaves(ga), jax.tree.leaves(gb)))
    scale = max(float(np.max(np.abs(np.asarray(x)))) for x in jax.tree.leaves(ga))
    assert diff < 1e-4 * scale, (diff, scale)


def test_rl_update_merges_duplicates_by_default_with_the_same_metrics(episodes, tmp_path, monkeypatch):
    """RLRun.update merges (rl.merge_duplicates, default on, token_mean): the metrics equal the unmerged
    update's; step_token_mean trains every copy."""
    import gui_jax.train.rl_common as rc
    agent = _agent()
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)
    ep = episodes[0]
    gen = agent.policy.encode(build_messages(ep.goal, [], ep.observations[0], pcfg),
                              expert_response(ep.actions[0], ep.observations[0], pcfg, element=0))
    samples = samples_from_generations([gen] * 4, [1.0, 0.5, -1.0, -0.5])
    from gui_jax.rl import batch as rl_batch
    seen = []

    def counting(s, **kw):
        seen.append(len(s))
        return rl_batch.merge_duplicates(s, **kw)
    monkeypatch.setattr(rc, "merge_duplicates", counting)
    out = {}
    for merge, agg in ((True, "token_mean"), (False, "token_mean"), (True, "step_token_mean")):
        cfg = rl_block()
        cfg.kl_coef, cfg.learning_rate, cfg.merge_duplicates, cfg.aggregation = 0.0, 0.0, merge, agg
        out[(merge, agg)] = RLRun(agent, 1, cfg, workdir=str(tmp_path / f"{merge}{agg}"), prefix="rl").update(samples)
    assert seen == [4]  # only the default (merge on, token_mean) merged
    a, b = out[(True, "token_mean")], out[(False, "token_mean")]
    assert a["tokens"] == b["tokens"] == 4 * gen.response_ids.size
    assert abs(a["pg_loss"] - b["pg_loss"]) < 1e-6 and abs(a["ratio_mean"] - b["ratio_mean"]) < 1e-6


def test_drop_cancelled_keeps_the_on_policy_gradient_and_counts_dropped_steps(episodes, tmp_path):
    """rl.drop_cancelled with sampled steps (ratio 1): copies of one step whose advantages cancel (+.5 +.5 -.5 -.5)
    are not trained, opposite-sign copies merge, the rest scale by kept / all tokens; the policy-gradient loss
    and its gradient equal the full batch's, and the update reports one cancelled step."""
    from gui_jax.rl.batch import drop_cancelled, merge_duplicates
    from gui_jax.train.rl_common import micro_batches, rl_loss_fn
    agent = _agent()
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)
    steps = semi_online_rollouts(agent.policy, episodes[:3], pcfg,
                                 SemiOnlineConfig(num_rollouts=1, patch_threshold=-1, temperature=1.0), seed=5)
    g1, g2, g3 = (s.generation for s in steps[:3])
    samples = samples_from_generations([g1, g2, g1, g3, g1, g2, g1],
                                       [0.5, 1.0, 0.5, -0.8, -0.5, -0.25, -0.5])
    kept, dropped = drop_cancelled(merge_duplicates(samples, across_signs=True))
    assert dropped == 1 and [s.weight for s in kept] == [2.0, 1.0]
    n1, n2, n3 = (g.response_ids.size for g in (g1, g2, g3))
    scale = (2 * n2 + n3) / (4 * n1 + 2 * n2 + n3)
    assert [round(s.advantage, 6) for s in kept] == [round(0.375 * scale, 6), round(-0.8 * scale, 6)]
    cfg = rl_block()
    cfg.kl_coef, cfg.packing, cfg.micro_batch_size, cfg.row_length = 0.0, True, 2, 512
    loss = rl_loss_fn(agent.graphdef, agent.rest, cfg)

    def total(params, sample_list):
        parts = [loss(params, b, None) for b in micro_batches(agent, sample_list, cfg, None)]
        return sum(p[0] for p in parts) / sum(p[1] for p in parts)
    (a, ga), (b, gb) = (jax.value_and_grad(total)(agent.params, s) for s in (samples, kept))
    assert abs(float(a) - float(b)) < 1e-5 * max(1.0, abs(float(a)))
    diff = max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(jax.tree.leaves(ga),
                                                                                   jax.tree.leaves(gb)))
    scale_g = max(float(np.max(np.abs(np.asarray(x)))) for x in jax.tree.leaves(ga))
    assert diff < 1e-4 * scale_g, (diff, scale_g)
    cfg.drop_cancelled, cfg.learning_rate = True, 0.0
    metrics = RLRun(agent, 1, cfg, workdir=str(tmp_path), prefix="rl").update(samples)
    assert metrics["cancelled_steps"] == 1 and metrics["tokens"] == 2 * n2 + n3


def test_policy_prefills_identical_prompts_once_and_keeps_their_order(episodes, monkeypatch):
    """JaxPolicy.generate on [a, b, a, a]: the sampler sees the 2 distinct prompts with copies [3, 1]; each
    Generation is its own prompt's, in call order; greedy answers equal those of the prompts one by one."""
    agent = _agent()
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)
    a, b = (build_messages(ep.goal, [], ep.observations[0], pcfg) for ep in episodes[:2])
    calls = []
    real = agent.policy.sampler.generate

    def spy(prompts, **kw):
        calls.append((len(prompts), kw.get("copies")))
        return real(prompts, **kw)
    monkeypatch.setattr(agent.policy.sampler, "generate", spy)
    gens = agent.policy.generate([a, b, a, a], temperature=0.0, seed=0, max_new_tokens=8)
    assert calls == [(2, [3, 1])]
    alone = [agent.policy.generate([p], temperature=0.0, seed=0, max_new_tokens=8)[0] for p in (a, b)]
    for g, want in zip(gens, (alone[0], alone[1], alone[0], alone[0])):
        assert g.text == want.text and g.prompt_ids.tobytes() == want.prompt_ids.tobytes()
        np.testing.assert_allclose(g.logprobs, want.logprobs, atol=1e-5)
