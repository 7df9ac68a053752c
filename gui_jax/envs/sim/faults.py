"""Latency and fault injection around any env with reset/step (for testing the rollout system).

    env = FaultyEnv(PhoneSim(render=False), LatencyModel(median_s=0.05, sigma=0.5, tail_prob=0.02),
                    FaultModel(crash_prob=0.01, hang_prob=0.005, hang_s=60), seed=0)

Latency per call = lognormal(median, sigma) and, with probability tail_prob, an extra Pareto tail
(heavy-tailed stragglers, as real emulators show). A crash raises `EnvCrashError` and leaves the env
dead until `reset`; a hang sleeps `hang_s` (long past any sane timeout) and then raises
`EnvHangError`. `sleep=False` accounts the time in `virtual_time_s` instead of sleeping (fast tests).

Faults are a pure function of (seed, task id, attempt, step) (`fault_at`), not of the order in which envs
serve calls: with several envs in a pool, which env runs an episode depends on thread timing, but whether
that episode crashes or hangs, and where, does not. The attempt is the number of earlier resets of the same
task id through the envs sharing one `EpisodeAttempts` (pass one to every env a pool builds, rebuilt ones
included); with one trial per task in flight at a time it is the rollout's attempt number. Latency still
comes from a per-env random stream: it only moves time.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from gui_jax.envs.base import EnvFailure


class EnvCrashError(EnvFailure):
    """The (simulated) environment process crashed; reset() to restart it."""


class EnvHangError(EnvFailure, TimeoutError):
    """The (simulated) environment stopped responding."""


@dataclass
class LatencyModel:
    median_s: float = 0.0
    sigma: float = 0.5  # lognormal shape
    tail_prob: float = 0.0  # probability of a heavy-tail straggler
    tail_scale_s: float = 1.0  # Pareto scale of the straggler delay
    tail_alpha: float = 1.5  # Pareto shape (smaller = heavier tail)
    max_s: float = 120.0

    def sample(self, rng: random.Random) -> float:
        if self.median_s <= 0 and self.tail_prob <= 0:
            return 0.0
        d = self.median_s * math.exp(self.sigma * rng.gauss(0.0, 1.0)) if self.median_s > 0 else 0.0
        if self.tail_prob > 0 and rng.random() < self.tail_prob:
            d += self.tail_scale_s * rng.paretovariate(self.tail_alpha)
        return min(d, self.max_s)


@dataclass
class FaultModel:
    crash_prob: float = 0.0  # per step
    hang_prob: float = 0.0  # per step
    hang_s: float = 600.0
    reset_crash_prob: float = 0.0  # per reset


def fault_at(faults: FaultModel, seed: int, task_key: str, attempt: int, step: int) -> Optional[str]:
    """'crash', 'hang' or None: the fault on call `step` (0-based env.step calls; -1 = the reset) of attempt
    `attempt` of task `task_key`."""
    u = random.Random(f"faults:{seed}:{task_key}:{attempt}:{step}").random()
    if step < 0:
        return "crash" if u < faults.reset_crash_prob else None
    if u < faults.crash_prob:
        return "crash"
    return "hang" if u < faults.crash_prob + faults.hang_prob else None


class EpisodeAttempts:
    """Resets per task id, shared by the envs of one pool (thread-safe): attempt k = the k-th reset."""

    def __init__(self):
        self._resets: Counter = Counter()
        self._lock = threading.Lock()

    def next(self, task_key: str) -> int:
        with self._lock:
            k = self._resets[task_key]
            self._resets[task_key] += 1
            return k


def task_key(task) -> str:
    """A task's identity for the fault schedule: its task_id, else its repr."""
    return str(getattr(task, "task_id", None) or repr(task))


class FaultyEnv:
    """Wraps `env` (reset/step); other attributes pass through. `attempts`: shared with the other envs of a
    pool so a retried episode's attempt number counts resets on every env (default: this env's own)."""

    def __init__(
        self,
        env,
        latency: LatencyModel | None = None,
        faults: FaultModel | None = None,
        seed: int = 0,
        sleep: bool = True,
        attempts: Optional[EpisodeAttempts] = None,
    ):
        self.env = env
        self.latency = latency or LatencyModel()
        self.faults = faults or FaultModel()
        self.seed = seed
        self.rng = random.Random(f"latency:{seed}")
        self.attempts = attempts if attempts is not None else EpisodeAttempts()
        self.episode: tuple[str, int] = ("", 0)  # (task key, attempt) of the current episode
        self.t = 0  # env.step calls since the reset
        self.sleep = sleep
        self.virtual_time_s = 0.0
        self.crashed = False
        self.stats = {"calls": 0, "crashes": 0, "hangs": 0, "delay_s": 0.0}

    def __getattr__(self, name):
        return getattr(self.env, name)

    def _wait(self, seconds: float) -> None:
        self.stats["delay_s"] += seconds
        if self.sleep and seconds > 0:
            time.sleep(seconds)
        else:
            self.virtual_time_s += seconds

    def _maybe_fail(self, step: int) -> None:
        kind = fault_at(self.faults, self.seed, *self.episode, step)
        if kind == "crash":
            self.crashed = True
            self.stats["crashes"] += 1
            raise EnvCrashError(f"simulated environment crash (task {self.episode[0]}, attempt "
                                f"{self.episode[1]}, step {step})")
        if kind == "hang":
            self.stats["hangs"] += 1
            self._wait(self.faults.hang_s)
            self.crashed = True
            raise EnvHangError(f"simulated environment hang ({self.faults.hang_s:.0f}s; task {self.episode[0]}, "
                               f"attempt {self.episode[1]}, step {step})")

    def reset(self, task, *args, **kw):
        self.stats["calls"] += 1
        self._wait(self.latency.sample(self.rng))
        key = task_key(task)
        self.episode, self.t, self.crashed = (key, self.attempts.next(key)), 0, False
        self._maybe_fail(-1)
        return self.env.reset(task, *args, **kw)

    def step(self, action):
        if self.crashed:
            raise EnvCrashError("environment is down after a crash/hang; call reset()")
        self.stats["calls"] += 1
        self._wait(self.latency.sample(self.rng))
        step, self.t = self.t, self.t + 1
        self._maybe_fail(step)
        return self.env.step(action)
