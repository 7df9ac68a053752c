"""Prompt building for one agent step: goal, history policy, observation, action dialect.

History policy (SPEC §3): the last K steps are full turns (their screenshot and/or UI text as a
user turn, the response as written as an assistant turn); older steps are one text line each.
Observation modes: `screenshot` (pixels, coordinates), `ui_text` (the simplified UI tree as text,
actions by element index, MobileRL/UI-Genie style), or `both`.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from gui_jax.core.dialects import (ActionParseError, expressible, format_response, parse_response,
                                   scale_action_to_image)
from gui_jax.core.types import Action, Observation, UIElement

OBSERVATION_MODES = ("screenshot", "ui_text", "both")


@dataclasses.dataclass(frozen=True)
class PromptConfig:
    dialect: str = "ui_s1"
    observation: str = "screenshot"      # screenshot | ui_text | both
    target: str = "coordinate"           # coordinate | element (how point actions are given)
    history_turns: int = 2               # K: last K steps as full turns (SPEC §3)
    max_history_lines: int = 10          # older steps kept as one line each
    ui_text_bounds: bool = False         # add "[x1,y1][x2,y2]" to each UI line (SPEC §10)
    ui_text_class: bool = True           # keep the widget class (e.g. "Button") in each UI line
    max_ui_lines: int = 40
    system_prompt: bool = True
    goal_last: bool = False              # repeat the goal after the current observation (short
                                         # attention distance: helps small models)

    def __post_init__(self):
        if self.observation not in OBSERVATION_MODES:
            raise ValueError(f"unknown observation mode {self.observation!r}; known: {OBSERVATION_MODES}")
        if self.target not in ("coordinate", "element"):
            raise ValueError(f"unknown action target {self.target!r}; known: coordinate, element")
        if self.target == "element" and self.observation == "screenshot":
            raise ValueError("target='element' needs the UI tree in the prompt (observation ui_text/both)")


def _flags(e: UIElement) -> str:
    names = [("clickable", "click"), ("long_clickable", "long"), ("scrollable", "scroll"),
             ("checkable", "check"), ("checked", "on"), ("focused", "focus"), ("selected", "sel")]
    return ",".join(short for attr, short in names if getattr(e, attr))


def visible_elements(obs: Observation) -> list[UIElement]:
    """Elements worth showing (SPEC §10 filter): any interaction flag or some text."""
    keep = []
    for e in obs.ui_elements:
        interactive = (e.clickable or e.long_clickable or e.scrollable or e.checkable or e.checked
                       or e.focusable or e.selected or e.password)
        if interactive or e.text or e.content_desc:
            keep.append(e)
    return keep


def ui_text(obs: Observation, cfg: PromptConfig) -> str:
    """One line per element: `[index] Class;flags;text` (+ bounds when configured)."""
    lines = []
    for e in visible_elements(obs)[: cfg.max_ui_lines]:
        label = (e.text or e.content_desc).replace("\n", " ")[:60]
        cls = f"{e.cls.rsplit('.', 1)[-1]};" if cfg.ui_text_class else ""
        line = f"[{e.index}] {cls}{_flags(e)};{label}"
        if cfg.ui_text_bounds:
            x1, y1, x2, y2 = e.bounds
            line += f";[{x1},{y1}][{x2},{y2}]"
        lines.append(line)
    return "\n".join(lines)


def system_text(cfg: PromptConfig) -> str:
    target = ("point actions name the UI element index: \"element\": k"
              if cfg.target == "element" else "coordinates are pixels of the screenshot")
    return (f"You operate an Android phone to complete the user's goal. Reply in the {cfg.dialect} "
            f"format with one action per turn; {target}. Actions: click, long_press, swipe, type, "
            "system_button, open, wait, answer, terminate.")


def _observation_content(obs: Observation, cfg: PromptConfig, images: list) -> list[dict]:
    content = []
    if cfg.observation in ("screenshot", "both"):
        images.append(obs.screenshot)
        content.append({"type": "image"})
    if cfg.observation in ("ui_text", "both"):
        content.append({"type": "text", "text": "\nUI:\n" + ui_text(obs, cfg)})
    return content


def action_line(response: str, dialect: str) -> str:
    """A one-line summary of an old step for the text history."""
    try:
        _, a = parse_response(response, dialect)
        return a.action_desc or str(a.replace(action_desc=None))
    except ActionParseError:
        return "(unparsable response)"


def build_messages(goal: str, history: Sequence[tuple[Observation, str]], current: Observation,
                   cfg: PromptConfig) -> tuple[list[dict], list[np.ndarray]]:
    """Chat messages + the images they reference, in order.

    history: earlier steps as (observation, response text as written or patched).
    """
    images: list[np.ndarray] = []
    messages: list[dict] = []
    if cfg.system_prompt:
        messages.append({"role": "system", "content": system_text(cfg)})
    k = max(cfg.history_turns, 0)
    old, recent = history[: max(len(history) - k, 0)], history[max(len(history) - k, 0):]
    intro = f"Goal: {goal}\n"
    if old:
        lines = [f"{i + 1}. {action_line(r, cfg.dialect)}" for i, (_, r) in enumerate(old)]
        intro += "Earlier steps:\n" + "\n".join(lines[-cfg.max_history_lines:]) + "\n"
    first = True
    for obs, response in recent:
        content = ([{"type": "text", "text": intro}] if first else []) + _observation_content(obs, cfg, images)
        messages.append({"role": "user", "content": content})
        messages.append({"role": "assistant", "content": response})
        first = False
    content = ([{"type": "text", "text": intro}] if first else []) + _observation_content(current, cfg, images)
    if cfg.goal_last:
        content.append({"type": "text", "text": f"\nGoal: {goal}"})
    messages.append({"role": "user", "content": content})
    return messages, images


def expert_response(action: Action, obs: Observation, cfg: PromptConfig, *, thought: str = "",
                    image_size: Optional[tuple[int, int]] = None,
                    element: Optional[int] = None) -> str:
    """The expert action as the model should write it for this prompt configuration.

    Coordinates go from screen pixels into the model image (`image_size`, default the
    screenshot's size); in element mode point actions carry only the element index. A scroll in
    a dialect without scroll becomes a finger swipe through the screen centre.
    """
    a = action.replace(action_desc=None)
    if cfg.target == "element" and a.type in ("click", "long_press"):
        idx = element if element is not None else a.element
        if idx is None:
            raise ValueError(f"element-mode prompt needs the expert's element index for {a}")
        a = Action(a.type, element=int(idx))
    else:
        if image_size is None:
            image_size = (obs.screenshot.shape[1], obs.screenshot.shape[0])
        a = scale_action_to_image(a.replace(element=None), obs.screen_size, image_size)
        a = a.replace(**{f: round(getattr(a, f)) for f in ("x", "y", "x2", "y2") if getattr(a, f) is not None})
    if a.type == "scroll" and not expressible(a, cfg.dialect):
        w, h = image_size or (obs.screenshot.shape[1], obs.screenshot.shape[0])
        cx, cy, dx, dy = w // 2, h // 2, w // 4, h // 4
        finger = {"down": (0, -dy), "up": (0, dy), "right": (-dx, 0), "left": (dx, 0)}[a.direction]
        a = Action("swipe", x=cx - finger[0], y=cy - finger[1], x2=cx + finger[0], y2=cy + finger[1])
    return format_response(a, cfg.dialect, thought)
