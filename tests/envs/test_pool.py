"""EnvPool: bounded calls, failover to standbys, background rebuilds; rollouts with a fixed fault schedule."""
import time
from collections import Counter

import pytest

from gui_jax.core.types import Action
from gui_jax.envs.backends import EnvOptions
from gui_jax.envs.base import EnvFailure
from gui_jax.envs.client import RemoteEnv
from gui_jax.envs.pool import EnvCallTimeout, EnvPool, PoolConfig, PoolExhausted
from gui_jax.envs.server import ServerConfig, ServerThread
from gui_jax.envs.sim import TEMPLATES, PhoneSim, make_task
from gui_jax.envs.sim.faults import EpisodeAttempts, FaultModel, FaultyEnv, LatencyModel, fault_at
from gui_jax.rl.prompting import PromptConfig
from gui_jax.rl.rollout import RolloutConfig, RolloutEngine, rollout_report
from support.oracle_policy import DIALECT, OracleOrRandomPolicy, oracle_prompt

PCFG = PromptConfig(dialect=DIALECT, observation="ui_text")
TASKS = [make_task(name, 0) for name in sorted(TEMPLATES)[::3]]  # 27 tasks across the apps


# timeouts well above a normal call's worst case on a loaded 2-core machine (a reset once took > 1 s there, so
# a 1 s bound fired on a healthy env), and hangs twice as long as the timeout: only the scheduled hangs time out
FAULTS = FaultModel(crash_prob=0.06, hang_prob=0.04, hang_s=6.0)
FAULT_SEED = 7


def _faulty_factory():
    """Every env, rebuilt ones included, injects faults keyed to (task, attempt, step): which env serves an
    episode is up to the threads, whether and where it fails is not."""
    built, attempts = Counter(), EpisodeAttempts()

    def make(slot):
        built[slot] += 1
        return FaultyEnv(PhoneSim(render=False), LatencyModel(0.002), FAULTS, seed=FAULT_SEED, sleep=True,
                         attempts=attempts)
    return make, built


def _fault_free(policy):
    """{task id: (success, env.step calls)} without faults."""
    pool = EnvPool(lambda s: PhoneSim(render=False), PoolConfig(4, 0, health_interval_s=0))
    with RolloutEngine(policy, pool, PCFG, RolloutConfig(mode="sync", max_steps=12), prompt_fn=oracle_prompt) as eng:
        recs = eng.run(TASKS, trials=1)
    pool.close()
    return {r.task_id: (r.success, len(r.steps)) for r in recs}


def _predicted(task_id, n_steps, max_retries):
    """(status, retries, [fault kinds]) of an episode under the fault schedule."""
    kinds = []
    for attempt in range(max_retries + 1):
        hit = next((k for t in range(-1, n_steps) if (k := fault_at(FAULTS, FAULT_SEED, task_id, attempt, t))), None)
        if hit is None:
            return "completed", attempt, kinds
        kinds.append(hit)
    return "env_failure", max_retries, kinds


@pytest.mark.parametrize("mode,max_retries", [("async", 2), ("sync", 2), ("async", 0)])
def test_rollout_with_faulty_envs_accounts_for_every_episode_exactly(mode, max_retries):
    policy = OracleOrRandomPolicy(p_random=0.15)
    expected = _fault_free(policy)
    make, built = _faulty_factory()
    cfg = PoolConfig(n_active=8, n_standby=2, call_timeout_s=3.0, reset_timeout_s=3.0, health_interval_s=0,
                     restart_backoff_s=0.01, lease_timeout_s=20)
    t0 = time.monotonic()
    with EnvPool(make, cfg) as pool:
        eng = RolloutEngine(policy, pool, PCFG, RolloutConfig(mode=mode, max_steps=12, max_episode_retries=max_retries,
                                                              policy_timeout_s=20, result_timeout_s=20),
                            prompt_fn=oracle_prompt)
        with eng:
            recs = eng.run(TASKS, trials=1)
            stats = eng.stats()
    wall = time.monotonic() - t0
    assert wall < 60, f"rollout took {wall:.1f}s: some wait is not bounded"
    # every task exactly once, with the status, retries and outcome the fault schedule predicts
    assert sorted(r.task_id for r in recs) == sorted(t.task_id for t in TASKS)
    want = {tid: _predicted(tid, n, max_retries) for tid, (_, n) in expected.items()}
    for r in recs:
        status, retries, kinds = want[r.task_id]
        assert (r.status, r.retries, len(r.errors)) == (status, retries, len(kinds)), (r.task_id, r.errors)
        if status == "completed":
            # a retried episode restarts from scratch: its outcome is the fault-free one
            assert r.success == expected[r.task_id][0] and r.steps and r.env_slots[-1] >= 0
        else:
            assert not r.success
    kinds = Counter(k for _, _, ks in want.values() for k in ks)
    assert kinds["crash"] > 0 and kinds["hang"] > 0
    assert any(s == "completed" and n for s, n, _ in want.values()) == (max_retries > 0)  # retried, then done
    ps = stats["pool"]
    assert (ps["env_failures"], ps["call_timeouts"]) == (kinds["crash"], kinds["hang"])
    assert ps["failed_leases"] == ps["env_failures"] + ps["call_timeouts"]
    assert ps["restarts"] >= 1 and sum(built.values()) > 10  # failed envs were rebuilt
    assert ps["promotions"] >= 1  # a standby took over an active role
    assert stats["failed_attempts"] == sum(kinds.values()) == sum(len(r.errors) for r in recs)
    rep = rollout_report(recs)
    status = Counter(r.status for r in recs)
    assert (rep["episodes"], rep["completed"], rep["env_failure"]) == (len(recs), status["completed"],
                                                                       status["env_failure"])
    assert rep["retried"] == sum(r.retries > 0 for r in recs) and rep["failed_attempts"] == stats["failed_attempts"]


@pytest.mark.parametrize("rebuilt_before_lease", [False, True])
def test_hung_call_is_bounded_and_env_rebuilt(rebuilt_before_lease):
    built = Counter()

    def make(slot):
        built[slot] += 1
        hang = FaultModel(hang_prob=1.0, hang_s=3.0) if (slot, built[slot]) == (0, 1) else FaultModel()
        return FaultyEnv(PhoneSim(render=False), faults=hang, seed=slot, sleep=True)

    with EnvPool(make, PoolConfig(1, 1, call_timeout_s=1.0, health_interval_s=0, restart_backoff_s=0.01)) as pool:
        assert pool.wait_ready(2, timeout_s=10) == 2
        task = make_task("settings.wifi_on", 3)
        lease = pool.lease()
        first = lease.slot
        lease.reset(task)
        with pytest.raises(EnvCallTimeout):
            lease.step(Action("wait", time=1.0))
        with pytest.raises(EnvFailure, match="already failed"):
            lease.step(Action("wait", time=1.0))
        lease.release()
        if rebuilt_before_lease:  # the rebuilt env is ready too: the longer-standing standby still wins
            assert pool.wait_ready(2, timeout_s=10) == 2
        lease2 = pool.lease(timeout_s=5)  # the standby is promoted at once, the hung env rebuilds
        assert lease2.slot != first
        lease2.release()
        assert pool.wait_ready(2, timeout_s=10) == 2
        s = pool.stats()
        assert (s["call_timeouts"], s["restarts"], s["promotions"], built[first]) == (1, 1, 1, 2)
        with pool.lease() as env:  # the rebuilt env works
            env.reset(task)
            _, done, info = env.step(Action("wait", time=1.0))
            assert info["valid"] and not done


def test_dead_slots_exhaust_the_pool_without_hanging():
    built = Counter()

    def make(slot):  # slot 0 builds once (then crashes); every other build fails
        built[slot] += 1
        if (slot, built[slot]) == (0, 1):
            return FaultyEnv(PhoneSim(render=False), faults=FaultModel(crash_prob=1.0), seed=0, sleep=False)
        raise OSError("emulator image missing")

    cfg = PoolConfig(1, 1, max_restart_attempts=2, restart_backoff_s=0.01, health_interval_s=0, lease_timeout_s=5)
    with EnvPool(make, cfg) as pool:
        task = make_task("settings.wifi_on", 3)

        def episode(lease):
            lease.reset(task)
            lease.step(Action("wait", time=1.0))
            return "never"

        res = pool.run_with_failover(episode, max_retries=3)
        assert res.status == "env_failure" and res.value is None and res.retries == 3
        assert len(res.errors) == 4 and "EnvCrashError" in res.errors[0]
        assert any("dead" in e for e in res.errors[1:])
        s = pool.stats()
        assert s["dead_slots"] == 2 and s["restart_failures"] >= 4
        with pytest.raises(PoolExhausted, match="dead"):
            pool.lease()


def test_remote_pool_fails_over_when_a_server_dies():
    servers = [ServerThread(ServerConfig(max_sessions=4)) for _ in range(2)]
    try:
        urls = [s.url for s in servers]
        opts = EnvOptions(render=False)
        cfg = PoolConfig(1, 1, call_timeout_s=5, health_interval_s=0.1, health_timeout_s=1,
                         max_restart_attempts=2, restart_backoff_s=0.01)
        with EnvPool(lambda slot: RemoteEnv(urls[slot], timeout_s=5, connect_timeout_s=1, options=opts), cfg) as pool:
            assert pool.wait_ready(2, timeout_s=20) == 2
            task = make_task("settings.wifi_on", 3)
            lease = pool.lease()
            lease.reset(task)
            servers[lease.slot].stop()
            with pytest.raises(EnvFailure):
                lease.step(Action("wait", time=1.0))
            dead = lease.slot
            lease.release()
            with pool.lease(timeout_s=10) as env:
                assert env.slot != dead
                env.reset(task)
                assert env.step(Action("wait", time=1.0))[2]["valid"]
            deadline = time.monotonic() + 10
            while pool.stats()["dead_slots"] < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            s = pool.stats()
            assert s["dead_slots"] == 1 and s["health_checks"] >= 1 and s["promotions"] == 1
    finally:
        for s in servers:
            s.stop(timeout_s=2)
