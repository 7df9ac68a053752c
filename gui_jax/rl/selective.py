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


class TemplateLearnability:
    """Learnability-weighted task draw: templates whose groups carry signal are rolled out more often.

    Per-task streaks (UniformSkip) only act on a task's second visit, and a short run visits most tasks once.
    A template's tasks share their difficulty, so its rate of informative groups (return spread > η), learnt
    from the first iterations, predicts the next task's. Template t is drawn with probability
    (1 - floor) * r_t / Σ r + floor / T, r_t = (informative_t + 1) / (groups_t + 2) (the posterior mean under a
    uniform prior), then one of its tasks uniformly; a batch holds distinct tasks.

    templates: each training task's template (index = task); floor: the share drawn uniformly over templates.
    """

    def __init__(self, templates: list[str], floor: float):
        if not 0.0 <= floor <= 1.0:
            raise ValueError(f"rl.template_sampling_floor must lie in [0, 1], got {floor}")
        if not templates:
            raise ValueError("learnability sampling needs at least one training task")
        self.floor = float(floor)
        self.names = sorted(set(templates))
        self.template_of = [self.names.index(t) for t in templates]
        self.tasks = [[i for i, t in enumerate(self.template_of) if t == k] for k in range(len(self.names))]
        self.groups = np.zeros(len(self.names), np.int64)
        self.informative = np.zeros(len(self.names), np.int64)

    def record(self, task: int, informative: bool) -> None:
        k = self.template_of[int(task)]
        self.groups[k] += 1
        self.informative[k] += int(bool(informative))

    def probabilities(self) -> np.ndarray:
        """[T] the draw's probability of each template (in `names` order)."""
        rate = (self.informative + 1.0) / (self.groups + 2.0)
        return (1.0 - self.floor) * rate / rate.sum() + self.floor / len(self.names)

    def select(self, draw: Callable[[], list], n: int, rng: np.random.Generator) -> list[int]:
        """n distinct tasks (every task when there are fewer); `draw` is unused (the signature of UniformSkip's)."""
        n = min(n, len(self.template_of))
        p = self.probabilities()
        left = [list(ts) for ts in self.tasks]
        picked: list[int] = []
        while len(picked) < n:
            live = np.array([len(ts) > 0 for ts in left])
            q = np.where(live, p, 0.0)
            k = int(rng.choice(len(q), p=q / q.sum()))
            picked.append(left[k].pop(int(rng.integers(len(left[k])))))
        return picked

    def metrics(self) -> dict[str, float]:
        p = self.probabilities()
        return {"template_prob_min": float(p.min()), "template_prob_max": float(p.max())}

    def state_dict(self) -> dict[str, Any]:
        return {"names": self.names, "groups": self.groups.tolist(), "informative": self.informative.tolist()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        try:
            names, groups, informative = state["names"], state["groups"], state["informative"]
        except KeyError as err:
            raise KeyError(f"TemplateLearnability state is missing field {err}") from None
        if list(names) != self.names:
            raise ValueError(f"TemplateLearnability state is for templates {list(names)}, this run has {self.names}")
        self.groups = np.asarray(groups, np.int64)
        self.informative = np.asarray(informative, np.int64)
