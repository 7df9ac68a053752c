"""Curriculum buckets by difficulty (AWG: easy -> easy+medium -> all)."""

from __future__ import annotations

from typing import Sequence

DIFFICULTIES = ("easy", "medium", "hard")


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


def stage_at(step: int, boundaries: Sequence[int]) -> int:
    """Stage index for a training step given increasing stage boundaries (e.g. (200, 500))."""
    return sum(step >= b for b in boundaries)


def curriculum_tasks(tasks, step: int, boundaries: Sequence[int] = (200, 500)) -> list:
    stages = curriculum_stages(tasks)
    return stages[min(stage_at(step, boundaries), len(stages) - 1)]
