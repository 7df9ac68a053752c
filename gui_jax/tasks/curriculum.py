"""The difficulty curriculum (AWG: easy → easy + medium → all), the one implementation.

`Curriculum` is the stateful schedule a trainer consults once per evaluation (an iteration's
end): it advances when the iteration reaches the next boundary in `switch_iterations`, or when the
reported training success rate reaches `success_threshold`, and never by more than one stage per
`update` call. The stateless helpers (`curriculum_stages`, `stage_at`, `curriculum_tasks`) give the
same stages for a step counter when the schedule is evaluated at every step.
Defaults (AWG gives no numbers, docs/algorithms.md §7): switch at iterations 50 and 100.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence

DIFFICULTIES = ("easy", "medium", "hard")
DEFAULT_STAGES = (("easy",), ("easy", "medium"), None)  # None = every difficulty
DEFAULT_SWITCH_ITERATIONS = (50, 100)


def _check_boundaries(boundaries: Sequence[int], what: str) -> None:
    if any(b >= c for b, c in zip(boundaries, boundaries[1:])):
        raise ValueError(f"{what} must be strictly increasing, got {tuple(boundaries)}")


def difficulty_buckets(tasks) -> dict[str, list]:
    """difficulty -> tasks (every difficulty present as a key)."""
    out = {d: [] for d in DIFFICULTIES}
    for t in tasks:
        out[t.difficulty].append(t)
    return out


def curriculum_stages(tasks) -> list[list]:
    """Cumulative stages: [easy], [easy + medium], [easy + medium + hard]."""
    b = difficulty_buckets(tasks)
    stages, acc = [], []
    for d in DIFFICULTIES:
        acc = acc + b[d]
        stages.append(list(acc))
    return stages


def stage_at(step: int, boundaries: Sequence[int] = DEFAULT_SWITCH_ITERATIONS) -> int:
    """Stage at `step` for strictly increasing boundaries: the number of boundaries ≤ step (stage i
    starts at boundaries[i-1]); equals a `Curriculum` updated at every step (one stage at a time)."""
    _check_boundaries(boundaries, "curriculum boundaries")
    return sum(step >= b for b in boundaries)


def curriculum_tasks(tasks, step: int, boundaries: Sequence[int] = DEFAULT_SWITCH_ITERATIONS) -> list:
    """The tasks the curriculum allows at `step` (see `stage_at`)."""
    stages = curriculum_stages(tasks)
    return stages[min(stage_at(step, boundaries), len(stages) - 1)]


class Curriculum:
    """Difficulty curriculum: stage i allows the difficulties `stages[i]` (None = every difficulty).

    `update(iteration, success_rate)` is called once per evaluation and advances at most one stage:
    when `iteration ≥ switch_iterations[stage]`, or (if success_threshold is set) when the training
    success rate ≥ success_threshold. A late call (iteration past two boundaries) still moves one
    stage; the next call moves the next one.
    """

    def __init__(self, stages: Sequence[Optional[Sequence[str]]] = DEFAULT_STAGES,
                 switch_iterations: Optional[Sequence[int]] = DEFAULT_SWITCH_ITERATIONS,
                 success_threshold: Optional[float] = None):
        if not stages:
            raise ValueError("Curriculum needs at least one stage")
        if switch_iterations is not None:
            if len(switch_iterations) != len(stages) - 1:
                raise ValueError(f"Curriculum: {len(stages)} stages need {len(stages) - 1} switch_iterations, "
                                 f"got {len(switch_iterations)}")
            _check_boundaries(switch_iterations, "Curriculum switch_iterations")
        self.stages = [None if s is None else tuple(s) for s in stages]
        for s in self.stages:
            bad = [d for d in (s or ()) if d not in DIFFICULTIES]
            if bad:
                raise ValueError(f"Curriculum stage {s} names unknown difficulties {bad}; known: {DIFFICULTIES}")
        self.switch_iterations = None if switch_iterations is None else list(switch_iterations)
        self.success_threshold = success_threshold
        self.stage = 0

    def update(self, iteration: int, success_rate: Optional[float] = None) -> int:
        """Advance by at most one stage given the current iteration and training success; returns the stage."""
        if self.stage >= len(self.stages) - 1:
            return self.stage
        by_iteration = self.switch_iterations is not None and iteration >= self.switch_iterations[self.stage]
        by_success = (self.success_threshold is not None and success_rate is not None
                      and success_rate >= self.success_threshold)
        if by_iteration or by_success:
            self.stage += 1
        return self.stage

    def allowed(self, difficulty: Optional[str]) -> bool:
        """None (a task without a difficulty: a device's or AndroidWorld's) is one level, allowed in every stage."""
        allowed = self.stages[self.stage]
        return allowed is None or difficulty is None or difficulty in allowed

    def filter(self, tasks: Iterable[Any], difficulty_of=lambda t: t.difficulty) -> list:
        """Tasks whose difficulty (difficulty_of(task)) the current stage allows."""
        return [t for t in tasks if self.allowed(difficulty_of(t))]

    def state_dict(self) -> dict[str, Any]:
        return {"stage": self.stage}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        try:
            self.stage = int(state["stage"])
        except KeyError as err:
            raise KeyError(f"Curriculum state is missing field {err}") from None
