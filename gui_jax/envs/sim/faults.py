"""Latency and fault injection around any env with reset/step (for testing the rollout system).

    env = FaultyEnv(PhoneSim(render=False), LatencyModel(median_s=0.05, sigma=0.5, tail_prob=0.02),
                    FaultModel(crash_prob=0.01, hang_prob=0.005, hang_s=60), seed=0)

Latency per call = lognormal(median, sigma) and, with probability tail_prob, an extra Pareto tail
(heavy-tailed stragglers, as real emulators show). A crash raises `EnvCrashError` and leaves the env
dead until `reset`; a hang sleeps `hang_s` (long past any sane timeout) and then raises
`EnvHangError`. `sleep=False` accounts the time in `virtual_time_s` instead of sleeping (fast tests).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

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


class FaultyEnv:
    """Wraps `env` (reset/step); other attributes pass through."""

    def __init__(
        self,
        env,
        latency: LatencyModel | None = None,
        faults: FaultModel | None = None,
        seed: int = 0,
        sleep: bool = True,
    ):
        self.env = env
        self.latency = latency or LatencyModel()
        self.faults = faults or FaultModel()
        self.rng = random.Random(f"faults:{seed}")
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

    def _maybe_fail(self, crash_p: float, hang_p: float) -> None:
        u = self.rng.random()
        if u < crash_p:
            self.crashed = True
            self.stats["crashes"] += 1
            raise EnvCrashError("simulated environment crash")
        if u < crash_p + hang_p:
            self.stats["hangs"] += 1
            self._wait(self.faults.hang_s)
            self.crashed = True
            raise EnvHangError(f"simulated environment hang ({self.faults.hang_s:.0f}s)")

    def reset(self, *args, **kw):
        self.stats["calls"] += 1
        self._wait(self.latency.sample(self.rng))
        self.crashed = False
        self._maybe_fail(self.faults.reset_crash_prob, 0.0)
        return self.env.reset(*args, **kw)

    def step(self, action):
        if self.crashed:
            raise EnvCrashError("environment is down after a crash/hang; call reset()")
        self.stats["calls"] += 1
        self._wait(self.latency.sample(self.rng))
        self._maybe_fail(self.faults.crash_prob, self.faults.hang_prob)
        return self.env.step(action)
