"""Task registry: the PhoneSim templates and their seeded instances."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional

from gui_jax.envs.sim import TEMPLATES, Task, Template, get_template, make_task

__all__ = [
    "list_templates",
    "get_template",
    "make_task",
    "make_tasks",
    "templates_by_app",
    "suite_summary",
    "Task",
    "Template",
]


def list_templates(
    app: Optional[str] = None,
    difficulty: Optional[str] = None,
    answer: Optional[bool] = None,
    parametric: Optional[bool] = None,
) -> list[str]:
    """Sorted template names, optionally filtered."""
    out = []
    for name, t in sorted(TEMPLATES.items()):
        if app is not None and app not in t.apps:
            continue
        if difficulty is not None and t.difficulty != difficulty:
            continue
        if answer is not None and t.answer != answer:
            continue
        if parametric is not None and t.parametric != parametric:
            continue
        out.append(name)
    return out


def make_tasks(templates: Iterable[str], seeds: Iterable[int]) -> list[Task]:
    seeds = list(seeds)
    return [make_task(t, s) for t in templates for s in seeds]


def templates_by_app(names: Optional[Iterable[str]] = None) -> dict[str, list[str]]:
    """Primary app -> template names."""
    out: dict[str, list[str]] = {}
    for n in names if names is not None else list_templates():
        out.setdefault(get_template(n).app, []).append(n)
    return out


def suite_summary() -> dict:
    ts = list(TEMPLATES.values())
    return {
        "templates": len(ts),
        "apps": len({a for t in ts for a in t.apps}),
        "difficulty": dict(Counter(t.difficulty for t in ts)),
        "answer": sum(t.answer for t in ts),
        "cross_app": sum(t.cross_app for t in ts),
        "parametric": sum(t.parametric for t in ts),
    }
