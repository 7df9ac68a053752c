"""Low-level text pieces shared by the response dialects: numbers, quoted strings, call syntax.

Everything here raises `ActionParseError` (never another exception) on malformed input.
Quoted strings use JSON-style escapes; `<` is always written as \\u003c so that an action's
text can never close an enclosing XML-like tag (`</answer>`, `</action>`, `</tool_call>`).
"""
from __future__ import annotations

import json
import math
import re
from typing import Any


class ActionParseError(ValueError):
    """A model response could not be parsed into an Action. `.text` is the offending text."""

    def __init__(self, message: str, text: Any = ""):
        self.text = text
        shown = text if isinstance(text, str) else repr(text)
        if len(shown) > 200:
            shown = shown[:200] + "…"
        super().__init__(f"{message} (in response {shown!r})")


class _Bad(Exception):
    """Internal: a parse failure whose message is wrapped into ActionParseError by the caller."""


# ---------------------------------------------------------------- numbers
def fmt_num(v: float) -> int | float:
    """Number as it is written: integral values as int (no '.0'), others as float (repr exact)."""
    f = float(v)
    if f.is_integer() and abs(f) < 2**53:
        return int(f)
    return f


def num_str(v: float) -> str:
    return repr(fmt_num(v))


def read_num(v: Any, what: str) -> float:
    """A finite number from JSON/call syntax (int, float or numeric string); bools are rejected."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise _Bad(f"{what} must be a number, got {type(v).__name__} {v!r}"[:300])
    try:
        f = float(v)
    except (ValueError, OverflowError):
        raise _Bad(f"{what} is not a number: {v!r}"[:300]) from None
    if not math.isfinite(f):
        raise _Bad(f"{what} is not finite: {v!r}"[:300])
    return f


def read_int(v: Any, what: str) -> int:
    f = read_num(v, what)
    if not f.is_integer():
        raise _Bad(f"{what} must be an integer, got {v!r}")
    return int(f)


def read_str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise _Bad(f"{what} must be a string, got {type(v).__name__} {v!r}"[:300])
    return v


def read_point(v: Any, what: str) -> tuple[float, float]:
    """[x, y] → (x, y); a box [x1, y1, x2, y2] → its centre."""
    if not isinstance(v, (list, tuple)) or len(v) not in (2, 4):
        raise _Bad(f"{what} must be [x, y] or [x1, y1, x2, y2], got {v!r}"[:300])
    nums = [read_num(c, what) for c in v]
    if len(nums) == 2:
        return nums[0], nums[1]
    cx, cy = (nums[0] + nums[2]) / 2.0, (nums[1] + nums[3]) / 2.0
    if not (math.isfinite(cx) and math.isfinite(cy)):
        raise _Bad(f"{what} centre is not finite: {v!r}"[:300])
    return cx, cy


# ---------------------------------------------------------------- JSON
def dump_json(obj: dict) -> str:
    """Compact-ish JSON with unicode kept and `<` escaped (see module docstring)."""
    return json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c")


def load_json_object(s: str, what: str) -> dict:
    try:
        obj = json.loads(s)
    except (ValueError, RecursionError) as e:
        raise _Bad(f"{what} is not valid JSON: {e}"[:300]) from None
    if not isinstance(obj, dict):
        raise _Bad(f"{what} must be a JSON object, got {type(obj).__name__}")
    return obj


# ---------------------------------------------------------------- quoted strings
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
            "<": "\\u003c"}
_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "\\": "\\", "'": "'",
              '"': '"', "/": "/"}


def quote(s: str, q: str) -> str:
    """s as a literal in quote character q, escaping q, backslash, controls and `<`."""
    out = [q]
    for c in s:
        if c == q:
            out.append("\\" + q)
        elif c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append(q)
    return "".join(out)


def _read_quoted(s: str, i: int) -> tuple[str, int]:
    """Decode the literal starting at s[i] (a quote char); returns (value, index after it)."""
    q = s[i]
    out = []
    i += 1
    n = len(s)
    while i < n:
        c = s[i]
        if c == q:
            return "".join(out), i + 1
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            break
        e = s[i + 1]
        if e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2:i + 6]):
            code = int(s[i + 2:i + 6], 16)
            i += 6
            if 0xD800 <= code < 0xDC00 and s[i:i + 2] == "\\u" and re.fullmatch(
                    r"[dD][c-fC-F][0-9a-fA-F]{2}", s[i + 2:i + 6]):
                low = int(s[i + 2:i + 6], 16)
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                i += 6
            out.append(chr(code))
        elif e in _UNESCAPES:
            out.append(_UNESCAPES[e])
            i += 2
        else:  # unknown escape from a model: keep it literally
            out.append("\\" + e)
            i += 2
    raise _Bad(f"unterminated string literal starting at offset {i}")


# ---------------------------------------------------------------- call syntax
_NUM_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i].isspace():
        i += 1
    return i


def _read_value(s: str, i: int, depth: int = 0) -> tuple[Any, int]:
    if depth > 4:
        raise _Bad("values nested too deeply")
    if i >= len(s):
        raise _Bad("value expected at end of text")
    c = s[i]
    if c in "'\"":
        return _read_quoted(s, i)
    if c in "[(":
        close = "]" if c == "[" else ")"
        items = []
        i = _skip_ws(s, i + 1)
        while i < len(s) and s[i] != close:
            v, i = _read_value(s, i, depth + 1)
            items.append(v)
            i = _skip_ws(s, i)
            if i < len(s) and s[i] == ",":
                i = _skip_ws(s, i + 1)
            elif i < len(s) and s[i] != close:
                raise _Bad(f"expected ',' or {close!r} at offset {i}")
        if i >= len(s):
            raise _Bad(f"unclosed {c!r}")
        return items, i + 1
    m = _NUM_RE.match(s, i)
    if m:
        return read_num(m.group(0), "number"), m.end()
    m = _NAME_RE.match(s, i)
    if m and m.group(0) in ("None", "null"):
        return None, m.end()
    raise _Bad(f"unexpected character {c!r} at offset {i}")


def parse_call(s: str) -> tuple[str, dict[str, Any]]:
    """`name(k=v, k2=v2)` (the whole of s, surrounding spaces allowed) → (name, {k: v}).

    Values: quoted strings ('…' or "…", JSON escapes), numbers, lists/tuples of values, None.
    """
    i = _skip_ws(s, 0)
    m = _NAME_RE.match(s, i)
    if not m:
        raise _Bad("expected a call like name(...)")
    name = m.group(0)
    i = _skip_ws(s, m.end())
    if i >= len(s) or s[i] != "(":
        raise _Bad(f"expected '(' after {name!r}")
    i = _skip_ws(s, i + 1)
    kwargs: dict[str, Any] = {}
    while i < len(s) and s[i] != ")":
        km = _NAME_RE.match(s, i)
        if not km:
            raise _Bad(f"expected a keyword argument at offset {i} of {name}(...)")
        key = km.group(0)
        i = _skip_ws(s, km.end())
        if i >= len(s) or s[i] != "=":
            raise _Bad(f"expected '=' after argument {key!r}")
        v, i = _read_value(s, _skip_ws(s, i + 1))
        if key in kwargs:
            raise _Bad(f"argument {key!r} given twice")
        kwargs[key] = v
        i = _skip_ws(s, i)
        if i < len(s) and s[i] == ",":
            i = _skip_ws(s, i + 1)
        elif i < len(s) and s[i] != ")":
            raise _Bad(f"expected ',' or ')' at offset {i} of {name}(...)")
    if i >= len(s):
        raise _Bad(f"unclosed call {name}(")
    if s[i + 1:].strip():
        raise _Bad(f"unexpected text after {name}(...): {s[i + 1:i + 40]!r}")
    return name, kwargs


def format_call(name: str, args: list[tuple[str, Any]], q: str) -> str:
    """Inverse of parse_call for str / number / list-of-number values."""
    parts = []
    for k, v in args:
        if isinstance(v, str):
            parts.append(f"{k}={quote(v, q)}")
        elif isinstance(v, (list, tuple)):
            parts.append(f"{k}=[{','.join(num_str(c) for c in v)}]")
        else:
            parts.append(f"{k}={num_str(v)}")
    return f"{name}({', '.join(parts)})"


# ---------------------------------------------------------------- thought / tag splitting
def split_thought(text: str, open_tag: str) -> tuple[str, str]:
    """(thought, rest starting at open_tag). Thought = inside a leading <think>…</think>, else any
    free text before open_tag."""
    t = text.find("<think>")
    a = text.find(open_tag)
    if t != -1 and (a == -1 or t < a):
        end = text.find("</think>", t)
        if end == -1:
            raise _Bad("unclosed <think>")
        return text[t + 7:end].strip(), text[end + 8:]
    if a == -1:
        raise _Bad(f"no {open_tag} tag")
    return text[:a].strip(), text[a:]


def tag_body(rest: str, open_tag: str, close_tag: str) -> str:
    """Text between the first open_tag and the next close_tag; nothing else may follow."""
    a = rest.find(open_tag)
    if a == -1:
        raise _Bad(f"no {open_tag} tag")
    if rest[:a].strip():
        raise _Bad(f"unexpected text before {open_tag}: {rest[:a].strip()[:40]!r}")
    b = rest.find(close_tag, a)
    if b == -1:
        raise _Bad(f"missing {close_tag}")
    if rest[b + len(close_tag):].strip():
        raise _Bad(f"unexpected text after {close_tag}: {rest[b + len(close_tag):].strip()[:40]!r}")
    return rest[a + len(open_tag):b]
