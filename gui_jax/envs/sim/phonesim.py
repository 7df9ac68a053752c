"""PhoneSim: the built-in Android-like environment.

    sim = PhoneSim(render=True, resolution=(540, 1200))
    obs = sim.reset(make_task("settings.wifi_on", seed=3))
    obs, done, info = sim.step(Action("open", text="Settings"))

Semantics follow AndroidWorld: `answer(text)` records an answer and continues; the episode ends
on `terminate(...)` (success only if status == "success" and the template's state check passes)
or after `max_steps` steps (failure). Invalid actions leave the state unchanged and report
info["valid"] = False with a reason. With render=False the observation's screenshot is a 1x1
placeholder (call `sim.screenshot()` to render on demand); tree=False also skips the XML/elements.
Observations are lazy (`LazyObservation`): the screenshot, XML and element list are computed
from a frozen snapshot of the screen only when read.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Optional

import numpy as np

from gui_jax.core.types import Action, Observation
from gui_jax.envs.sim.apps import APP_CLASSES
from gui_jax.envs.sim.device import Device
from gui_jax.envs.sim.oracle import ExpertStep, solve
from gui_jax.envs.sim.render import render_screen
from gui_jax.envs.sim.templates import TEMPLATES, Spec, Template
from gui_jax.envs.sim.uixml import screen_elements, screen_xml
from gui_jax.envs.sim.widgets import H, W

_PLACEHOLDER = np.zeros((1, 1, 3), np.uint8)
_PLACEHOLDER.setflags(write=False)


@dataclass(frozen=True)
class Task:
    """One seeded task instance. Rebuilt deterministically from (template, seed)."""

    template: str
    seed: int
    goal: str
    app: str
    apps: tuple
    difficulty: str
    complexity: float
    optimal_steps: int
    answer_task: bool
    params: tuple = ()  # sorted (key, value) pairs that identify the instance

    @property
    def task_id(self) -> str:
        return f"{self.template}#{self.seed}"

    @property
    def level(self) -> int:
        return {"easy": 1, "medium": 2, "hard": 3}[self.difficulty]

    def to_dict(self) -> dict:
        return {
            "template": self.template,
            "seed": self.seed,
            "goal": self.goal,
            "app": self.app,
            "apps": list(self.apps),
            "difficulty": self.difficulty,
            "complexity": self.complexity,
            "optimal_steps": self.optimal_steps,
            "answer_task": self.answer_task,
        }


def get_template(name: str) -> Template:
    try:
        return TEMPLATES[name]
    except KeyError:
        raise KeyError(
            f"unknown task template {name!r}; {len(TEMPLATES)} known, e.g. {', '.join(sorted(TEMPLATES)[:5])}"
        ) from None


def build_instance(template: str, seed: int) -> tuple[Device, Spec]:
    """Fresh device populated from `seed`, then the template's setup. Deterministic."""
    tpl = get_template(template)
    dev = Device(APP_CLASSES)
    for app in dev.apps.values():
        app.populate(random.Random(f"world:{seed}:{app.key}"))
    spec = tpl.setup(dev, random.Random(f"task:{template}:{seed}"))
    dev.invalidate()
    return dev, spec


def make_task(template: str, seed: int) -> Task:
    """The seeded instance (goal, metadata, oracle step count) of `template`. Cached."""
    return _make_task(str(template), int(seed))


@functools.lru_cache(maxsize=65536)
def _make_task(template: str, seed: int) -> Task:
    tpl = get_template(template)
    dev, spec = build_instance(template, seed)
    steps = solve(dev, spec)
    params = tuple(sorted((k, str(v)) for k, v in spec.params.items()))
    return Task(
        template,
        int(seed),
        spec.goal,
        tpl.app,
        tpl.apps,
        tpl.difficulty,
        tpl.complexity,
        len(steps),
        tpl.answer,
        params,
    )


class LazyObservation(Observation):
    """An `Observation` computed on demand from a frozen `Screen` snapshot.

    Reads like a plain Observation; pickling / copying materialises it into one."""

    @classmethod
    def of_screen(cls, scr, status, accent, resolution, tree: bool, goal: str) -> "LazyObservation":
        # the dataclass __init__/__post_init__ are bypassed on purpose: nothing is computed yet
        self = cls.__new__(cls)
        self._scr, self._status, self._accent, self._res, self._tree = scr, status, accent, resolution, tree
        self._shot = None if resolution is not None else _PLACEHOLDER
        self._xml = None
        self._els = None
        self.current_app, self.goal, self.screen_size = scr.app, goal, (W, H)
        return self

    @property
    def screenshot(self) -> np.ndarray:
        if self._shot is None:
            self._shot = render_screen(self._scr, self._res, self._accent, self._status)
        return self._shot

    @screenshot.setter
    def screenshot(self, v):
        self._shot = v

    @property
    def ui_xml(self) -> str:
        if self._xml is None:
            self._xml = screen_xml(self._scr) if self._tree else ""
        return self._xml

    @ui_xml.setter
    def ui_xml(self, v):
        self._xml = v

    @property
    def ui_elements(self) -> list:
        if self._els is None:
            self._els = screen_elements(self._scr) if self._tree else []
        return self._els

    @ui_elements.setter
    def ui_elements(self, v):
        self._els = v

    def materialize(self) -> Observation:
        return Observation(
            screenshot=self.screenshot,
            ui_elements=list(self.ui_elements),
            ui_xml=self.ui_xml,
            current_app=self.current_app,
            goal=self.goal,
            screen_size=tuple(self.screen_size),
        )

    def __reduce__(self):
        m = self.materialize()
        return (Observation, (m.screenshot, m.ui_elements, m.ui_xml, m.current_app, m.goal, m.screen_size))

    def __repr__(self):
        return f"LazyObservation(app={self.current_app!r}, goal={self.goal!r})"


class PhoneSim:
    """Simulated phone environment (see module docstring)."""

    screen_size = (W, H)

    def __init__(
        self, render: bool = True, resolution: tuple[int, int] = (540, 1200), max_steps: int = 30, tree: bool = True
    ):
        self.render, self.resolution, self.max_steps, self.tree = render, tuple(resolution), max_steps, tree
        self.dev: Optional[Device] = None
        self.task: Optional[Task] = None
        self.spec: Optional[Spec] = None
        self.t, self.done, self.answer = 0, True, None

    # ---- episode ---------------------------------------------------------------------------
    def reset(self, task: Task) -> Observation:
        self.task = task
        self.dev, self.spec = build_instance(task.template, task.seed)
        self.t, self.done, self.answer = 0, False, None
        return self.observe()

    def step(self, action: Action) -> tuple[Observation, bool, dict]:
        if self.dev is None or self.done:
            raise RuntimeError("PhoneSim.step called before reset() or after the episode ended")
        if not isinstance(action, Action):
            raise TypeError(f"PhoneSim.step expects gui_jax.core.Action, got {type(action).__name__}")
        self.t += 1
        info = {"step": self.t, "valid": True, "reason": ""}
        if action.type == "answer":
            self.answer = action.text
        elif action.type == "terminate":
            self.done = True
            info["success"] = bool(action.status == "success" and self.spec.check(self.dev, self.answer))
        else:
            info["valid"], info["reason"] = self.dev.apply(action)
        if not self.done and self.t >= self.max_steps:
            self.done, info["success"], info["truncated"] = True, False, True
        if self.done:
            info["answer"] = self.answer
        return self.observe(), self.done, info

    def close(self) -> None:
        """Env-protocol no-op (nothing to release)."""
        self.dev = None
        self.done = True

    def state_success(self) -> bool:
        """Whether the goal is satisfied right now (ignores the terminate rule); for analysis."""
        return bool(self.spec.check(self.dev, self.answer))

    # ---- observations ----------------------------------------------------------------------
    def screenshot(self, resolution: Optional[tuple[int, int]] = None) -> np.ndarray:
        """Render the current screen now (works with render=False too)."""
        obs = self.observe()
        obs._res = tuple(resolution or self.resolution)
        obs._shot = None
        return obs.screenshot

    def observe(self) -> Observation:
        """Observation of the current screen; screenshot, XML and elements are computed from a
        frozen snapshot of the widget tree on first access (so unread parts cost nothing)."""
        dev = self.dev
        scr = dev.screen()
        st = dev.settings
        status = {"clock": dev.clock, "wifi": st.wifi, "bluetooth": st.bluetooth, "airplane": st.airplane}
        app = dev.apps.get(scr.app)
        accent = app.color if app is not None else (26, 115, 232)
        return LazyObservation.of_screen(
            scr,
            status,
            accent,
            self.resolution if self.render else None,
            self.tree,
            self.task.goal if self.task else "",
        )

    # ---- oracle ----------------------------------------------------------------------------
    def expert_actions(self, task: Task) -> list[ExpertStep]:
        """The oracle's expert steps for `task` (computed on a private copy; self is untouched)."""
        dev, spec = build_instance(task.template, task.seed)
        return solve(dev, spec)


def expert_actions(task: Task) -> list[ExpertStep]:
    return PhoneSim(render=False, tree=False).expert_actions(task)
