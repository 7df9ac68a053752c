"""Config fields declared once: name, default, check and a one-line meaning.

A config block (e.g. `sft`) is a `Block` of `Field`s. The same declaration gives

- the block's defaults: `gui_jax/train/config_blocks.py` builds each ConfigDict with `build(block)`
  (model, prompt, sft, rl, mesh) and `gui_jax/train/online/config.py` the `online` and `env` blocks;
- its validation: `gui_jax/config_check.py` runs each field's `check` and names its `doc` in errors;
- its documentation: `python -m gui_jax.main --config <recipe> --help` (and `--print_config`) print
  each field's value with its `doc`; tests/test_config_schema.py compares the defaults stated in docs/.

Checks return None (fine) or the problem text ("expected ..."). This module is plain Python (no
ml_collections, jax or flax), so the CLI validates a config before anything heavy loads.
"""
from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

Check = Callable[[Any], Optional[str]]
Names = Sequence[str] | Callable[[], Sequence[str]]


@dataclass(frozen=True)
class Field:
    name: str
    default: Any
    doc: str                            # one line: what the field means (shown by --help and in errors)
    check: Check
    nullable: Optional[type] = None     # built as FieldReference(default, field_type=nullable): None assignable
    in_block: bool = True               # False: declared (checked, documented) but not in the default block
    costly: bool = False                # checked after the cheap fields (e.g. imports a registry)

    def type_name(self) -> str:
        if self.nullable is not None:
            return f"{self.nullable.__name__} | None"
        return type(self.default).__name__


class Block:
    """The ordered fields of one config block; `defaults()` is the block's default values in that order."""

    def __init__(self, name: str, fields: Sequence[Field]):
        names = [f.name for f in fields]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"config block {name!r} declares {dup} more than once")
        self.name = name
        self.fields: dict[str, Field] = {f.name: f for f in fields}

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields.values())

    def __getitem__(self, name: str) -> Field:
        return self.fields[name]

    def __contains__(self, name: str) -> bool:
        return name in self.fields

    def names(self) -> list[str]:
        return list(self.fields)

    def defaults(self, **overrides) -> dict[str, Any]:
        """Field name -> default for the fields in the default block (declaration order); `overrides`
        replace defaults of declared fields (e.g. `model_block(preset)`)."""
        unknown_names = sorted(set(overrides) - set(self.fields))
        if unknown_names:
            raise KeyError(f"config block {self.name!r} declares no field(s) {unknown_names}")
        return {f.name: overrides.get(f.name, f.default) for f in self if f.in_block}

    def select(self, names: Sequence[str]) -> list[Field]:
        """The declarations of `names` (in that order), to reuse in another block (e.g. `online`)."""
        return [self.fields[n] for n in names]


class RunError(ValueError):
    """A run that cannot go on as configured (zero samples, a workdir made with other settings, an offline
    device); main prints the message as one line and exits with code 2. Defined here, below every layer,
    so envs/ and train/ can raise it; `gui_jax.config_check` re-exports it."""


class ConfigError(RunError):
    """A bad config value; one line naming the field, the value and what is accepted."""


# ---------------------------------------------------------------------------------------------
# Messages with close-match suggestions.

def suggest(value: str, names: Sequence[str], prefix: str = "") -> str:
    """"; did you mean 'x'?" for the close matches of `value` among `names` ("" if none)."""
    close = difflib.get_close_matches(str(value), list(names), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(prefix + c) for c in close)}?" if close else ""


def accepted(names: Sequence[str], limit: int = 12) -> str:
    names = list(names)
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def unknown(kind: str, value, names: Sequence[str]) -> str:
    hint = suggest(value, names) if isinstance(value, str) else ""
    return f"unknown {kind}{hint or ';'} accepted: {accepted(names)}"


# ---------------------------------------------------------------------------------------------
# Checks.

def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def integer(lo: Optional[int] = None, hi: Optional[int] = None, optional: bool = False) -> Check:
    def check(v):
        if v is None and optional:
            return None
        if not is_int(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = (f" ≥ {lo}" if hi is None else f" in [{lo}, {hi}]") if lo is not None else \
                  (f" ≤ {hi}" if hi is not None else "")
            return f"expected an integer{rng}" + (" or None" if optional else "")
        return None
    return check


def number(lo: Optional[float] = None, hi: Optional[float] = None, *, lo_open: bool = False,
           hi_open: bool = False, optional: bool = False, finite: bool = False) -> Check:
    def check(v):
        if v is None and optional:
            return None
        bad = not isinstance(v, (int, float)) or isinstance(v, bool) or v != v or (finite and math.isinf(v))
        if not bad and lo is not None:
            bad = v <= lo if lo_open else v < lo
        if not bad and hi is not None:
            bad = v >= hi if hi_open else v > hi
        if bad:
            parts = []
            if lo is not None:
                parts.append(f"{'>' if lo_open else '≥'} {lo:g}")
            if hi is not None:
                parts.append(f"{'<' if hi_open else '≤'} {hi:g}")
            return ("expected a finite number" if finite else "expected a number") + \
                (f" {' and '.join(parts)}" if parts else "") + (" or None" if optional else "")
        return None
    return check


def boolean(optional: bool = False) -> Check:
    if optional:
        return lambda v: None if v is None or isinstance(v, bool) else "expected True, False or None"
    return lambda v: None if isinstance(v, bool) else "expected True or False"


def text() -> Check:
    return lambda v: None if isinstance(v, str) else "expected a string"


def choice(names: Names) -> Check:
    def check(v):
        known = names() if callable(names) else names
        if isinstance(v, str) and v in known:
            return None
        return unknown("name", v, known)
    return check


def name_list(names: Names, *, nonempty: bool = False) -> Check:
    def check(v):
        if isinstance(v, str) or not isinstance(v, (tuple, list)):
            return f"expected a tuple of names, e.g. ('{(names() if callable(names) else names)[0]}',)"
        if nonempty and not v:
            return "expected at least one name"
        if not v:
            return None
        known = names() if callable(names) else names
        for item in v:
            if item not in known:
                return unknown(f"name {item!r}", item, known)
        if len(set(v)) != len(v):
            return "expected each name once"
        return None
    return check


def strings() -> Check:
    def check(v):
        if isinstance(v, (tuple, list)) and all(isinstance(x, str) for x in v):
            return None
        return "expected a tuple of strings, e.g. ('a', 'b') or ()"
    return check


def int_tuple(lo: int = 0, length: Optional[int] = None) -> Check:
    """A tuple of integers ≥ lo (of `length` items when given)."""
    def check(v):
        if (isinstance(v, (tuple, list)) and (length is None or len(v) == length)
                and all(is_int(x) and x >= lo for x in v)):
            return None
        n = f"{length} " if length is not None else ""
        return f"expected a tuple of {n}integers ≥ {lo}"
    return check


# ---------------------------------------------------------------------------------------------
# Stage checkpoint folders (an Orbax CheckpointManager directory holds one integer-named folder per step).

def checkpoint_steps(directory: str) -> list[int]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(int(n) for n in names if n.isdigit() and os.path.isdir(os.path.join(directory, n)))


def find_checkpoint_dirs(root: str, depth: int = 3) -> list[str]:
    """Folders under `root` (itself included, up to `depth` levels) that hold checkpoint steps."""
    out = []
    if checkpoint_steps(root):
        out.append(root)
    if depth > 0 and os.path.isdir(root):
        for name in sorted(os.listdir(root)):
            sub = os.path.join(root, name)
            if os.path.isdir(sub) and not name.isdigit() and not name.startswith("."):
                out += find_checkpoint_dirs(sub, depth - 1)
    return out


def checkpoint_dir_problem(path: str) -> Optional[str]:
    """None if `path` is a stage's checkpoints folder holding at least one step; else what is wrong,
    with a "did you mean" when checkpoint folders sit below it. Never creates anything."""
    if not os.path.exists(path):
        parent = os.path.dirname(os.path.abspath(path))
        return f"no such directory (parent {'exists' if os.path.isdir(parent) else 'does not exist either'})"
    if not os.path.isdir(path):
        return "not a directory"
    if checkpoint_steps(path):
        return None
    below = [d for d in find_checkpoint_dirs(path) if d != path]
    if below:
        best = sorted(below, key=lambda d: (d.count(os.sep), "rl" not in d, d))[0]
        listing = ", ".join(below)
        return f"holds no checkpoints; did you mean {best}? (checkpoint folders below it: {listing})"
    return "holds no checkpoints (expected a folder of numbered step folders, e.g. runs/quickstart/rl/checkpoints)"
