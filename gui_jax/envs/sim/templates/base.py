"""Task templates: declaration decorator, seeded specs, oracle plan steps, answer matching.

A template is a function `setup(dev, rng) -> Spec` registered with `@template(...)`. It runs on a
freshly populated device (seeded by the task seed), may edit the initial state, and returns the
goal text, a `check(dev, answer)` that reads app state, and the oracle plan.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

DIFFICULTY_LEVEL = {"easy": 1, "medium": 2, "hard": 3}


@dataclass(frozen=True)
class Open:
    app: str
    instr: str = ""


@dataclass(frozen=True)
class Tap:
    """Click the widget with resource-id suffix `rid` and/or text `text` (or content-desc `desc`).

    With rid and text, the widget is the one with that rid whose subtree shows `text`."""

    rid: Optional[str] = None
    text: Optional[str] = None
    desc: Optional[str] = None
    instr: str = ""
    long: bool = False


@dataclass(frozen=True)
class Look:
    """Scroll until the widget is fully visible (no click); for answers read off a list."""

    rid: Optional[str] = None
    text: Optional[str] = None


@dataclass(frozen=True)
class TapAt:
    """Click a point at fraction `frac` of the width of widget `rid` (sliders)."""

    rid: str
    frac: float
    instr: str = ""


@dataclass(frozen=True)
class Fill:
    """Focus the text field `rid` (form key) and type `text` (two actions)."""

    rid: str
    text: str
    label: str = ""


@dataclass(frozen=True)
class Back:
    instr: str = "Go back"


@dataclass(frozen=True)
class Answer:
    text: str


@dataclass
class Spec:
    goal: str
    check: Callable[[Any, Optional[str]], bool]
    plan: list
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Template:
    name: str
    app: str
    apps: tuple
    difficulty: str
    complexity: float
    steps: int  # nominal optimal step count (incl. terminate), from the template author
    answer: bool
    parametric: bool
    setup: Callable = field(compare=False, repr=False)

    @property
    def cross_app(self) -> bool:
        return len(self.apps) > 1

    @property
    def level(self) -> int:
        return DIFFICULTY_LEVEL[self.difficulty]


TEMPLATES: dict[str, Template] = {}


def template(
    name: str,
    app: str,
    difficulty: str,
    steps: int,
    apps: tuple = (),
    answer: bool = False,
    parametric: bool = True,
    complexity: Optional[float] = None,
):
    """Register a template. complexity defaults to a function of nominal steps and task kind."""
    if difficulty not in DIFFICULTY_LEVEL:
        raise ValueError(f"template {name!r}: difficulty must be easy/medium/hard, got {difficulty!r}")

    def deco(fn):
        if name in TEMPLATES:
            raise ValueError(f"duplicate template name {name!r}")
        all_apps = tuple(dict.fromkeys((app,) + tuple(apps)))
        cx = (
            complexity
            if complexity is not None
            else round(1.0 + 0.25 * steps + (0.5 if answer else 0.0) + (1.0 if len(all_apps) > 1 else 0.0), 2)
        )
        TEMPLATES[name] = Template(name, app, all_apps, difficulty, cx, steps, answer, parametric, fn)
        return fn

    return deco


# ---- answer matching --------------------------------------------------------------------------
_NUM = re.compile(r"-?\d[\d,]*\.?\d*")


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s:.@+-]", " ", s.lower())).strip().strip(".")


def parse_number(s: str) -> Optional[float]:
    m = _NUM.search(s.replace("$", ""))
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


def answer_matches(answer: Optional[str], expected, numeric: bool = False, tol: float = 0.011) -> bool:
    """Fuzzy answer check. `expected` is a string, a number, or a list of strings that must all appear.

    numeric: the first number in the answer must be within `tol` (absolute) or 0.5% (relative).
    text: normalised equality, containment in a short answer, or difflib ratio >= 0.85."""
    if answer is None:
        return False
    if isinstance(expected, (list, tuple)):
        a = _norm(answer)
        return all(_norm(str(e)) in a for e in expected) and len(a) <= sum(len(str(e)) + 8 for e in expected) + 10
    if numeric or isinstance(expected, (int, float)):
        got = parse_number(answer)
        want = float(expected)
        return got is not None and abs(got - want) <= max(tol, 0.005 * abs(want))
    a, e = _norm(answer), _norm(str(expected))
    if not a or not e:
        return False
    if a == e or (e in a and len(a) <= 2 * len(e) + 12):
        return True
    return difflib.SequenceMatcher(None, a, e).ratio() >= 0.85
