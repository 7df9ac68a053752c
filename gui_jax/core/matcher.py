"""Step matcher (docs/algorithms.md §1): does a predicted action match the expert's?

Returns (type_match, exact_match). Coordinates of `pred`, `expert` and `expert_bbox` are pixels
of the same image of size `image_size` = (width, height); they are normalised to [0, 1] by it.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

from gui_jax.core.types import Action, UIElement

BBox = tuple[float, float, float, float]

# scroll and swipe describe the same gesture in two conventions; they may match each other.
_GESTURES = ("scroll", "swipe")
_TEXT_TYPES = ("type", "answer", "open", "key")


def content_direction(action: Action) -> Optional[str]:
    """Canonical content direction of a scroll/swipe (scroll down = finger swipes up).

    Swipe: |dx| > |dy| → horizontal, ties vertical; the content moves against the finger.
    A zero-length swipe has no direction (None).
    """
    if action.type == "scroll":
        return action.direction
    if action.type != "swipe":
        raise ValueError(f"content_direction needs a scroll or swipe, got {action.type!r}")
    dx, dy = action.x2 - action.x, action.y2 - action.y
    if dx == 0 and dy == 0:
        return None
    if abs(dx) > abs(dy):
        return "left" if dx > 0 else "right"
    return "up" if dy > 0 else "down"


def normalize_text(text: Optional[str]) -> str:
    return (text or "").strip().lower()


def text_match(pred: Optional[str], expert: Optional[str], rule: str = "substring") -> bool:
    """After lowercase + strip: rule 'substring' (UI-S1's matcher) = either contains the other, so any non-empty
    piece of the expert's text matches (a policy trained on it learns to answer "The" for "The meeting moved to
    Friday"); 'exact' = equal. An empty prediction matches only empty."""
    p, e = normalize_text(pred), normalize_text(expert)
    if rule == "exact":
        return p == e
    if rule != "substring":
        raise ValueError(f"unknown text-match rule {rule!r}; known: substring, exact")
    if not p:
        return not e
    return p in e or e in p


def in_scaled_bbox(x: float, y: float, bbox: BBox, scale: float) -> bool:
    """Point inside `bbox` enlarged by `scale` about its centre; edges inclusive."""
    x1, y1, x2, y2 = bbox
    cx, cy = (x1 + x2) / 2.0, (y1 + y2) / 2.0
    hw, hh = (x2 - x1) * scale / 2.0, (y2 - y1) * scale / 2.0
    # Tiny epsilon: the edge is inclusive even after float rounding of the enlarged box.
    eps = 1e-9
    return cx - hw - eps <= x <= cx + hw + eps and cy - hh - eps <= y <= cy + hh + eps


def _point(action: Action, elements: Optional[Sequence[BBox]]) -> Optional[tuple[float, float]]:
    if action.x is not None:
        return (action.x, action.y)
    if action.element is not None and elements is not None and 0 <= action.element < len(elements):
        x1, y1, x2, y2 = elements[action.element]
        return ((x1 + x2) / 2.0, (y1 + y2) / 2.0)
    return None


def _inside(e: UIElement, x: float, y: float) -> bool:
    x1, y1, x2, y2 = e.bounds
    return x1 <= x < x2 and y1 <= y < y2


def hit_element(elements: Sequence[UIElement], x: float, y: float, long: bool = False) -> Optional[UIElement]:
    """The element a tap at (x, y) reaches: the last enabled clickable one holding the point (a long press
    prefers a long-clickable one), as PhoneSim's Device.hit decides on the live widget tree."""
    tiers = ((lambda e: e.long_clickable), (lambda e: e.clickable)) if long else ((lambda e: e.clickable),)
    for ok in tiers:
        for e in reversed(elements):
            if e.enabled and ok(e) and _inside(e, x, y):
                return e
    return None


def same_receiver(ui: Sequence[UIElement], point: tuple[float, float], expert_point: tuple[float, float],
                  long: bool = False) -> Optional[bool]:
    """Does a tap at `point` reach the element a tap at `expert_point` reaches? None when the expert's tap
    reaches no clickable element (then only boxes and distances can judge)."""
    want = hit_element(ui, expert_point[0], expert_point[1], long)
    if want is None:
        return None
    got = hit_element(ui, point[0], point[1], long)
    return got is not None and got.index == want.index


def match_action(pred: Action, expert: Action, *, image_size: tuple[float, float],
                 expert_bbox: Optional[BBox] = None, bbox_scale: float = 1.2,
                 dist_threshold: float = 0.04,
                 elements: Optional[Sequence[BBox]] = None, text_rule: str = "substring",
                 ui: Optional[Sequence[UIElement]] = None) -> tuple[bool, bool]:
    """(type_match, exact_match) of `pred` against `expert` (docs/algorithms.md §1 rules; text actions by
    `text_match(..., text_rule)`).

    image_size: (width, height) used to normalise coordinates. expert_bbox: the expert's
    target element bounds (pixels) or None. elements: optional element-index → bbox table
    used to resolve actions given by `element` index instead of coordinates. ui: the screen's element tree,
    where known (PhoneSim): a click then matches iff it reaches the same element as the expert's
    (`hit_element`), since a switch inside the expert's row lies in its box yet does something else; the box
    and distance rules decide where the expert's click reaches no clickable element or no tree is given.
    """
    if pred.type in _GESTURES and expert.type in _GESTURES:
        d_pred, d_exp = content_direction(pred), content_direction(expert)
        return True, d_pred is not None and d_pred == d_exp
    if pred.type != expert.type:
        return False, False
    t = expert.type
    if t in ("click", "long_press"):
        if pred.element is not None and expert.element is not None and pred.x is None:
            if pred.element == expert.element:
                return True, True
        p, e = _point(pred, elements), _point(expert, elements)
        if p is None or e is None:
            return True, False
        same = same_receiver(ui, p, e, t == "long_press") if ui is not None else None
        if same is not None:
            return True, same
        if expert_bbox is not None and in_scaled_bbox(p[0], p[1], expert_bbox, bbox_scale):
            return True, True
        w, h = image_size
        dist = math.hypot((p[0] - e[0]) / w, (p[1] - e[1]) / h)
        return True, dist <= dist_threshold + 1e-12
    if t in _TEXT_TYPES:
        return True, text_match(pred.text, expert.text, text_rule)
    if t == "system_button":
        return True, normalize_text(pred.button) == normalize_text(expert.button)
    # wait, terminate: the type alone decides.
    return True, True
