"""Oracle solver: executes a template's plan on a device, recording expert steps.

Each plan step is resolved against the live screen: the target widget is found by resource-id /
text / content-desc, off-screen targets are scrolled into full view first (recorded as scroll
steps), and the click point is the widget centre. The plan always ends with terminate(success).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gui_jax.core.types import Action
from gui_jax.envs.sim.templates.base import Answer, Back, Fill, Look, Open, Spec, Tap, TapAt


@dataclass
class ExpertStep:
    action: Action
    bbox: Optional[tuple]  # target element (x1, y1, x2, y2) for point actions, else None
    instruction: str


class OracleError(RuntimeError):
    """The plan could not be executed on the current screen (a template bug)."""


def _matches(node, rid, text, desc, exact) -> bool:
    if rid is not None and not node.rid.endswith(":id/" + rid):
        return False
    if desc is not None and node.desc.lower() != desc.lower():
        return False
    if text is not None:
        t = text.lower()
        if exact:
            return any(n.text.lower() == t for n in node.walk())
        return any(n.text.lower().startswith(t + " ") for n in node.walk())
    return True


def _interactive(n) -> bool:
    return bool(n.on_click or n.on_point or n.on_long)


def find(dev, rid=None, text=None, desc=None, need_click=True):
    """First widget (tree order) matching the selector, exact text before 'text + suffix'
    matches; climbs to the nearest interactive ancestor when need_click."""
    scr = dev.screen()
    parents = {}
    for n in scr.flat:
        for c in n.children:
            parents[id(c)] = n
    for exact in (True, False):
        for n in scr.flat:
            if rid is None and text is not None and n.children:
                continue  # text-only selectors match leaves, then climb
            if _matches(n, rid, text, desc, exact):
                target = n
                while need_click and not _interactive(target) and id(target) in parents:
                    target = parents[id(target)]
                if not need_click or _interactive(target):
                    return target
    return None


def _label(step) -> str:
    return step.text or step.desc or (step.rid or "").replace("_", " ")


def solve(dev, spec: Spec, max_scrolls: int = 25) -> list[ExpertStep]:
    out: list[ExpertStep] = []

    def do(action, bbox, instr):
        ok, why = dev.apply(action)
        if not ok:
            raise OracleError(f"oracle action {action} was invalid: {why} (goal: {spec.goal!r})")
        out.append(ExpertStep(action, bbox, instr))

    def locate(rid, text, desc, what):
        down = True
        for _ in range(max_scrolls):
            node = find(dev, rid, text, desc)
            if node is not None and node.bounds == node.draw:
                return node
            if node is not None:  # partly visible: scroll towards it
                down = node.draw[3] > node.bounds[3]
            scr, ref = dev.screen(), dev.top
            if scr.scroll_node is None:
                break
            if down and ref.scroll >= scr.scroll_max:
                down = False  # reached the bottom without finding it: search upwards
            if not down and ref.scroll <= 0:
                break
            do(
                Action("scroll", direction="down" if down else "up"),
                None,
                f"Scroll {'down' if down else 'up'} to find {what}",
            )
        raise OracleError(
            f"could not find {what!r} (rid={rid}, text={text}, desc={desc}) on "
            f"{dev.top.app}/{dev.top.page} for goal {spec.goal!r}"
        )

    for step in spec.plan:
        if isinstance(step, Open):
            app = dev.apps[dev.find_app(step.app)]
            do(Action("open", text=app.label), None, step.instr or f"Open the {app.label} app")
        elif isinstance(step, Tap):
            node = locate(step.rid, step.text, step.desc, _label(step))
            x1, y1, x2, y2 = node.bounds
            kind = "long_press" if step.long else "click"
            do(
                Action(kind, x=(x1 + x2) / 2, y=(y1 + y2) / 2),
                node.bounds,
                step.instr or f"{'Long-press' if step.long else 'Tap'} '{_label(step)}'",
            )
        elif isinstance(step, TapAt):
            node = locate(step.rid, None, None, step.rid)
            x1, y1, x2, y2 = node.bounds
            x = min(x1 + step.frac * (x2 - x1), x2 - 1)
            do(Action("click", x=x, y=(y1 + y2) / 2), node.bounds, step.instr or f"Tap '{step.rid}'")
        elif isinstance(step, Fill):
            node = locate(step.rid, None, None, step.label or step.rid)
            x1, y1, x2, y2 = node.bounds
            do(
                Action("click", x=(x1 + x2) / 2, y=(y1 + y2) / 2),
                node.bounds,
                f"Tap the {step.label or step.rid.replace('_', ' ')} field",
            )
            do(Action("type", text=step.text), None, f"Type '{step.text}'")
        elif isinstance(step, Look):
            locate(step.rid, step.text, None, step.text or step.rid)
        elif isinstance(step, Back):
            do(Action("system_button", button="Back"), None, step.instr)
        elif isinstance(step, Answer):
            out.append(ExpertStep(Action("answer", text=step.text), None, f"Answer '{step.text}'"))
        else:
            raise OracleError(f"unknown plan step {step!r}")
    out.append(ExpertStep(Action("terminate", status="success"), None, "The task is complete"))
    return out
