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


_ATTR = {"long-clickable": "long_clickable"}  # XML flag name -> UIElement field


def element_line(e: UIElement) -> Optional[str]:
    """The simplified line of one element (`Class;action;flags;text;[x1,y1][x2,y2]`), or None when the
    element is redundant (no functional flag, no text, no content-desc)."""
    text, desc = e.text or "", e.content_desc or ""
    flag = {f: bool(getattr(e, _ATTR.get(f, f))) for f in FUNCTIONAL_FLAGS}
    if not (text or desc or any(flag.values())):
        return None
    cls = (e.cls or "").split(".")[-1]
    action = ",".join(name for f, name in ACTION_FLAGS if flag[f])
    flags = ",".join(f for f in STATE_FLAGS if flag[f])
    shown = f"{text} | {desc}" if text and desc and text != desc else (text or desc)
    shown = shown.replace("\n", " ").replace(";", ",")
    x1, y1, x2, y2 = e.bounds
    return f"{cls};{action};{flags};{shown};[{x1},{y1}][{x2},{y2}]"


def on_screen(bounds, screen_size: tuple[int, int]) -> bool:
    """Bounds inside the (width, height) screen."""
    return _inside(bounds, (0, 0, int(screen_size[0]), int(screen_size[1])))


def onscreen_indices(xml: str, screen_size: tuple[int, int]) -> set[int]:
    """Document-order indices (the `parse_ui_xml` / `Observation.ui_elements` index) of the nodes the
    off-screen rule keeps: inside the screen and inside their parent, recursively."""
    root = _root(xml)
    nodes = list(_nodes(root))  # kept alive: lxml reuses a node's proxy (and its id) only while one exists
    index = {id(n): i for i, n in enumerate(nodes)}
    screen = (0, 0, int(screen_size[0]), int(screen_size[1]))
    kept: set[int] = set()

    def visit(node, parent_bounds):
        b = parse_bounds(node.get("bounds", ""), f"node {index[id(node)]}")
        if not (_inside(b, screen) and _inside(b, parent_bounds)):
            return
        kept.add(index[id(node)])
        for c in node:
            if c.tag == "node":
                visit(c, b)

    for top in root:
        if top.tag == "node":
            visit(top, screen)
    return kept


def simplify_xml(xml: str, screen_size: tuple[int, int] = (1080, 2400), keep_offscreen: bool = False) -> str:
    """docs/algorithms.md §10 simplified UI text: one line per kept node (see module docstring)."""
    elements = parse_ui_xml(xml)
    kept = None if keep_offscreen else onscreen_indices(xml, screen_size)
    lines = [element_line(e) for e in elements if kept is None or e.index in kept]
    return "\n".join(line for line in lines if line is not None)
