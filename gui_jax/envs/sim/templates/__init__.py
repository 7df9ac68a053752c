"""PhoneSim task templates (see apps/__init__.py for how to add one)."""

from gui_jax.envs.sim.templates import (  # noqa: F401  (importing registers the templates)
    cross_tasks,
    media_tasks,
    organizer_tasks,
    people_tasks,
    system_tasks,
)
from gui_jax.envs.sim.templates.base import (
    DIFFICULTY_LEVEL,
    TEMPLATES,
    Answer,
    Back,
    Fill,
    Look,
    Open,
    Spec,
    Tap,
    TapAt,
    Template,
    answer_matches,
    template,
)

__all__ = [
    "DIFFICULTY_LEVEL",
    "TEMPLATES",
    "Answer",
    "Back",
    "Fill",
    "Look",
    "Open",
    "Spec",
    "Tap",
    "TapAt",
    "Template",
    "answer_matches",
    "template",
]
