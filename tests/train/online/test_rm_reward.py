"""Reward models in the online trainer: the rule/RM task-reward switch (hand-computed GRPO advantages under a
stub RM), GUI-Shepherd's dense PRM reward through PPO's reward_fn hook, the critic initialised from the RM,
the trained RM scoring live rollouts end to end, and config errors that name the field."""
import pathlib
import types

import jax
import numpy as np
import pytest

from gui_jax.core.types import Action
from gui_jax.envs.sim import make_task
from gui_jax.rewards.rm_scoring import RewardModelConfig
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.online import train_online
from gui_jax.train.online.config import env_block, online_block, validate_online
from gui_jax.train.online.ppo import Critic, ppo_samples
from gui_jax.train.online.rewards import RMTrajectoryScorer, apply_rewards, critic_params_from_rm
from gui_jax.train.online.selection import Traj
from support.oracle_policy import DIALECT, EncodedOracle, oracle_prompt, small_agent as _agent

ROOT = pathlib.Path(__file__).resolve().parents[3]
PCFG = PromptConfig(dialect=DIALECT, observation="ui_text")
TEMPLATES = ("settings.wifi_on", "clock.alarm_toggle", "music.play", "tasks.complete")


@pytest.fixture(scope="module")
def agent():
    return _agent()


class StubRM:
    """P(+) of the outcome: 0.8 for even trials, 0.3 for odd ones; step scores given per step index."""

    def __init__(self, step_p=(0.2, 0.7, 0.9)):
        self.step_p, self.seen = step_p, []

    def outcome_scores(self, records):
        self.seen += list(records)
        return np.array([0.8 if r.trial % 2 == 0 else 0.3 for r in records])

    def step_scores(self, records):
        return [np.array([self.step_p[t % len(self.step_p)] for t in range(len(r.steps))]) for r in records]


def _cfg(algorithm, **kw):
    c = online_block(algorithm)
    c.iterations, c.episodes_per_iteration, c.num_rollouts, c.max_steps = 1, 2, 4, 4
    c.learning_rate, c.micro_batch_size, c.checkpoint_every, c.kl_coef = 1e-3, 8, 10, 1e-3
    c.recompute_old_logprobs = True
    c.curriculum = False
    for k, v in kw.items():
        c[k] = v
    return c


def _env_cfg():
    e = env_block()
    e.n_envs, e.health_interval_s = 4, 0.0
    return e


def _tasks():
    return [make_task(t, s) for t in TEMPLATES for s in (1, 2)]


# ------------------------------------------------------------------------------------------ task reward switch
def test_rm_task_reward_sets_the_trained_advantages_and_logs_agreement(agent):
    from gui_jax.envs.pool import EnvPool, PoolConfig
    from gui_jax.envs.sim import PhoneSim
    from gui_jax.rl.rollout import RolloutConfig, RolloutEngine
    from gui_jax.train.online import advantage_step, records_to_trajs
    cfg = _cfg("grpo", reward="rm", rm_threshold=0.5)
    pool = EnvPool(lambda slot: PhoneSim(render=False, max_steps=30), PoolConfig(4, 0, health_interval_s=0))
    with pool, RolloutEngine(EncodedOracle(agent), pool, PCFG, RolloutConfig(mode="sync", max_steps=4),
                             prompt_fn=oracle_prompt) as engine:
        records = engine.run(_tasks()[:2], trials=4)
    trajs, _ = records_to_trajs(records)
    rule = np.array([r.success for r in records])
    rm = StubRM()
    fn, metrics = apply_rewards(records, trajs, cfg, rm)
    samples, _ = advantage_step(types.SimpleNamespace(buffer=None), trajs, cfg, np.random.default_rng(0), reward_fn=fn)
    # each group of 4 has RM successes [1, 0, 1, 0] (trials 0..3): A = ±0.5 / (std_ddof1 = sqrt(1/3)) + 1e-6
    rm_success = np.array([r.trial % 2 == 0 for r in records])
    want = np.where(rm_success, 0.5, -0.5) / (np.sqrt(1 / 3) + 1e-6)
    np.testing.assert_allclose([t.advantage for t in trajs], want, rtol=1e-5)
    np.testing.assert_allclose([s.advantage for s in samples], np.repeat(want, [len(r.steps) for r in records]),
                               rtol=1e-5)
    assert [t.success for t in trajs] == list(rm_success)
    assert metrics["reward_rule_mean"] == pytest.approx(rule.mean()) and metrics["reward_rm_mean"] == 0.5
    assert metrics["rm_p_mean"] == pytest.approx(0.55)
    assert metrics["rm_agreement"] == pytest.approx(np.mean(rule == rm_success))
    assert metrics["rm_false_positive"] == int((rm_success & ~rule).sum())
    # the rule reward on the same records trains on the env's own check instead
    trajs_rule, _ = records_to_trajs(records)
    apply_rewards(records, trajs_rule, _cfg("grpo"), rm)
    assert [t.success for t in trajs_rule] == list(rule)


def test_rule_reward_ignores_the_rm():
    cfg = _cfg("grpo")
    trajs = [Traj("a", True, []), Traj("a", False, [])]
    recs = [types.SimpleNamespace(trial=k, steps=[]) for k in (1, 0)]  # the stub would flip both
    fn, metrics = apply_rewards(recs, trajs, cfg, StubRM())
    assert fn is None and [t.success for t in trajs] == [True, False] and "rm_agreement" not in metrics


# ------------------------------------------------------------------------------------------ dense PRM reward
def test_prm_dense_reward_through_the_ppo_hook_equals_hand_values(agent):
    cfg = _cfg("ppo", step_reward="prm", prm_weight=0.5, format_weight=0.1, gamma=1.0, gae_lambda=1.0,
               normalize_advantages=False, outcome_reward=2.0, micro_batch_size=4)
    prompt = oracle_prompt(make_task(TEMPLATES[0], 1), [], None)
    steps = [types.SimpleNamespace(generation=agent.policy.encode(prompt, f"step {k}"), action=a)
             for k, a in enumerate([Action("click", x=1.0, y=2.0), None, Action("terminate", status="success")])]
    rec = types.SimpleNamespace(trial=0, steps=steps)
    traj = Traj("a", True, steps)
    fn, metrics = apply_rewards([rec], [traj], cfg, StubRM(step_p=(0.2, 0.7, 0.9)))
    # r_t = 0.5·P_t + 0.1·[parsed]: [0.1 + 0.1, 0.35 + 0, 0.45 + 0.1]
    np.testing.assert_allclose([fn(traj, t) for t in range(3)], [0.2, 0.35, 0.55], rtol=1e-6)
    assert metrics["prm_p_mean"] == pytest.approx(0.6) and metrics["dense_reward_mean"] == pytest.approx(1.1 / 3)
    # through PPO: a zero value head (V = 0) with γ = λ = 1 gives A_t = Σ_{k≥t} r_k, outcome 2·1 on the last step
    critic = Critic(agent, cfg)
    samples, _ = ppo_samples(critic, [traj], cfg, reward_fn=fn)
    np.testing.assert_allclose([s.advantage for s in samples], [3.1, 2.9, 2.55], rtol=1e-5)


def test_user_reward_fn_adds_to_the_dense_reward():
    cfg = _cfg("ppo", step_reward="none", format_weight=0.25)
    steps = [types.SimpleNamespace(action=None), types.SimpleNamespace(action=Action("wait", time=1.0))]
    traj = Traj("a", False, steps)
    fn, _ = apply_rewards([types.SimpleNamespace(trial=0, steps=steps)], [traj], cfg, None, lambda tr, t: 10.0 * t)
    assert [fn(traj, 0), fn(traj, 1)] == [0.0, 10.25]


# ------------------------------------------------------------------------------------------ critic from the RM
def test_critic_init_copies_the_rm_backbone_bitwise(agent):
    rm_agent = _agent(seed=1)
    rm = RMTrajectoryScorer(rm_agent, PCFG, RewardModelConfig(history_images=0, system_prompt=False))
    critic = Critic(agent, _cfg("ppo", critic_init="rm"), params=critic_params_from_rm(agent, rm))
    got = jax.tree.leaves(critic.state.params["backbone"])
    want = jax.tree.leaves(rm_agent.params)
    policy = jax.tree.leaves(agent.params)
    assert len(got) == len(want)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, want))
    assert not all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, policy))
    from gui_jax.models.heads import _lm_head_columns
    cols = np.asarray(_lm_head_columns(rm_agent.model(), list(rm.label_ids)), np.float32)
    np.testing.assert_array_equal(np.asarray(critic.state.params["value_kernel"]), cols[:, 0] - cols[:, 1])
    with pytest.raises(ValueError, match=r"online\.critic_init"):
        critic_params_from_rm(agent, RMTrajectoryScorer(_agent(seed=1, layers=1), PCFG, RewardModelConfig()))


def test_prm_ppo_with_a_real_rm_scores_live_rollouts(agent, tmp_path):
    rm = RMTrajectoryScorer(_agent(seed=1), PCFG, RewardModelConfig(history_images=0, system_prompt=False))
    seen = []
    cfg = _cfg("ppo", step_reward="prm", critic_init="rm", outcome_reward=0.0, format_weight=0.1, reward="rm",
               num_rollouts=2, critic_learning_rate=1e-3)
    summary = train_online(agent, _tasks()[:2], PCFG, cfg, workdir=str(tmp_path), env_cfg=_env_cfg(),
                           prompt_fn=oracle_prompt, policy=EncodedOracle(agent), reward_model=rm,
                           on_iteration=lambda run, trajs, m: seen.append(m))
    m = seen[0]
    assert summary["rollout_report"]["completed"] == 4 and rm.unscorable == 0
    assert 0.0 < m["prm_p_mean"] < 1.0 and 0.0 < m["rm_p_mean"] < 1.0 and 0.0 <= m["rm_agreement"] <= 1.0
    assert m["dense_reward_mean"] > 0 and "critic_loss" in m


# ------------------------------------------------------------------------------------------ bad configs
@pytest.mark.parametrize("field,value,algorithm,match", [
    ("reward", "model", "grpo", r"online\.reward = 'model'"),
    ("rm_threshold", 1.5, "grpo", r"online\.rm_threshold"),
    ("step_reward", "prm", "grpo", r"online\.step_reward = 'prm' is a PPO reward setting"),
    ("step_reward", "orm", "ppo", r"online\.step_reward = 'orm'"),
    ("critic_init", "policy", "ppo", r"online\.critic_init = 'policy'"),
    ("format_weight", 0.5, "adagrpo", r"online\.format_weight"),
    ("prm_weight", float("inf"), "ppo", r"online\.prm_weight"),
    ("max_staleness", -1, "grpo", r"online\.max_staleness"),
])
def test_bad_reward_fields_are_named(field, value, algorithm, match):
    with pytest.raises(ValueError, match=match):
        validate_online(_cfg(algorithm, **{field: value}))


def test_rm_switch_without_a_reward_model_names_rm_checkpoint_dir(agent, tmp_path):
    with pytest.raises(ValueError, match=r"online\.rm_checkpoint_dir"):
        train_online(agent, _tasks(), PCFG, _cfg("grpo", reward="rm"), workdir=str(tmp_path), env_cfg=_env_cfg(),
                     prompt_fn=oracle_prompt, policy=EncodedOracle(agent))


def test_online_rl_job_names_a_missing_rm_checkpoint_dir():
    from gui_jax.config_check import ConfigError
    from gui_jax.jobs import load_config
    from gui_jax.jobs.online_rl import load_trajectory_rm
    recipe = str(ROOT / "configs" / "ppo.py")
    config = load_config(recipe, **{"online.step_reward": "prm"})
    with pytest.raises(ConfigError, match=r"config\.online\.rm_checkpoint_dir = ''"):
        load_trajectory_rm(config, PCFG)
    assert load_trajectory_rm(load_config(recipe), PCFG) is None
    with pytest.raises(ConfigError, match=r"config\.online\.reward = 'judge'"):
        load_trajectory_rm(load_config(recipe, **{"online.reward": "judge"}), PCFG)
