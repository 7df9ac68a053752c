"""Scripted experts for MiniWob++ pages, acting through our Action type (demonstrations for SFT, and the
check that the backend's action mapping works end to end).

`expert_actions(task, obs)` reads the first observation (DOM elements + the package's instruction fields)
and returns the whole action sequence; every click is at the target element's centre in task pixels.
`EXPERT_TASKS` lists the pages it solves.
"""
from __future__ import annotations

from typing import Callable, Optional

from gui_jax.core.types import Action, Observation, UIElement


class NoExpertError(KeyError):
    """The page has no scripted expert."""


def _click(e: UIElement, obs: Optional[Observation] = None) -> Action:
    """A click on `e`: its centre, or (given the page) the point of `e` nearest its centre that no later,
    hence higher-stacked, clickable element covers (MiniWob places some buttons so that they overlap)."""
    x, y = e.center
    if obs is not None:
        above = [o.bounds for o in obs.ui_elements if o.index > e.index and o.clickable]
        x1, y1, x2, y2 = e.bounds
        pts = [(x1 + (x2 - x1) * i / 8, y1 + (y2 - y1) * j / 8) for i in range(1, 8) for j in range(1, 8)]
        free = [p for p in pts if not any(b[0] <= p[0] <= b[2] and b[1] <= p[1] <= b[3] for b in above)]
        if free:
            x, y = min(free, key=lambda p: (p[0] - x) ** 2 + (p[1] - y) ** 2)
    return Action("click", x=int(round(x)), y=int(round(y)))


def _find(obs: Observation, cls: Optional[str] = None, text: Optional[str] = None, rid: Optional[str] = None,
          nth: int = 0) -> UIElement:
    hits = [e for e in obs.ui_elements if (cls is None or e.cls.lower() == cls)
            and (text is None or e.text.strip() == text) and (rid is None or e.resource_id == rid)]
    if len(hits) <= nth:
        raise LookupError(f"no element cls={cls!r} text={text!r} id={rid!r} (#{nth}) on the page")
    return hits[nth]


def _row_control(obs: Observation, label: str, cls: str) -> UIElement:
    """The radio/checkbox on the same row as the text `label` (MiniWob puts the text right of the box)."""
    t = _find(obs, "t", label)
    cy = t.center[1]
    return min((e for e in obs.ui_elements if e.cls.lower() == cls),
               key=lambda e: abs(e.center[1] - cy) + abs(e.bounds[2] - t.bounds[0]) * 0.01)


def _submit(obs: Observation) -> Action:
    return _click(next(e for e in obs.ui_elements if e.cls.lower() == "button"
                       and e.text.strip().lower() in ("submit", "login")))


def _type_into(e: UIElement, text: str) -> list[Action]:
    return [_click(e), Action("type", text=text)]


def _click_test(t, o): return [_click(_find(o, "button"))]
def _click_named_button(t, o): return [_click(_find(o, "button", t.fields["target"]), o)]
def _click_link(t, o): return [_click(_find(o, "span", t.fields["target"]))]
def _focus_text(t, o): return [_click(_find(o, "input_text"))]
def _click_tab(t, o): return [_click(_find(o, "a", f"Tab #{t.fields['target']}"))]
def _enter_text(t, o): return _type_into(_find(o, "input_text"), t.fields["target"]) + [_submit(o)]


def _click_dialog(t, o):
    # the close button is the title bar's only button; its icon span is the visible target
    btn = _find(o, "button")
    inner = [e for e in o.ui_elements if e.cls.lower() == "span" and e.bounds[0] >= btn.bounds[0]
             and e.bounds[2] <= btn.bounds[2] and e.bounds[1] >= btn.bounds[1] and e.bounds[3] <= btn.bounds[3]]
    return [_click(inner[0] if inner else btn)]


def _enter_password(t, o):
    pw = t.fields["target"]
    return (_type_into(_find(o, "input_password", nth=0), pw) + _type_into(_find(o, "input_password", nth=1), pw)
            + [_submit(o)])


def _login_user(t, o):
    return (_type_into(_find(o, "input_text", rid="username"), t.fields["username"])
            + _type_into(_find(o, "input_password", rid="password"), t.fields["password"]) + [_submit(o)])


def _click_option(t, o):
    return [_click(_row_control(o, t.fields["target"], "input_radio")), _submit(o)]


def _click_checkboxes(t, o):
    labels = [v for k, v in sorted(t.fields.items()) if k.startswith("target")]
    return [_click(_row_control(o, lab, "input_checkbox")) for lab in labels] + [_submit(o)]


EXPERTS: dict[str, Callable] = {
    "click-test": _click_test, "click-test-2": _click_named_button, "click-button": _click_named_button,
    "click-link": _click_link, "focus-text": _focus_text, "click-tab": _click_tab, "enter-text": _enter_text,
    "click-dialog": _click_dialog, "enter-password": _enter_password, "login-user": _login_user,
    "click-option": _click_option, "click-checkboxes": _click_checkboxes,
}
EXPERT_TASKS = tuple(sorted(EXPERTS))


def expert_actions(task, obs: Observation) -> list[Action]:
    """The scripted action sequence for `task` (a reset MiniWobTask) from its first observation."""
    if task.env_name not in EXPERTS:
        raise NoExpertError(f"no scripted expert for MiniWob++ page {task.env_name!r}; have {list(EXPERT_TASKS)}")
    return EXPERTS[task.env_name](task, obs)


def expert_episode(env, task):
    """Plays the scripted expert on a MiniWobEnv and records an `Episode` (observations before every action,
    the target element's bounds for clicks, the final observation), for SFT. Raises if the expert fails."""
    from gui_jax.core.types import Episode
    obs = env.reset(task)
    actions, observations, bboxes = expert_actions(task, obs), [obs], []
    info: dict = {}
    for i, a in enumerate(actions):
        target = None
        if a.type == "click":
            hits = [e for e in obs.ui_elements if e.bounds[0] <= a.x <= e.bounds[2] and e.bounds[1] <= a.y <= e.bounds[3]]
            # the innermost element under the finger is what the click lands on
            target = min(hits, key=lambda e: (e.bounds[2] - e.bounds[0]) * (e.bounds[3] - e.bounds[1])).bounds if hits else None
        bboxes.append(target)
        obs, done, info = env.step(a)
        if done:
            if i != len(actions) - 1 or not info.get("success"):
                raise RuntimeError(f"{task.task_id}: the scripted expert ended at step {i} without success "
                                   f"(goal {task.goal!r}, info {info})")
            break
        observations.append(obs)
    else:
        raise RuntimeError(f"{task.task_id}: the page did not end after the expert's {len(actions)} actions")
    return Episode(episode_id=task.task_id, goal=task.goal, observations=observations[: len(actions)] + [obs],
                   actions=list(actions), target_bboxes=bboxes, step_instructions=["" for _ in actions],
                   app="miniwob", template=task.template, difficulty="miniwob",
                   info={"seed": task.seed, "source": "miniwob-expert", "reward": info.get("reward")})
