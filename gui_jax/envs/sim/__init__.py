"""PhoneSim: the built-in Android-like simulator (apps, task templates, oracle, rendering)."""

from gui_jax.envs.sim.oracle import ExpertStep, OracleError
from gui_jax.envs.sim.phonesim import (
    LazyObservation,
    PhoneSim,
    Task,
    build_instance,
    expert_actions,
    get_template,
    make_task,
)
from gui_jax.envs.sim.templates import TEMPLATES, Template, answer_matches

__all__ = [
    "PhoneSim",
    "Task",
    "ExpertStep",
    "OracleError",
    "LazyObservation",
    "make_task",
    "expert_actions",
    "build_instance",
    "get_template",
    "TEMPLATES",
    "Template",
    "answer_matches",
]
