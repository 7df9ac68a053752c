"""Offline GRPO's step reward (train/semi_online.py train_offline_rl): the rule check against the expert action
(GUI-Shepherd's oracle) or a reward model's score of the sampled action after the expert history (its offline
GRPO with PRM reward), wired through the quickstart's offline-RL baseline (`rl.offline_reward`)."""
import pathlib

import jax
import numpy as np
import pytest

from gui_jax.jobs import load_config
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.likelihood import LikelihoodScorer
from gui_jax.rl.prompting import expert_response
from gui_jax.rl.semi_online_rollout import expert_element
from gui_jax.train import semi_online
from gui_jax.train.config_blocks import rl_block

from support.fake_policy import UI_PROMPT, make_episode
from support.oracle_policy import small_agent

REPO = pathlib.Path(__file__).resolve().parents[2]
UI = UI_PROMPT


@pytest.fixture(scope="module")
def agent():
    return small_agent(seed=0)


@pytest.fixture(scope="module")
def episodes():
    return [make_episode("Turn on Wi-Fi", n=4, size=(112, 252)), make_episode("Open the clock", n=3, size=(112, 252))]


class LogScorer(LikelihoodScorer):
    """The likelihood scorer in log space: an untrained model's probabilities (~1e-65) underflow float32."""

    def score_samples(self, samples, batch_size=None):
        return self.log_scores_of_samples(list(samples), batch_size)


def test_rm_rewards_score_the_sampled_action_after_the_expert_history(agent, episodes):
    """The expert's own response at step t scores exactly what the RM gives the data engine's expert step record
    for t; a response that does not parse scores 0."""
    items = [(0, 0), (0, 2), (1, 1), (1, 2)]
    texts = [expert_response(episodes[i].actions[t], episodes[i].observations[t], UI,
                             element=expert_element(episodes[i], t)) for i, t in items[:3]]
    texts += ["no action here"]
    got = semi_online.rm_step_rewards(LogScorer(agent, {}, UI), episodes, items, texts, UI)
    lookup = {e.episode_id: e for e in episodes}
    expert = {(r.goal, len(r.steps)): r for e in episodes for r in de.expert_records(e) if r.kind == "step"}
    want = LikelihoodScorer(agent, lookup, UI).log_scores([expert[(episodes[i].goal, t + 1)] for i, t in items[:3]])
    assert got.dtype == np.float32 and got.shape == (4,)
    np.testing.assert_allclose(got[:3], want, rtol=1e-5)
    assert np.all(got[:3] < 0) and got[3] == 0.0


def _cfg(**kw):
    c = rl_block()
    c.iterations, c.episodes_per_iteration, c.num_rollouts = 1, 2, 2
    c.micro_batch_size, c.checkpoint_every, c.learning_rate, c.kl_coef = 8, 10, 1e-2, 0.0
    for k, v in kw.items():
        c[k] = v
    return c


@pytest.mark.parametrize("spread", [False, True])
def test_offline_grpo_trains_on_the_reward_models_scores(episodes, tmp_path, monkeypatch, spread):
    """With offline_reward = rm the group advantages come from the RM's scores, not the rule: equal scores in
    every group leave the weights exactly as they were (no sample kept), a spread moves them."""
    agent = small_agent(seed=2)
    seen = []

    def fake_rm(scorer, eps, items, texts, pcfg):
        seen.append((scorer, list(items), len(texts)))
        return np.array([0.9 if spread and k % 2 == 0 else 0.4 for k in range(len(texts))], np.float32)
    monkeypatch.setattr(semi_online, "rm_step_rewards", fake_rm)
    before = jax.tree.map(np.asarray, agent.copy_params())
    marker = object()
    summary = semi_online.train_offline_rl(agent, episodes, UI, _cfg(offline_reward="rm"), workdir=str(tmp_path),
                                           reward_scorer=marker)
    steps = sum(len(e.actions) for e in episodes)
    assert [(s is marker, n) for s, _, n in seen] == [(True, 2 * steps)]
    items = seen[0][1]  # every expert step of both episodes, once per rollout, a group's rollouts side by side
    assert items[::2] == items[1::2]
    assert sorted(items[::2]) == [(i, t) for i in (0, 1) for t in range(len(episodes[i].actions))]
    after = jax.tree.map(np.asarray, agent.copy_params())
    same = all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)))
    assert same is (not spread), summary


def test_offline_reward_and_scorer_must_agree(agent, episodes, tmp_path):
    with pytest.raises(ValueError, match="rl.offline_reward = 'rm' needs reward_scorer"):
        semi_online.train_offline_rl(agent, episodes, UI, _cfg(offline_reward="rm"), workdir=str(tmp_path))
    with pytest.raises(ValueError, match="rl.offline_reward = 'rule' takes no reward_scorer"):
        semi_online.train_offline_rl(agent, episodes, UI, _cfg(), workdir=str(tmp_path), reward_scorer=object())


def _quickstart(**fields):
    return load_config(str(REPO / "configs" / "quickstart.py"), **{
        "data.num_train_episodes": 1, "data.num_test_episodes": 1, "data.templates": ("music.play",),
        "model.checkpoint": "", "model.num_hidden_layers": 1, **fields})


def test_quickstart_loads_the_offline_reward_model_before_training(tmp_path):
    """rl.offline_reward = rm: the quickstart builds the RM scorer from rl.rm_checkpoint_dir (its weights, scored as
    rl.rm_scorer) before any training, and names the field when a setting cannot work."""
    from gui_jax.jobs import quickstart
    from gui_jax.rl.agent import Agent
    from gui_jax.train.checkpoint import Checkpointer
    from gui_jax.train.state import init_train_state, make_optimizer
    c = _quickstart(offline_rl_baseline=True, semi_online_rl=False, **{"rl.offline_reward": "rm"})
    with pytest.raises(ValueError, match=r"config.rl.rm_checkpoint_dir = '': rl.offline_reward = 'rm' needs"):
        quickstart.offline_reward_scorer(c, UI)
    rm = Agent(c, seed=7)
    folder = tmp_path / "rm" / "checkpoints"
    ck = Checkpointer(str(folder), max_to_keep=0)
    ck.save(init_train_state(rm.params, make_optimizer(1e-3), seed=0), {}, force=True, ckpt_id=5)
    ck.close()
    c.rl.rm_checkpoint_dir = str(folder)
    scorer = quickstart.offline_reward_scorer(c, UI)
    assert isinstance(scorer, LikelihoodScorer)
    assert all(np.array_equal(np.asarray(a), np.asarray(b))
               for a, b in zip(jax.tree.leaves(scorer.agent.params), jax.tree.leaves(rm.params)))
    assert quickstart.offline_reward_scorer(_quickstart(), UI) is None  # the rule reward needs no RM
    c.offline_rl_baseline = False
    with pytest.raises(ValueError, match="set config.offline_rl_baseline=True"):
        quickstart.offline_reward_scorer(c, UI)
