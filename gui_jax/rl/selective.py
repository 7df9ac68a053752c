"""Selective rollouts: skip tasks whose recent rollout groups carried no learning signal.

A GRPO group whose returns do not vary (std ≤ η, every rollout succeeds or every one fails) has zero advantages
and dynamic sampling drops it, so its rollouts were spent for nothing. Whether a task's group varies is stable
from one visit to the next (GRESO, "Act Only When It Pays", 2025), so a task seen uniform k visits in a row is
rolled out again only with probability revisit**k; one informative visit resets k to 0. The rest of its visits
are skipped before any rollout, and the iteration draws further tasks in their place.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np


class UniformSkip:
    """Per-task streaks of uniform (zero-spread) groups and the draw that skips them.

    revisit: probability of keeping a task after one uniform visit (1 = keep every task: selection off).
    """

    def __init__(self, revisit: float):
        if not 0.0 <= revisit <= 1.0:
            raise ValueError(f"rl.revisit_uniform must lie in [0, 1], got {revisit}")
        self.revisit = float(revisit)
        self.streak: dict[int, int] = {}
        self.skipped = 0  # tasks skipped since the last `take_skipped` (a metric)

    def record(self, task: int, informative: bool) -> None:
        """One rollout group of `task`: informative (return spread > η) resets its streak, uniform extends it."""
        if informative:
            self.streak.pop(int(task), None)
        else:
            self.streak[int(task)] = self.streak.get(int(task), 0) + 1

    def keep_probability(self, task: int) -> float:
        return self.revisit ** self.streak.get(int(task), 0)

    def select(self, draw: Callable[[], list], n: int, rng: np.random.Generator, max_draws: int = 64) -> list[int]:
        """n tasks from successive `draw()` batches, each kept with its keep probability (one uniform draw per
        task, in order). Tasks drawn past the n-th are not rolled out this pass. After `max_draws` batches
        without n kept (nearly every task known uniform), the skipped ones fill the batch in draw order."""
        kept: list[int] = []
        passed: list[int] = []
        for _ in range(max_draws):
            for task in draw():
                task = int(task)
                if len(kept) >= n:
                    break
                if rng.random() < self.keep_probability(task):
                    kept.append(task)
                else:
                    passed.append(task)
            if len(kept) >= n:
                break
        filled = max(0, n - len(kept))
        self.skipped += len(passed) - min(filled, len(passed))
        return (kept + passed)[:n]

    def take_skipped(self) -> int:
        out, self.skipped = self.skipped, 0
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"streak": sorted([t, k] for t, k in self.streak.items())}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        try:
            self.streak = {int(t): int(k) for t, k in state["streak"]}
        except KeyError as err:
            raise KeyError(f"UniformSkip state is missing field {err}") from None
