"""Point actions given by an element's visible label: `click(text="Tara")` taps the element the text names.

A text-only agent can copy words from the goal ("Open my conversation with Tara Young") instead of
looking up the element's index on the screen: the index lookup is the grounding step a tiny model
fails to learn (docs/algorithms.md §10). The label is resolved on the current screen, the way
UI-automation selectors find a widget by its text:

1. elements whose label equals the text, else
2. elements whose label starts with it (word boundary), else
3. elements whose label contains it (word boundary);

among the first non-empty level an interactive element (clickable, long-clickable or checkable) wins,
then document order. A label is the element's content description, its text, or both joined;
comparison ignores case and repeated spaces. No match → None (the action is invalid).
"""

from __future__ import annotations

from typing import Optional, Sequence

from gui_jax.core.types import POINT_ACTIONS, Action, UIElement

__all__ = ["normalize_label", "element_labels", "resolve_label", "identifying_label", "label_to_element"]


def normalize_label(text: str) -> str:
    return " ".join(text.lower().split())


def _label_forms(e: UIElement, spell) -> list[str]:
    """Content description, text, and both joined, each written by `spell`; repeats dropped."""
    labels = list(dict.fromkeys(spell(s) for s in (e.content_desc, e.text) if s and s.strip()))
    if len(labels) == 2:
        labels.append(f"{labels[0]} {labels[1]}")
    return labels


def element_labels(e: UIElement) -> list[str]:
    """The normalised labels an element answers to: content description, text, both joined."""
    return _label_forms(e, normalize_label)


def _level(query: str, labels: list[str]) -> Optional[int]:
    best = None
    for lab in labels:
        if lab == query:
            return 0
        if lab.startswith(query + " "):
            best = 1
        elif best is None and f" {query} " in f" {lab} ":
            best = 2
    return best


def resolve_label(text: str, elements: Sequence[UIElement]) -> Optional[int]:
    """The `index` of the element `text` names on this screen (rules in the module docstring), or None."""
    query = normalize_label(text)
    if not query:
        return None
    found: dict[int, list[UIElement]] = {}
    for e in elements:
        lv = _level(query, element_labels(e))
        if lv is not None:
            found.setdefault(lv, []).append(e)
    if not found:
        return None
    tier = found[min(found)]
    for e in tier:
        if e.clickable or e.long_clickable or e.checkable:
            return e.index
    return tier[0].index


def identifying_label(elements: Sequence[UIElement], index: int) -> Optional[str]:
    """The shortest word prefix of element `index`'s label that `resolve_label` maps back to it ("Tara" for
    the row "Tara Young" when no other label starts with "Tara"), or None if none does. The content
    description is tried first, then the text, then both; the label keeps its original spelling."""
    target = next((e for e in elements if e.index == index), None)
    if target is None:
        return None
    # description first: it names what the widget is for ("08:30 Call mom", not "ON")
    for label in _label_forms(target, lambda s: " ".join(s.split())):
        words = label.split(" ")
        for n in range(1, len(words) + 1):
            cand = " ".join(words[:n])
            if resolve_label(cand, elements) == index:
                return cand
    return None


def label_to_element(action: Action, elements: Sequence[UIElement]) -> Action:
    """A point action given by label, as the same action by element index on this screen (for matching
    against an expert step); other actions, and labels that name nothing, come back unchanged."""
    if action.type not in POINT_ACTIONS or action.x is not None or action.element is not None or action.text is None:
        return action
    idx = resolve_label(action.text, elements)
    return action if idx is None else action.replace(element=idx, text=None)
