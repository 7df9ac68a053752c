"""uiautomator2-style XML dump and `UIElement` list of a PhoneSim screen.

Every node of the widget tree becomes one `<node>` with the attributes uiautomator writes
(index, text, resource-id, class, package, content-desc, the boolean flags, bounds
"[x1,y1][x2,y2]"); `ui_elements` lists the same nodes in document order, so an action's
`element` index refers to the n-th `<node>` of the dump.
"""

from __future__ import annotations

from gui_jax.core.types import UIElement
from gui_jax.envs.sim.widgets import Screen

_ESC = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;"})


def _b(v: bool) -> str:
    return "true" if v else "false"


def screen_xml(scr: Screen) -> str:
    parts = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<hierarchy rotation=\"0\">\n"]
    app = scr.app

    def emit(node, index, depth):
        x1, y1, x2, y2 = node.bounds
        rid = node.rid
        pkg = "com.android.systemui" if rid.startswith("com.android.systemui") else f"com.phonesim.{app}"
        pad = "  " * depth
        parts.append(
            f'{pad}<node index="{index}" text="{node.text.translate(_ESC)}" resource-id="{rid}" '
            f'class="{node.cls}" package="{pkg}" content-desc="{node.desc.translate(_ESC)}" '
            f'checkable="{_b(node.checkable)}" checked="{_b(node.checked)}" clickable="{_b(node.clickable)}" '
            f'enabled="{_b(node.enabled)}" focusable="{_b(node.focusable)}" focused="{_b(node.focused)}" '
            f'scrollable="{_b(node.scrollable)}" long-clickable="{_b(node.long_clickable)}" '
            f'password="{_b(node.password)}" selected="{_b(node.selected)}" bounds="[{x1},{y1}][{x2},{y2}]"'
        )
        if node.children:
            parts.append(">\n")
            for i, c in enumerate(node.children):
                emit(c, i, depth + 1)
            parts.append(f"{pad}</node>\n")
        else:
            parts.append(" />\n")

    emit(scr.root, 0, 1)
    parts.append("</hierarchy>\n")
    return "".join(parts)


def screen_elements(scr: Screen) -> list[UIElement]:
    out = []
    for i, n in enumerate(scr.flat):
        out.append(
            UIElement(
                index=i,
                cls=n.cls,
                bounds=n.bounds,
                text=n.text,
                content_desc=n.desc,
                resource_id=n.rid,
                clickable=n.clickable,
                long_clickable=n.long_clickable,
                scrollable=n.scrollable,
                focusable=n.focusable,
                focused=n.focused,
                checkable=n.checkable,
                checked=n.checked,
                selected=n.selected,
                enabled=n.enabled,
                password=n.password,
            )
        )
    return out
