"""UI-tree XML (uiautomator2 dump format) -> parsed elements and simplified text (docs/algorithms.md §10).

Shared by PhoneSim and the real-device backend. The simplifier follows MobileRL App. D:
1. drop off-screen nodes: a node is kept only if its bounds lie inside the screen and inside its
   parent's bounds (checked recursively, so a dropped node drops its subtree), unless
   `keep_offscreen=True`;
2. drop redundant nodes: no true flag among checkable, checked, clickable, focusable, scrollable,
   long-clickable, password, selected, and empty text and content-desc (their children are kept);
3. one line per kept node, in document order: `Class;action;flags;text;[x1,y1][x2,y2]` where Class is
   the last component of the class name, action the comma-joined interactions
   (click, long-click, scroll), flags the other true flags (checkable, checked, focusable,
   password, selected), text the text and the content-desc ("text | desc" when both are set and
   differ). index, resource-id and package are dropped.
"""

from __future__ import annotations

import re
from typing import Optional

from lxml import etree

from gui_jax.core.types import UIElement

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
FUNCTIONAL_FLAGS = (
    "checkable",
    "checked",
    "clickable",
    "focusable",
    "scrollable",
    "long-clickable",
    "password",
    "selected",
)
ACTION_FLAGS = (("clickable", "click"), ("long-clickable", "long-click"), ("scrollable", "scroll"))
STATE_FLAGS = ("checkable", "checked", "focusable", "password", "selected")


class UIXmlError(ValueError):
    """The UI dump could not be parsed."""


def parse_bounds(s: str, where: str = "node") -> tuple[int, int, int, int]:
    m = _BOUNDS.fullmatch((s or "").strip())
    if not m:
        raise UIXmlError(f"{where}: bad bounds {s!r}; expected '[x1,y1][x2,y2]'")
    return tuple(int(v) for v in m.groups())


def _root(xml: str):
    try:
        data = xml.encode("utf-8") if isinstance(xml, str) else xml
        return etree.fromstring(data, parser=etree.XMLParser(remove_blank_text=True, recover=False))
    except etree.XMLSyntaxError as e:
        raise UIXmlError(f"UI XML does not parse: {e}") from None


def _nodes(root):
    return root.iter("node")


def _flag(node, name: str) -> bool:
    return node.get(name, "false") == "true"


def parse_ui_xml(xml: str) -> list[UIElement]:
    """All `<node>`s in document order as `UIElement`s (index = position)."""
    out = []
    for i, n in enumerate(_nodes(_root(xml))):
        out.append(
            UIElement(
                index=i,
                cls=n.get("class", ""),
                bounds=parse_bounds(n.get("bounds", ""), f"node {i}"),
                text=n.get("text", ""),
                content_desc=n.get("content-desc", ""),
                resource_id=n.get("resource-id", ""),
                clickable=_flag(n, "clickable"),
                long_clickable=_flag(n, "long-clickable"),
                scrollable=_flag(n, "scrollable"),
                focusable=_flag(n, "focusable"),
                focused=_flag(n, "focused"),
                checkable=_flag(n, "checkable"),
                checked=_flag(n, "checked"),
                selected=_flag(n, "selected"),
                enabled=n.get("enabled", "true") == "true",
                password=_flag(n, "password"),
            )
        )
    return out


def _inside(b, outer) -> bool:
    return b[0] >= outer[0] and b[1] >= outer[1] and b[2] <= outer[2] and b[3] <= outer[3]


def simplify_node(node) -> Optional[str]:
    """The simplified line of one lxml `<node>`, or None when the node is redundant."""
    text, desc = node.get("text", "") or "", node.get("content-desc", "") or ""
    if not (text or desc or any(_flag(node, f) for f in FUNCTIONAL_FLAGS)):
        return None
    cls = (node.get("class", "") or "").split(".")[-1]
    action = ",".join(name for flag, name in ACTION_FLAGS if _flag(node, flag))
    flags = ",".join(f for f in STATE_FLAGS if _flag(node, f))
    shown = f"{text} | {desc}" if text and desc and text != desc else (text or desc)
    shown = shown.replace("\n", " ").replace(";", ",")
    x1, y1, x2, y2 = parse_bounds(node.get("bounds", ""), f"node {cls!r}")
    return f"{cls};{action};{flags};{shown};[{x1},{y1}][{x2},{y2}]"


def simplify_xml(xml: str, screen_size: tuple[int, int] = (1080, 2400), keep_offscreen: bool = False) -> str:
    """docs/algorithms.md §10 simplified UI text: one line per kept node (see module docstring)."""
    root = _root(xml)
    screen = (0, 0, int(screen_size[0]), int(screen_size[1]))
    lines: list[str] = []

    def visit(node, parent_bounds):
        b = parse_bounds(node.get("bounds", ""), f"node {node.get('class', '')!r}")
        if not keep_offscreen and not (_inside(b, screen) and _inside(b, parent_bounds)):
            return
        line = simplify_node(node)
        if line is not None:
            lines.append(line)
        for c in node:
            if c.tag == "node":
                visit(c, b)

    for top in root:
        if top.tag == "node":
            visit(top, screen)
    return "\n".join(lines)
