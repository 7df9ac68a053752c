"""One-line natural descriptions of actions on a PhoneSim screen: the `action_desc` of UI-Genie.

    describe_action(Action("click", x=540, y=2015), obs)   # "tap 'Ocean Dreams' in Music"

The description names what the action does on the observation it is taken from (the screen before it):
the widget a tap lands on (PhoneSim's own hit rule: the last enabled clickable element holding the point,
in document order), the field that receives typed text (the focused one), the app it happens in. The
reward model's history summaries show it instead of the raw action (gui_jax/rewards/rm_scoring.py).

Forms (app = the app's launcher label, "on the home screen", or nothing when the screen names no app):
  tap 'Ocean Dreams' in Music / long-press 'Notes' on the home screen / tap an empty spot in Clock
  switch on '17:00 Call mom' in Clock (a switch or checkbox: its state after the tap)
  tap the 'Name' field in Contacts / type 'Lena Hansen' into Name / type 'hi' (no focused field)
  scroll down in Music / swipe up in Music / go back / go to the home screen / press Enter
  open Music / wait / answer '42' / declare the task done / declare the task failed
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

from gui_jax.core.labels import resolve_label
from gui_jax.core.matcher import hit_element
from gui_jax.core.types import Action, Episode, Observation, UIElement
from gui_jax.envs.sim.apps import APP_CLASSES

APP_LABELS = {a.key: a.label for a in APP_CLASSES}
_BUTTONS = {"Back": "go back", "Home": "go to the home screen"}


def _clean(s: str) -> str:
    return " ".join(s.split())


def _is_field(e: UIElement) -> bool:
    return e.cls.endswith("EditText")


def element_name(elements: Sequence[UIElement], e: UIElement) -> str:
    """What a person would call `e`: a text field by its label (the text line just before it; its own text
    is the value typed so far); else its description or text; else its first labelled descendant (a list row's
    title); else its resource id's words; "" when nothing names it."""
    pos = next(i for i, x in enumerate(elements) if x is e)
    if _is_field(e):
        before = elements[pos - 1] if pos > 0 else None
        if e.content_desc:
            return _clean(e.content_desc)
        if before is not None and before.text and not before.clickable and not _is_field(before):
            return _clean(before.text)
    else:
        own = _clean(e.content_desc or e.text)
        if own:
            return own
        for d in elements[pos + 1:]:                 # descendants follow their parent in document order
            x1, y1, x2, y2 = e.bounds
            if not (x1 <= d.bounds[0] and y1 <= d.bounds[1] and d.bounds[2] <= x2 and d.bounds[3] <= y2):
                break
            if d.content_desc or d.text:
                return _clean(d.content_desc or d.text)
    return e.resource_id.rsplit("/", 1)[-1].replace("_", " ")


def _where(obs: Observation) -> str:
    """" in Music", " on the home screen", or "" for a screen that names no app."""
    app = obs.current_app
    if not app:
        return ""
    return " on the home screen" if app == "launcher" else f" in {APP_LABELS.get(app, app)}"


def _target(action: Action, elements: Sequence[UIElement]) -> Optional[UIElement]:
    if action.x is not None:
        return hit_element(elements, action.x, action.y, long=action.type == "long_press")
    index = action.element
    if index is None and action.text is not None:
        index = resolve_label(action.text, elements)
    return next((e for e in elements if e.index == index), None) if index is not None else None


def _tap(action: Action, obs: Observation) -> str:
    verb = "long-press" if action.type == "long_press" else "tap"
    e = _target(action, obs.ui_elements)
    if e is None:
        return f"{verb} an empty spot{_where(obs)}"
    name = element_name(obs.ui_elements, e)
    if not name:
        return f"{verb} an unlabelled element{_where(obs)}"
    if _is_field(e):
        return f"{verb} the '{name}' field{_where(obs)}"
    if e.checkable and verb == "tap":
        return f"switch {'off' if e.checked else 'on'} '{name}'{_where(obs)}"
    return f"{verb} '{name}'{_where(obs)}"


def describe_action(action: Action, obs: Observation) -> str:
    """The one-line description of `action` taken on the screen `obs` (forms in the module docstring)."""
    t = action.type
    if t in ("click", "long_press"):
        return _tap(action, obs)
    if t == "type":
        field = next((e for e in obs.ui_elements if e.focused and _is_field(e)), None)
        into = f" into {element_name(obs.ui_elements, field)}" if field is not None else ""
        return f"type '{action.text}'{into}"
    if t == "scroll":
        return f"scroll {action.direction}{_where(obs)}"
    if t == "swipe":
        dx, dy = action.x2 - action.x, action.y2 - action.y
        way = ("left" if dx < 0 else "right") if abs(dx) > abs(dy) else ("up" if dy < 0 else "down")
        return f"swipe {way}{_where(obs)}"
    if t == "system_button":
        return _BUTTONS.get(action.button, f"press {action.button}")
    if t == "key":
        return f"press {action.text}"
    if t == "open":
        return f"open {action.text}"
    if t == "wait":
        return "wait"
    if t == "answer":
        return f"answer '{action.text}'"
    return "declare the task done" if action.status == "success" else "declare the task failed"   # terminate


def described(action: Action, obs: Observation) -> Action:
    """`action` carrying its description on `obs` as `action_desc`."""
    return action.replace(action_desc=describe_action(action, obs))


def describe_steps(ep: Episode) -> Episode:
    """`ep` with every action that has no `action_desc` described on the screen before it (expert episodes get
    theirs when generated; this also covers episodes cached before descriptions existed)."""
    if all(a.action_desc for a in ep.actions):
        return ep
    actions = [a if a.action_desc else described(a, ep.observations[t]) for t, a in enumerate(ep.actions)]
    return dataclasses.replace(ep, actions=actions)
