"""Rollout engine: async == sync outcomes for a deterministic policy, coalescing, staleness bound, records."""
import threading

import numpy as np
import pytest

from gui_jax.envs.pool import EnvPool, PoolConfig
from gui_jax.envs.sim import TEMPLATES, PhoneSim, expert_actions, make_task
from gui_jax.envs.sim.faults import FaultyEnv, LatencyModel
from gui_jax.rl.prompting import PromptConfig
from gui_jax.rl.rollout import RolloutConfig, RolloutEngine, RolloutError
from support.oracle_policy import DIALECT, OracleOrRandomPolicy, oracle_prompt

PCFG = PromptConfig(dialect=DIALECT, observation="ui_text")
TASKS = [make_task(name, 1) for name in sorted(TEMPLATES)[1::4]]  # 20 tasks


def _pool(n_active, median_s=0.003):
    return EnvPool(lambda s: FaultyEnv(PhoneSim(render=False), LatencyModel(median_s, sigma=1.0), seed=s, sleep=True),
                   PoolConfig(n_active, 0, health_interval_s=0))


def _outcome(r):
    return (r.task_id, r.trial), (r.status, r.success, r.truncated, [s.response for s in r.steps],
                                  [s.info.get("valid") for s in r.steps])


def test_async_and_sync_give_the_same_outcomes_for_a_deterministic_policy():
    policy = OracleOrRandomPolicy(p_random=0.3, unparsable_prob=0.1)
    out = {}
    for mode in ("sync", "async"):
        with _pool(5) as pool, RolloutEngine(policy, pool, PCFG, RolloutConfig(mode=mode, max_steps=10, batch_cap=4),
                                             prompt_fn=oracle_prompt) as eng:
            recs = eng.run(TASKS, trials=2)
            out[mode] = dict(_outcome(r) for r in recs)
            stats = eng.stats()
            assert [(r.round, r.index) for r in recs] == [(0, i) for i in range(2 * len(TASKS))]
            assert stats["completed"] == 2 * len(TASKS) and stats["policy_requests"] == sum(len(r.steps) for r in recs)
    assert out["sync"] == out["async"]
    outcomes = [v[1] for v in out["sync"].values()]
    assert 0 < sum(outcomes) < len(outcomes)  # a mix of successes and failures
    assert any(not all(v[4][i] is not False for i in range(len(v[4]))) for v in out["sync"].values())


def test_async_coalesces_policy_requests_into_batches():
    policy = OracleOrRandomPolicy()
    with _pool(8, median_s=0.01) as pool, RolloutEngine(
            policy, pool, PCFG, RolloutConfig(mode="async", max_steps=10, batch_cap=3, max_wait_s=0.02),
            prompt_fn=oracle_prompt) as eng:
        recs = eng.run(TASKS, trials=1)
        stats = eng.stats()
    assert sum(policy.calls) == stats["policy_requests"] == sum(len(r.steps) for r in recs)
    assert stats["generate_calls"] == len(policy.calls) < stats["policy_requests"]
    assert max(policy.calls) == 3 and stats["max_batch"] == 3  # the cap binds, never exceeded
    # the oracle policy solves every task
    assert all(r.success and r.status == "completed" for r in recs)


def test_records_carry_generation_tokens_logprobs_and_versions():
    task = make_task("settings.wifi_on", 3)
    with _pool(2) as pool, RolloutEngine(OracleOrRandomPolicy(), pool, PCFG, RolloutConfig(mode="async"),
                                         prompt_fn=oracle_prompt) as eng:
        eng.submit([task], trials=2)
        [group] = list(eng.groups())
        eng.set_policy()  # the next iteration reuses the running engine
        assert eng.submit([task, make_task("clock.new_alarm", 1)], trials=1) == 1
        second = list(eng.groups())
        assert sorted(g[0].task_id for g in second) == sorted([task.task_id, "clock.new_alarm#1"])
        assert all(g[0].round == 1 and g[0].policy_version == 1 for g in second)
    assert [r.trial for r in group] == [0, 1] and {r.group_id for r in group} == {task.task_id}
    expert = [st.action for st in expert_actions(task)]
    for r in group:
        assert (r.status, r.success, r.retries, r.policy_version) == ("completed", True, 0, 0)
        assert [s.action for s in r.steps] == expert
        for t, s in enumerate(r.steps):
            assert s.prompt[0][-1]["content"][0]["text"] == f"settings.wifi_on#3#{t}"
            assert s.prompt_ids.dtype == np.int32 and s.response_ids.tolist() == [len(s.response)]
            assert s.logprobs.tolist() == [-0.5] and s.policy_version == 0 and "valid" in s.info
        assert r.steps[-1].info["success"] is True


@pytest.mark.parametrize("mode,k", [("async", 0), ("async", 1), ("sync", 0)])
def test_staleness_bound_is_enforced(mode, k):
    with _pool(4) as pool, RolloutEngine(OracleOrRandomPolicy(p_random=0.2), pool, PCFG,
                                         RolloutConfig(mode=mode, max_steps=8, max_staleness=k),
                                         prompt_fn=oracle_prompt) as eng:
        eng.submit(TASKS, trials=1)
        seen = []
        for rec in eng.results():  # the trainer updates the policy after every trajectory
            lag = eng.policy_version - rec.policy_version
            assert 0 <= lag <= k, (lag, rec.task_id)
            assert all(eng.policy_version - s.policy_version <= k for s in rec.steps)
            seen.append(rec.task_id)
            eng.set_policy()
        stats = eng.stats()
    assert sorted(seen) == sorted(t.task_id for t in TASKS)  # nothing dropped
    assert stats["policy_version"] == len(TASKS)
    assert stats["stale_restarts"] > 0  # in-flight episodes of older versions were re-run


def test_policy_failure_surfaces_instead_of_hanging():
    class Broken(OracleOrRandomPolicy):
        def generate(self, prompts, **kw):
            raise ZeroDivisionError("sampler bug")

    with _pool(2) as pool, RolloutEngine(Broken(), pool, PCFG, RolloutConfig(mode="async"),
                                         prompt_fn=oracle_prompt) as eng:
        with pytest.raises(RolloutError, match="sampler bug"):
            eng.run(TASKS[:3])


def test_policy_timeout_is_bounded():
    release = threading.Event()

    class Stuck(OracleOrRandomPolicy):
        def generate(self, prompts, **kw):
            release.wait(5)
            return super().generate(prompts, **kw)

    with _pool(1) as pool, RolloutEngine(Stuck(), pool, PCFG, RolloutConfig(mode="async", policy_timeout_s=0.3),
                                         prompt_fn=oracle_prompt) as eng:
        with pytest.raises(RolloutError, match="did not answer"):
            eng.run(TASKS[:1])
        release.set()


def test_async_rollouts_against_env_servers_match_in_process():
    from gui_jax.envs.backends import EnvOptions
    from gui_jax.envs.client import RemoteEnv
    from gui_jax.envs.server import ServerConfig, ServerThread
    token = "rollout-test-token-0123456789"
    servers = [ServerThread(ServerConfig(token=token, max_sessions=2)) for _ in range(2)]
    policy = OracleOrRandomPolicy(p_random=0.3)
    tasks = TASKS[:6]
    try:
        opts = EnvOptions(render=False, tree=False)  # the oracle prompt reads no UI tree: skip serialising it
        remote = EnvPool(lambda s: RemoteEnv(servers[s].url, token, timeout_s=10, options=opts),
                         PoolConfig(2, 0, health_interval_s=0))
        out = {}
        for name, pool in (("remote", remote), ("local", _pool(2))):
            with pool, RolloutEngine(policy, pool, PCFG, RolloutConfig(mode="async", max_steps=10),
                                     prompt_fn=oracle_prompt) as eng:
                out[name] = dict(_outcome(r) for r in eng.run(tasks, trials=1))
        assert out["remote"] == out["local"]
    finally:
        for s in servers:
            s.stop(timeout_s=2)
