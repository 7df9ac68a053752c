"""gui_jax.tasks: template registry, seeded instances, CMDP splits, curriculum."""

from gui_jax.tasks.curriculum import curriculum_stages, curriculum_tasks, difficulty_buckets, stage_at
from gui_jax.tasks.registry import (
    Task,
    Template,
    get_template,
    list_templates,
    make_task,
    make_tasks,
    suite_summary,
    templates_by_app,
)
from gui_jax.tasks.splits import REGIMES, TEST_SEEDS, TRAIN_SEEDS, Split, SplitError, make_split

__all__ = [
    "REGIMES",
    "TEST_SEEDS",
    "TRAIN_SEEDS",
    "Split",
    "SplitError",
    "Task",
    "Template",
    "curriculum_stages",
    "curriculum_tasks",
    "difficulty_buckets",
    "get_template",
    "list_templates",
    "make_split",
    "make_task",
    "make_tasks",
    "stage_at",
    "suite_summary",
    "templates_by_app",
]
