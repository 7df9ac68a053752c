"""Streaming asynchronous online training (AWG §3.3): updates on the first complete groups while a slow env is
still running, trained staleness bounded by max_staleness, every submitted episode accounted for, resume."""
import threading
import time

import pytest

from gui_jax.envs.pool import EnvPool, PoolConfig
from gui_jax.envs.sim import PhoneSim, make_task
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.fit import StopRequested
from gui_jax.train.online import OnlineRun, train_online
from gui_jax.train.rl_common import RLRun
from gui_jax.train.online.config import online_block
from support.oracle_policy import DIALECT, EncodedOracle, oracle_prompt, small_agent

PCFG = PromptConfig(dialect=DIALECT, observation="ui_text")
TEMPLATES = ("settings.wifi_on", "clock.alarm_toggle", "music.play", "tasks.complete")
FAST_S, SLOW_S = 0.05, 0.5   # per reset/step: slot 0 is 10× slower
GATE_S = 20.0                 # < the pool's call timeout


@pytest.fixture(scope="module")
def agent():
    return small_agent()


class DelayedEnv:
    """PhoneSim with a fixed delay per call; logs (event, episode index) and the observations it produced.

    With a `gate`, the step that would end the first episode also waits (at most GATE_S) until the gate
    opens: it models an env still busy when the others have finished an iteration's worth of groups, without
    depending on how long the first update's compilation takes on a loaded machine. A trainer that waits
    for every group would see this episode end first (after GATE_S)."""

    def __init__(self, delay_s, events=None, gate=None):
        self.sim, self.delay_s, self.events, self.gate = PhoneSim(render=False, max_steps=30), delay_s, events, gate
        self.episode = -1
        self.produced = {}   # id(observation) -> episode index

    def _log(self, what):
        if self.events is not None:
            self.events.append((what, self.episode, time.monotonic()))

    def reset(self, task):
        time.sleep(self.delay_s)
        self.episode += 1
        obs = self.sim.reset(task)
        self.produced[id(obs)] = self.episode
        self._log("slow_reset")
        return obs

    def step(self, action):
        time.sleep(self.delay_s)
        obs, done, info = self.sim.step(action)
        self.produced[id(obs)] = self.episode
        if done and self.gate is not None and self.episode == 0:
            self.gate.wait(GATE_S)
        if done:
            self._log("slow_done")
        return obs, done, info

    def close(self):
        self.sim.close()


def _cfg(**kw):
    c = online_block("grpo")
    c.iterations, c.episodes_per_iteration, c.num_rollouts, c.max_steps = 3, 2, 2, 4
    c.learning_rate, c.micro_batch_size, c.checkpoint_every, c.kl_coef = 1e-3, 8, 10, 1e-3
    c.recompute_old_logprobs = True
    c.curriculum = False
    c.rollout_mode, c.max_staleness = "async", 1
    for k, v in kw.items():
        c[k] = v
    return c


def _tasks():
    return [make_task(t, s) for t in TEMPLATES for s in (1, 2, 3)]


def _pool(events=None, gate=None):
    slow = {}

    def make_env(slot):
        if slot == 0:
            slow[0] = DelayedEnv(SLOW_S, events, gate)
            return slow[0]
        return DelayedEnv(FAST_S)
    return EnvPool(make_env, PoolConfig(4, 0, call_timeout_s=30.0, reset_timeout_s=30.0, lease_timeout_s=60.0,
                                        health_interval_s=0)), slow


def test_async_trains_on_first_complete_groups_before_the_slow_env_finishes(agent, tmp_path, monkeypatch):
    events, gate = [], threading.Event()
    pool, slow = _pool(events, gate)
    trained = []

    def update(self, samples):  # log when each update starts
        events.append(("update", self.iteration, time.monotonic()))
        gate.set()
        return RLRun.update(self, samples)
    monkeypatch.setattr(OnlineRun, "update", update)

    def hook(run, trajs, metrics):
        trained.append((run.iteration, [t.steps for t in trajs], dict(metrics)))

    cfg = _cfg()
    with pool:
        summary = train_online(agent, _tasks(), PCFG, cfg, workdir=str(tmp_path), pool=pool, prompt_fn=oracle_prompt,
                               policy=EncodedOracle(agent), on_iteration=hook)
    kinds = [(e[0], e[1]) for e in events]
    # iteration 0's update started before the slow env finished its first episode
    assert ("slow_reset", 0) in kinds
    slow_first_done = kinds.index(("slow_done", 0)) if ("slow_done", 0) in kinds else len(kinds)  # or restarted
    assert kinds.index(("update", 0)) < slow_first_done
    # ... and nothing trained in iteration 0 ran on the slow env's first episode
    it0_steps = [s for steps in trained[0][1] for s in steps]
    assert it0_steps and not any(slow[0].produced.get(id(s.observation)) == 0 for s in it0_steps)
    # trained staleness: version of every trained step's behaviour policy within max_staleness of the update
    for it, steps_per_traj, metrics in trained:
        lags = [it - min(s.policy_version for s in steps) for steps in steps_per_traj if steps]
        assert lags and max(lags) <= cfg.max_staleness
        assert metrics["policy_lag_max"] == max(lags)
        assert metrics["waited_s"] >= 0.0 and 0.0 <= metrics["policy_lag_mean"] <= metrics["policy_lag_max"]
    assert [it for it, _, _ in trained] == [0, 1, 2]
    # accounting: each iteration trained 2 groups of 2; every submitted episode is trained, dropped as stale
    # (and re-run) or abandoned (none: the run never submits past its last iteration)
    rep, acc = summary["rollout_report"], summary["async"]
    assert summary["iterations"] == 3
    assert rep["episodes"] == 3 * 2 * 2 == rep["completed"] + rep["env_failure"]
    assert acc["abandoned"] == 0 and acc["submitted"] == rep["episodes"] + acc["dropped_stale"]
    assert rep["successes"] <= rep["completed"]


def test_async_resume_starts_a_fresh_engine_and_finishes(agent, tmp_path):
    pool, _ = _pool()
    with pool:
        with pytest.raises(StopRequested):
            train_online(agent, _tasks(), PCFG, _cfg(iterations=2, stop_after_steps=1, checkpoint_every=1),
                         workdir=str(tmp_path), pool=pool, prompt_fn=oracle_prompt, policy=EncodedOracle(agent))
        summary = train_online(agent, _tasks(), PCFG, _cfg(iterations=2, checkpoint_every=1), workdir=str(tmp_path),
                               pool=pool, prompt_fn=oracle_prompt, policy=EncodedOracle(agent))
    assert summary["iterations"] == 2
    # the report resumes from the checkpoint: both runs' episodes, none abandoned by the stopped run
    assert summary["rollout_report"]["episodes"] == 2 * 2 * 2
    assert summary["async"]["abandoned"] == 0

