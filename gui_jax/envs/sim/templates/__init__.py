"""PhoneSim task templates (see apps/__init__.py for how to add one)."""
from gui_jax.envs.sim.templates.base import (DIFFICULTY_LEVEL, TEMPLATES, Answer, Back, Fill, Look, Open, Spec, Tap,
                                             TapAt, Template, answer_matches, template)
from gui_jax.envs.sim.templates import (system_tasks, people_tasks, organizer_tasks, media_tasks,  # noqa: F401
                                        cross_tasks)
