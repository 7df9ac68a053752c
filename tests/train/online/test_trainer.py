"""Online RL trainers: hand-checked SPA / AdaPR / pruning / FCF through the trainer's selection step,
AdaGRPO kill-and-resume exactness, fault accounting with crashing and hanging envs, PPO's GAE and critic."""
import types

import jax
import numpy as np
import pytest

from gui_jax.envs.pool import EnvPool, PoolConfig
from gui_jax.envs.sim import PhoneSim, make_task
from gui_jax.envs.sim.faults import EpisodeAttempts, FaultModel, FaultyEnv, LatencyModel, fault_at
from gui_jax.rl.adagrpo import AdaPRBuffer, FailureCurriculum
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.fit import StopRequested
from gui_jax.train.online import OnlineRun, advantage_step, train_online
from gui_jax.train.online.config import online_block
from gui_jax.train.online.ppo import Critic, ppo_samples
from gui_jax.train.online.selection import Traj, sample_tasks, step_samples
from support.oracle_policy import DIALECT, EncodedOracle, oracle_prompt, small_agent as _agent

PCFG = PromptConfig(dialect=DIALECT, observation="ui_text")
TEMPLATES = ("settings.wifi_on", "clock.alarm_toggle", "music.play", "tasks.complete")


@pytest.fixture(scope="module")
def agent():
    return _agent()


def _cfg(algorithm, **kw):
    c = online_block(algorithm)
    c.iterations, c.episodes_per_iteration, c.num_rollouts, c.max_steps = 3, 2, 4, 4
    c.learning_rate, c.micro_batch_size, c.checkpoint_every, c.kl_coef = 1e-3, 8, 1, 1e-3
    c.recompute_old_logprobs = True   # the scripted policy's logprobs are zeros
    c.curriculum = False
    for k, v in kw.items():
        c[k] = v
    return c


def _env_cfg(n=4):
    from gui_jax.train.online.config import env_block
    e = env_block()
    e.n_envs, e.health_interval_s = n, 0.0
    return e


def _tasks():
    return [make_task(t, s) for t in TEMPLATES for s in (1, 2)]


def _traj(task, success, length, agent, tag=0):
    steps = [agent.policy.encode(oracle_prompt(make_task(TEMPLATES[0], 1), [None] * k, None),
                                 f"{task}-{tag}-{k}") for k in range(length)]
    return Traj(task, success, steps)


# ------------------------------------------------------------------------------------------ SPA / AdaPR / FCF
def test_spa_advantages_through_the_trainer_match_hand_values(agent):
    # group a: successes of length 2 and 4, failures of length 3 and 5; group b: all fail.
    trajs = [_traj("a", True, 2, agent), _traj("a", True, 4, agent), _traj("a", False, 3, agent),
             _traj("a", False, 5, agent), _traj("b", False, 2, agent), _traj("b", False, 3, agent)]
    cfg = _cfg("adagrpo", adapr=False, prune_negatives=False)
    samples, metrics = advantage_step(types.SimpleNamespace(buffer=None), trajs, cfg, np.random.default_rng(0))
    # r̃ = 1 − (T − T_min)/T with T_min = 2: [1, 0.5, 0, 0]; broadcast over 2+4+3+5 = 14 steps;
    # step-weighted mean 4/14, unbiased (ddof 1 over steps) std.
    r = np.array([1.0, 0.5, 0.0, 0.0])
    w = np.array([2, 4, 3, 5])
    mean = (w * r).sum() / w.sum()
    std = np.sqrt((w * (r - mean) ** 2).sum() / (w.sum() - 1))
    want = (r - mean) / (std + 1e-6)
    np.testing.assert_allclose([t.advantage for t in trajs[:4]], want, rtol=1e-5)
    assert [t.advantage for t in trajs[4:]] == [0.0, 0.0]
    # every step of a trajectory trains with its trajectory's advantage; zero-advantage ones are skipped
    assert len(samples) == 14 and metrics["trained_trajectories"] == 4
    np.testing.assert_allclose([s.advantage for s in samples], np.repeat(want, w), rtol=1e-5)


def test_adapr_insert_evict_mix_and_negative_pruning_through_the_trainer(agent):
    cfg = _cfg("adagrpo", spa=False)  # plain GRPO advantages: one success of 4 → A = [1.5, −0.5, −0.5, −0.5]
    run = types.SimpleNamespace(buffer=AdaPRBuffer(capacity=1, tau_adv=1.0, max_fraction=0.25))
    # iteration 1: a = [1, 0, 0, 0] and c = [1, 0, 0, 0]; z = all fail (A = 0, kept, not trained).
    it1 = ([_traj("a", k == 0, 3, agent, 1) for k in range(4)] + [_traj("c", k == 0, 3, agent, 1) for k in range(4)]
           + [_traj("z", False, 2, agent, 1) for _ in range(4)])
    samples, m = advantage_step(run, it1, cfg, np.random.default_rng(0))
    np.testing.assert_allclose([t.advantage for t in it1[:8]], [1.5, -0.5, -0.5, -0.5] * 2, rtol=1e-5)
    # 2 positives allow 4 negatives: 2 of the 6 (all at −0.5) are pruned; zeros are never pruned
    assert (m["pruned"], m["replayed"], m["buffer_inserted"], m["buffer_size"]) == (2, 0, 2, 1)
    assert m["trained_trajectories"] == 6 and len(samples) == 6 * 3
    # capacity 1 with two entries at A = 1.5: the older (a) is evicted, c stays
    assert run.buffer.tasks() == ["c"]
    # iteration 2: b = [1, 1, 0, 0] (A = ±0.866 < τ) and d = [1, 0, 0, 0]; the nominal batch is 2 × 4 = 8,
    # so at most floor(0.25 · 8) = 2 come from the buffer: the one entry (c's success) is replayed.
    it2 = [_traj("b", k < 2, 2, agent, 2) for k in range(4)] + [_traj("d", k == 0, 2, agent, 2) for k in range(4)]
    samples, m = advantage_step(run, it2, cfg, np.random.default_rng(1))
    np.testing.assert_allclose([t.advantage for t in it2[:4]], [0.866025] * 2 + [-0.866025] * 2, rtol=1e-5)
    assert (m["pruned"], m["replayed"], m["buffer_inserted"]) == (0, 1, 1)
    assert run.buffer.tasks() == ["d"]
    replayed = samples[-3:]  # the replayed trajectory comes last, its 3 steps with its stored advantage
    np.testing.assert_allclose([s.advantage for s in replayed], [1.5] * 3, rtol=1e-5)
    for s, orig in zip(replayed, it1[4].steps):
        np.testing.assert_array_equal(s.prompt_ids, orig.prompt_ids)
        np.testing.assert_array_equal(s.response_ids, orig.response_ids)
    assert len(samples) == 8 * 2 + 3


def test_fcf_weights_and_removal_through_the_trainer(agent, tmp_path):
    fcf = FailureCurriculum(fail_epochs=2, cooldown_epochs=3, decay=0.5, remove_after=6)
    tasks = [make_task(t, 1) for t in TEMPLATES[:2]]
    for _ in range(2):
        fcf.record_epoch({tasks[0].task_id: [0.0, 0.0], tasks[1].task_id: [1.0, 0.0]})
    np.testing.assert_allclose(fcf.weights([t.task_id for t in tasks]), [0.25, 1.0])
    rng = np.random.default_rng(0)
    picks = [sample_tasks(tasks, 1, rng, fcf)[0].task_id for _ in range(4000)]
    assert abs(picks.count(tasks[0].task_id) / 4000 - 0.25 / 1.25) < 0.025
    # Through train_online: a task that always fails is cooled down, then removed and never sampled again.
    cfg = _cfg("adagrpo", iterations=4, episodes_per_iteration=2, num_rollouts=2, fcf_remove_after=3,
               adapr=False, checkpoint_every=10)
    seen = []
    train_online(agent, tasks, PCFG, cfg, workdir=str(tmp_path), env_cfg=_env_cfg(), prompt_fn=oracle_prompt,
                 policy=EncodedOracle(agent, p_random=0.0, fail=(TEMPLATES[0],)),
                 on_iteration=lambda run, trajs, m: seen.append((sorted({t.task_id for t in trajs}),
                                                                 run.fcf.weight(tasks[0].task_id))))
    assert [w for _, w in seen] == [1.0, 0.25, 0.0, 0.0]
    assert [tasks[0].task_id in ids for ids, _ in seen] == [True, True, True, False]


# ------------------------------------------------------------------------------------------ resume
def test_adagrpo_kill_and_resume_restores_buffer_and_failure_history(tmp_path):
    tasks = _tasks()[:4]
    kw = dict(iterations=3, fcf_fail_epochs=1, adapr_tau=0.5)

    def go(agent, workdir, stop=None, states=None):
        cfg = _cfg("adagrpo", stop_after_steps=stop, **kw)
        hook = None if states is None else (lambda run, trajs, m: states.append(run.side_state()))
        return train_online(agent, tasks, PCFG, cfg, workdir=workdir, env_cfg=_env_cfg(),
                            prompt_fn=oracle_prompt, policy=EncodedOracle(agent, fail=(TEMPLATES[1],)),
                            on_iteration=hook)

    ref = _agent()
    init = [np.asarray(x).copy() for x in jax.tree.leaves(ref.params)]
    ref_states = []
    go(ref, str(tmp_path / "a"), states=ref_states)
    run_agent = _agent()
    states = []
    with pytest.raises(StopRequested):
        go(run_agent, str(tmp_path / "b"), stop=2, states=states)
    at_stop = states[-1]
    assert at_stop["adapr"]["entries"] and at_stop["fcf"]["fail_count"]  # something to restore
    fresh = _agent(seed=1)  # a fresh process starts from other weights
    probe = OnlineRun(fresh, tasks, _cfg("adagrpo", **kw), workdir=str(tmp_path / "b"))
    assert probe.iteration == 2 and probe.side_state() == at_stop
    probe.close()
    resumed_states = []
    summary = go(fresh, str(tmp_path / "b"), states=resumed_states)
    assert resumed_states[-1] == ref_states[-1]  # same buffer, failure history and report at the end
    assert summary["iterations"] == 3
    assert summary["rollout_report"]["episodes"] == 3 * 2 * 4
    for x, y in zip(jax.tree.leaves(ref.params), jax.tree.leaves(fresh.params)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-6)
    assert any(not np.allclose(np.asarray(x), z) for x, z in zip(jax.tree.leaves(ref.params), init))


# ------------------------------------------------------------------------------------------ faults
def test_online_grpo_with_crashing_and_hanging_envs_accounts_for_every_episode(agent, tmp_path):
    faults, attempts = FaultModel(crash_prob=0.3, hang_prob=0.2, hang_s=0.3), EpisodeAttempts()
    # the schedule (task, attempt, step) is fixed: every task's group of 4 has an attempt that fails at its
    # first step, so faults and retries happen whichever env or thread serves which episode
    assert all(any(fault_at(faults, 0, t.task_id, a, 0) for a in range(4)) for t in _tasks())

    def make_env(slot):
        return FaultyEnv(PhoneSim(render=False, max_steps=30), LatencyModel(), faults, seed=0, sleep=True,
                         attempts=attempts)
    pool = EnvPool(make_env, PoolConfig(8, 2, call_timeout_s=0.1, reset_timeout_s=5.0, lease_timeout_s=30.0,
                                        health_interval_s=0, restart_backoff_s=0.01))
    cfg = _cfg("grpo", iterations=2, episodes_per_iteration=3, max_episode_retries=1, checkpoint_every=10)
    with pool:
        summary = train_online(agent, _tasks(), PCFG, cfg, workdir=str(tmp_path), pool=pool,
                               prompt_fn=oracle_prompt, policy=EncodedOracle(agent))
    rep = summary["rollout_report"]
    assert summary["iterations"] == 2
    assert rep["episodes"] == 2 * 3 * 4 == rep["completed"] + rep["env_failure"]
    assert rep["failed_attempts"] > 0 and rep["retried"] > 0  # faults happened and were retried
    assert rep["successes"] <= rep["completed"]


# ------------------------------------------------------------------------------------------ PPO
def _hand_gae(r, v, gamma, lam):
    adv = np.zeros(len(r))
    nxt = 0.0
    for t in reversed(range(len(r))):
        v_next = v[t + 1] if t + 1 < len(r) else 0.0
        nxt = r[t] + gamma * v_next - v[t] + gamma * lam * nxt
        adv[t] = nxt
    return adv


@pytest.mark.parametrize("level", ["step", "token"])
def test_ppo_gae_through_the_trainer_equals_a_hand_loop(agent, level):
    cfg = _cfg("ppo", gamma=0.9, gae_lambda=0.8, gae_level=level, normalize_advantages=False,
               critic_learning_rate=1e-2, micro_batch_size=4)
    critic = Critic(agent, cfg)
    key = jax.random.key(3)
    critic.state.params["value_kernel"][...] = 0.5 * jax.random.normal(key, critic.state.params["value_kernel"].shape)
    trajs = [_traj("a", True, 3, agent), _traj("a", False, 2, agent), _traj("b", True, 1, agent)]
    reward_fn = lambda traj, t: 0.1 * (t + 1)  # the per-step reward hook
    samples0 = [s for t in trajs for s in step_samples(t, 0.0)]
    vals = critic.token_values(samples0)
    samples, metrics = ppo_samples(critic, trajs, cfg, reward_fn=reward_fn)
    k = 0
    for t in trajs:
        n = len(t.steps)
        r = [0.1 * (i + 1) for i in range(n)]
        r[-1] += float(t.success)
        if level == "step":
            want = _hand_gae(r, [vals[k + i][0] for i in range(n)], 0.9, 0.8)
            np.testing.assert_allclose([samples[k + i].advantage for i in range(n)], want, rtol=1e-4, atol=1e-5)
        else:
            tok_v = np.concatenate([vals[k + i][:samples0[k + i].response_ids.size] for i in range(n)])
            tok_r = np.zeros(len(tok_v))
            at = 0
            for i in range(n):
                at += samples0[k + i].response_ids.size
                tok_r[at - 1] = r[i]
            want = _hand_gae(tok_r, tok_v, 0.9, 0.8)
            got = np.concatenate([samples[k + i].advantage for i in range(n)])
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        k += n
    assert "critic_loss" in metrics


def test_ppo_value_loss_decreases_on_a_fixed_batch(agent):
    cfg = _cfg("ppo", critic_learning_rate=3e-3, micro_batch_size=4)
    critic = Critic(agent, cfg)
    trajs = [_traj("a", True, 2, agent), _traj("b", False, 2, agent)]
    samples = [s for t in trajs for s in step_samples(t, 0.0)]
    targets = [1.0, 1.0, -0.5, 0.25]
    losses = [critic.update(samples, targets, level="step")["critic_loss"] for _ in range(6)]
    assert losses[-1] < 0.75 * losses[0]
    assert min(losses[1:]) < losses[0]


def test_ppo_online_run_end_to_end(agent, tmp_path):
    cfg = _cfg("ppo", iterations=1, critic_learning_rate=1e-3, num_rollouts=2)
    logged = []

    class Log:
        def write(self, step, metrics, prefix=""):
            logged.append((step, prefix, dict(metrics)))

    summary = train_online(agent, _tasks()[:2], PCFG, cfg, workdir=str(tmp_path), env_cfg=_env_cfg(),
                           prompt_fn=oracle_prompt, policy=EncodedOracle(agent), logger=Log())
    assert summary["iterations"] == 1 and summary["rollout_report"]["completed"] == 4
    # each phase of the iteration is timed, so a slow algorithm shows where its time goes
    (step, _, m), = logged
    phases = ("rollout_seconds", "reward_seconds", "advantage_seconds", "update_seconds")
    assert step == 1 and all(m[k] >= 0.0 for k in phases) and m["advantage_seconds"] > 0.0  # the critic ran
