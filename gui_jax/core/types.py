"""Core data model: actions, observations, steps, trajectories, offline episodes.

Everything above `core` (envs, tasks, data, models, rl, train, eval) speaks these types.
Coordinates in an `Action` are absolute pixels of the image the model saw (docs/algorithms.md §1).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

# Canonical action types (docs/algorithms.md §1) and the fields each one requires.
ACTION_FIELDS: dict[str, tuple[str, ...]] = {
    "click": ("x", "y"),
    "long_press": ("x", "y", "time"),
    "swipe": ("x", "y", "x2", "y2"),
    "scroll": ("direction",),
    "type": ("text",),
    "key": ("text",),
    "system_button": ("button",),
    "open": ("text",),
    "wait": ("time",),
    "answer": ("text",),
    "terminate": ("status",),
}
ACTION_TYPES: tuple[str, ...] = tuple(ACTION_FIELDS)
DIRECTIONS = ("up", "down", "left", "right")
SYSTEM_BUTTONS = ("Back", "Home", "Menu", "Enter")
STATUSES = ("success", "failure")
# Actions whose target is a point on screen (may be given by `element` instead).
POINT_ACTIONS = ("click", "long_press")


class ActionError(ValueError):
    """An `Action` was built with missing or invalid fields."""


@dataclass(frozen=True)
class Action:
    """One canonical action. Unused fields stay None.

    `element` is an optional Set-of-Mark / UI-element index; a click/long_press may carry
    an element instead of (or beside) x, y, or a `text` naming the element by its label
    (core/labels.py resolves it on the screen). `action_desc` is a one-line summary (UI-Genie).
    """

    type: str
    x: Optional[float] = None
    y: Optional[float] = None
    x2: Optional[float] = None
    y2: Optional[float] = None
    direction: Optional[str] = None
    text: Optional[str] = None
    button: Optional[str] = None
    time: Optional[float] = None
    status: Optional[str] = None
    element: Optional[int] = None
    action_desc: Optional[str] = None

    def __post_init__(self):
        if self.type not in ACTION_FIELDS:
            raise ActionError(f"unknown action type {self.type!r}; known: {', '.join(ACTION_TYPES)}")
        for name in ACTION_FIELDS[self.type]:
            if getattr(self, name) is None:
                if self.type in POINT_ACTIONS and name in ("x", "y") and (
                        self.element is not None or self.text is not None):
                    continue
                if name == "time" and self.type == "long_press":
                    continue  # duration is optional for long_press
                raise ActionError(f"action {self.type!r} needs field {name!r}")
        if self.direction is not None and self.direction not in DIRECTIONS:
            raise ActionError(f"bad scroll direction {self.direction!r}; expected one of {DIRECTIONS}")
        if self.button is not None and self.button not in SYSTEM_BUTTONS:
            raise ActionError(f"bad system button {self.button!r}; expected one of {SYSTEM_BUTTONS}")
        if self.status is not None and self.status not in STATUSES:
            raise ActionError(f"bad terminate status {self.status!r}; expected one of {STATUSES}")
        for name in ("x", "y", "x2", "y2", "time"):
            v = getattr(self, name)
            if v is not None and not np.isfinite(v):
                raise ActionError(f"action {self.type!r} field {name!r} is not finite: {v!r}")

    @property
    def point(self) -> Optional[tuple[float, float]]:
        return None if self.x is None else (self.x, self.y)

    def replace(self, **kw) -> "Action":
        return dataclasses.replace(self, **kw)

    def scaled(self, sx: float, sy: float) -> "Action":
        """Coordinates multiplied by (sx, sy): image-size conversion."""
        kw = {}
        for name, s in (("x", sx), ("y", sy), ("x2", sx), ("y2", sy)):
            v = getattr(self, name)
            if v is not None:
                kw[name] = v * s
        return dataclasses.replace(self, **kw)

    def to_dict(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict, where: str = "action") -> "Action":
        if not isinstance(d, dict) or "type" not in d:
            raise ActionError(f"{where}: expected a dict with a 'type' field, got {d!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        extra = set(d) - names
        if extra:
            raise ActionError(f"{where}: unknown action fields {sorted(extra)}")
        try:
            return cls(**d)
        except (ActionError, TypeError) as e:
            raise ActionError(f"{where}: {e}") from None

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if k != "type")
        return f"{self.type}({args})"


@dataclass
class UIElement:
    """One node of the UI tree. bounds = (x1, y1, x2, y2) in screen pixels."""

    index: int
    cls: str
    bounds: tuple[int, int, int, int]
    text: str = ""
    content_desc: str = ""
    resource_id: str = ""
    clickable: bool = False
    long_clickable: bool = False
    scrollable: bool = False
    focusable: bool = False
    focused: bool = False
    checkable: bool = False
    checked: bool = False
    selected: bool = False
    enabled: bool = True
    password: bool = False

    @property
    def center(self) -> tuple[float, float]:
        x1, y1, x2, y2 = self.bounds
        return ((x1 + x2) / 2.0, (y1 + y2) / 2.0)

    def to_dict(self) -> dict:
        # every field is a plain value (bounds a tuple of ints): a shallow copy equals dataclasses.asdict, whose
        # recursive deep copy took ~90 % of writing an episode (a 926-episode RL pool: ~37 s of ~45)
        d = {name: getattr(self, name) for name in _UI_ELEMENT_FIELDS}
        d["bounds"] = list(self.bounds)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "UIElement":
        d = dict(d)
        d["bounds"] = tuple(int(v) for v in d["bounds"])
        return cls(**d)


_UI_ELEMENT_FIELDS = tuple(f.name for f in dataclasses.fields(UIElement))


@dataclass
class Observation:
    """What the agent sees: screenshot (uint8 HxWx3), UI elements, raw XML, app, goal.

    `screen_size` is the logical (width, height) of the device the UI bounds refer to;
    the screenshot may be rendered at a smaller resolution.
    """

    screenshot: np.ndarray
    ui_elements: list[UIElement] = field(default_factory=list)
    ui_xml: str = ""
    current_app: str = ""
    goal: str = ""
    screen_size: tuple[int, int] = (1080, 2400)

    def __post_init__(self):
        s = self.screenshot
        if not (isinstance(s, np.ndarray) and s.dtype == np.uint8 and s.ndim == 3 and s.shape[2] == 3):
            raise ValueError(
                f"Observation.screenshot must be a uint8 HxWx3 array, got "
                f"{getattr(s, 'dtype', type(s))} {getattr(s, 'shape', '')}")

    def __eq__(self, other):
        if not isinstance(other, Observation):
            return NotImplemented
        return (np.array_equal(self.screenshot, other.screenshot)
                and self.screenshot.shape == other.screenshot.shape
                and self.ui_elements == other.ui_elements and self.ui_xml == other.ui_xml
                and self.current_app == other.current_app and self.goal == other.goal
                and tuple(self.screen_size) == tuple(other.screen_size))


@dataclass
class Step:
    """One agent step: observation, the model's raw response, the parsed action, reward."""

    observation: Observation
    action: Optional[Action]
    response: str = ""
    thought: str = ""
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trajectory:
    """An online rollout: steps, success, and the task it came from."""

    task_id: str
    goal: str
    steps: list[Step] = field(default_factory=list)
    success: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self):
        return len(self.steps)


@dataclass
class Episode:
    """An offline expert episode: observations[t] precedes actions[t].

    `target_bboxes[t]` is the expert target element's (x1,y1,x2,y2) for point actions
    (None otherwise), used by the matcher. `step_instructions[t]` is a low-level instruction.
    `observations` has len(actions) or len(actions)+1 entries (final screen optional).
    """

    episode_id: str
    goal: str
    observations: list[Observation]
    actions: list[Action]
    target_bboxes: list[Optional[tuple[float, float, float, float]]] = field(default_factory=list)
    step_instructions: list[str] = field(default_factory=list)
    app: str = ""
    template: str = ""
    difficulty: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.actions)
        if len(self.observations) not in (n, n + 1):
            raise ValueError(f"episode {self.episode_id!r}: {len(self.observations)} observations "
                             f"for {n} actions (need {n} or {n + 1})")
        if not self.target_bboxes:
            self.target_bboxes = [None] * n
        if not self.step_instructions:
            self.step_instructions = [""] * n
        for name in ("target_bboxes", "step_instructions"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"episode {self.episode_id!r}: {name} has {len(getattr(self, name))} "
                                 f"entries for {n} actions")

    def __len__(self):
        return len(self.actions)
