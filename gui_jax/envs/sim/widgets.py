"""Widget tree data model for PhoneSim: `Node`, back-stack `PageRef`, `Dialog`, laid-out `Screen`.

A screen is a tree of `Node`s in logical screen pixels (1080x2400), built by `ui.UI` from an app's
page description and rebuilt from app state after every state change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

W, H = 1080, 2400
STATUS_H = 80
APPBAR_H = 160
KEYBOARD_H = 840
BODY_TOP = STATUS_H + APPBAR_H
PAD = 40

_FLAG_SET = frozenset(
    (
        "clickable",
        "long_clickable",
        "scrollable",
        "focusable",
        "focused",
        "checkable",
        "checked",
        "selected",
        "password",
        "enabled",
    )
)


class Node:
    """One widget. `bounds` are the visible (clipped) bounds; `draw` the unclipped ones."""

    # Boolean flags default to False at class level; __init__ sets only the ones given (hot path).
    clickable = long_clickable = scrollable = focusable = focused = False
    checkable = checked = selected = password = False
    enabled = True

    def __init__(
        self,
        cls: str,
        kind: str,
        bounds,
        text: str = "",
        desc: str = "",
        rid: str = "",
        on_click: Optional[Callable] = None,
        on_long: Optional[Callable] = None,
        on_point: Optional[Callable] = None,
        children=None,
        style=None,
        **flags,
    ):
        self.cls, self.kind = cls, kind
        self.bounds = self.draw = bounds
        self.text, self.desc, self.rid = text, desc, rid
        self.on_click, self.on_long, self.on_point = on_click, on_long, on_point
        self.children = children if children is not None else []
        self.style = style or {}
        if flags:
            for f, v in flags.items():
                if f not in _FLAG_SET:
                    raise TypeError(f"Node: unknown flag {f!r}")
                setattr(self, f, bool(v))
        if on_click is not None or on_point is not None:
            self.clickable = True
        if on_long is not None:
            self.long_clickable = True

    def shift(self, dy: int) -> None:
        x1, y1, x2, y2 = self.draw
        self.bounds = self.draw = (x1, y1 + dy, x2, y2 + dy)
        for c in self.children:
            c.shift(dy)

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def __repr__(self):
        return f"Node({self.cls.split('.')[-1]}, {self.text or self.desc!r}, {self.bounds})"


def flatten(root: Node) -> list:
    """Nodes in document (pre-)order."""
    out, stack = [], [root]
    while stack:
        n = stack.pop()
        out.append(n)
        if n.children:
            stack.extend(reversed(n.children))
    return out


def clip_tree(node: Node, top: int, bottom: int) -> Optional[Node]:
    """Clip bounds to [top, bottom); return None when nothing of the node is visible."""
    x1, y1, x2, y2 = node.draw
    if y2 <= top or y1 >= bottom:
        return None
    node.bounds = (x1, max(y1, top), x2, min(y2, bottom))
    node.children = [c for c in (clip_tree(c, top, bottom) for c in node.children) if c is not None]
    return node


@dataclass
class PageRef:
    """One back-stack entry: which page of which app, its arguments, form values and scroll."""

    app: str
    page: str
    args: dict = field(default_factory=dict)
    form: dict = field(default_factory=dict)
    scroll: int = 0
    dialog: Optional["Dialog"] = None


@dataclass
class Dialog:
    title: str
    message: str = ""
    buttons: list = field(default_factory=list)  # [(label, fn)]
    fields: list = field(default_factory=list)  # [(label, form key)]


@dataclass
class Screen:
    root: Node
    flat: list  # nodes in tree (= draw) order
    app: str
    scroll_node: Optional[Node] = None
    scroll_max: int = 0
    keyboard: bool = False
    dialog: bool = False
    dark: bool = False
    toast: str = ""
    extra: dict = field(default_factory=dict)
