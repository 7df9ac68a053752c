"""Response dialects: parse a model's text into (thought, Action) and format it back (docs/algorithms.md §1).

`parse_response(text, dialect)` returns (thought, action) or raises `ActionParseError`, never
any other exception. `format_response(action, dialect, thought)` is its inverse:
`parse_response(format_response(a, d, t), d) == (t.strip(), dialect_view(a, d))`, where
`dialect_view` keeps only the fields the dialect carries (it equals `a` for an action built
with those fields only). Thoughts are whitespace-stripped; a thought may not contain
`</think>` in the tag dialects (ValueError at format time). Actions a dialect cannot express
raise ValueError at format time, naming the action type and the dialect.

Direction convention: canonical `scroll(direction)` is the CONTENT direction (scroll down =
reveal what is below = finger swipes up). MobileRL `Swipe(direction=…)` and UI-Genie
`swipe(direction=…)` name the FINGER direction, so they are flipped (up<->down, left<->right);
UI-TARS `scroll(direction=…)` is a content direction and maps unchanged. A finger motion with
both end points is canonical `swipe(x,y,x2,y2)`.

ui_s1 — `<think>T</think>\\n<action>{JSON}</action>` (flat Qwen2.5-VL mobile_use JSON):
    click        {"action":"click","coordinate":[x,y]}      (or "element": k instead of coordinate)
    long_press   {"action":"long_press","coordinate":[x,y],"time":t}   (time optional)
    swipe        {"action":"swipe","coordinate":[x,y],"coordinate2":[x2,y2]}
    type/key/answer/open   {"action":…,"text":"…"}
    system_button {"action":"system_button","button":"Back"}
    wait         {"action":"wait","time":t}      terminate {"action":"terminate","status":"success"}
    every type: optional "element" (int) and "action_desc" (str).   NOT expressible: scroll.
ui_genie — optional `<think>T</think>` (or free text) then
    `<tool_call>{"name":"mobile_use","arguments":{JSON as ui_s1}}</tool_call>`, element key "som"
    (parse also accepts "element"); scroll(d) → {"action":"swipe","direction":flip(d),
    "distance":"medium"} plus "coordinate" when the scroll has x,y. Every type is expressible.
uitars — `Thought: T\\nAction: call` (thought-free: `Action: call` only):
    click(start_box='(x,y)')  long_press(start_box='(x,y)'[, time='t'])  type(content='…')
    swipe → scroll(start_box='(x,y)', end_box='(x2,y2)')   scroll → scroll([start_box='(x,y)', ]direction='d')
    open → open_app(content='…')   answer(content='…')   wait(time='t') (wait() = 5 s)
    system_button → press_back() / press_home() / press_enter() / press_menu()
    terminate(success[, text]) → finished(content='text')   (content '' ↔ no text)
    parse also accepts `<|box_start|>(x,y)<|box_end|>`, [x,y], 4-number boxes (→ centre),
    drag/swipe(start_box, end_box), open_app(app_name=…).  Not carried: element, action_desc.
    NOT expressible: key, terminate(failure).
mobilerl — `<think>T</think><answer>call</answer>` (thought-free: `<answer>call</answer>`):
    click → do(action="Tap", element=[x,y,x,y])   (parse: any box → its centre)
    long_press → do(action="Long Press", element=[x,y,x,y])   (time not carried)
    type → do(action="Type", text="…")     open → do(action="Launch", app="…")
    scroll → do(action="Swipe", [element=[x,y,x,y], ]direction=flip(d), dist="medium")
    system_button Back/Home/Enter → do(action="Back"|"Home"|"Enter")
    wait → do(action="Wait", time=t) (no time = 5 s)
    terminate(success[, text]) → finish() / finish(message="text")
    Not carried: element, action_desc.  NOT expressible: swipe, key, answer, system_button(Menu),
    terminate(failure).
"""
from __future__ import annotations

import re
from typing import Any, Callable

from gui_jax.core.dialect_formats import (ActionParseError, _Bad, dump_json, fmt_num,
                                          format_call, load_json_object, num_str, parse_call,
                                          read_int, read_num, read_point, read_str,
                                          split_thought, tag_body)
from gui_jax.core.types import (ACTION_TYPES, DIRECTIONS, STATUSES, SYSTEM_BUTTONS, Action,
                                ActionError)

__all__ = ["DIALECTS", "ActionParseError", "parse_response", "format_response", "dialect_view",
           "expressible", "scale_action_to_image", "scale_action_to_screen"]

DIALECTS = ("ui_s1", "uitars", "mobilerl", "ui_genie")
FLIP = {"up": "down", "down": "up", "left": "right", "right": "left"}
DEFAULT_WAIT = 5.0

_BASE = {"click": ("x", "y"), "long_press": ("x", "y", "time"), "swipe": ("x", "y", "x2", "y2"),
         "scroll": ("direction", "x", "y"), "type": ("text",), "key": ("text",),
         "answer": ("text",), "open": ("text",), "system_button": ("button",), "wait": ("time",),
         "terminate": ("status",)}
_ANNOT = ("element", "action_desc")
# dialect -> canonical type -> fields the dialect carries for it (types absent: not expressible)
# A point action may name its element by label (`"text"`) in the JSON dialects.
_LABEL = {"click": ("text",), "long_press": ("text",)}
CARRIED: dict[str, dict[str, tuple[str, ...]]] = {
    "ui_s1": {t: f + _ANNOT + _LABEL.get(t, ()) for t, f in _BASE.items() if t != "scroll"},
    "ui_genie": {t: f + _ANNOT + _LABEL.get(t, ()) for t, f in _BASE.items()},
    "uitars": {**{t: _BASE[t] for t in ("click", "long_press", "swipe", "scroll", "type",
                                       "answer", "open", "system_button", "wait")},
               "terminate": ("status", "text")},
    "mobilerl": {"click": ("x", "y"), "long_press": ("x", "y"), "scroll": ("direction", "x", "y"),
                 "type": ("text",), "open": ("text",), "system_button": ("button",),
                 "wait": ("time",), "terminate": ("status", "text")},
}
_FIELDS = ("x", "y", "x2", "y2", "direction", "text", "button", "time", "status", "element",
           "action_desc")


def _check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")


def dialect_view(action: Action, dialect: str) -> Action:
    """The action as `dialect` can carry it (uncarried optional fields cleared), or ValueError
    if the dialect cannot express it at all."""
    _check_dialect(dialect)
    carried = CARRIED[dialect].get(action.type)
    if carried is None:
        raise ValueError(f"action type {action.type!r} cannot be expressed in dialect {dialect!r}")
    if dialect in ("uitars", "mobilerl"):
        if action.type == "terminate" and action.status != "success":
            raise ValueError(f"terminate(status={action.status!r}) cannot be expressed in dialect "
                             f"{dialect!r} (only success)")
        if action.type in ("click", "long_press") and action.x is None:
            raise ValueError(f"{action.type} by element index or label only cannot be expressed in dialect "
                             f"{dialect!r} (needs x, y)")
    if dialect == "mobilerl" and action.type == "system_button" and action.button == "Menu":
        raise ValueError("system_button 'Menu' cannot be expressed in dialect 'mobilerl'")
    for a, b in (("x", "y"), ("x2", "y2")):
        if a in carried and (getattr(action, a) is None) != (getattr(action, b) is None):
            raise ValueError(f"action {action} has only one of {a}, {b}")
    kw = {f: getattr(action, f) for f in _FIELDS if f in carried}
    if dialect == "uitars" and kw.get("text") == "":
        kw["text"] = None if action.type == "terminate" else ""
    return Action(type=action.type, **kw)


def expressible(action: Action, dialect: str) -> bool:
    try:
        dialect_view(action, dialect)
        return True
    except ValueError:
        return False


# ------------------------------------------------------------------ JSON dialects
def _json_args(a: Action, dialect: str) -> dict:
    d: dict[str, Any] = {"action": a.type}
    if a.type == "scroll":  # ui_genie only
        d["action"] = "swipe"
    if a.x is not None:
        d["coordinate"] = [fmt_num(a.x), fmt_num(a.y)]
    if a.x2 is not None:
        d["coordinate2"] = [fmt_num(a.x2), fmt_num(a.y2)]
    if a.type == "scroll":
        d["direction"] = FLIP[a.direction]
        d["distance"] = "medium"
    for k in ("text", "button", "status"):
        if getattr(a, k) is not None:
            d[k] = getattr(a, k)
    if a.time is not None:
        d["time"] = fmt_num(a.time)
    if a.element is not None:
        d["som" if dialect == "ui_genie" else "element"] = int(a.element)
    if a.action_desc is not None:
        d["action_desc"] = a.action_desc
    return d


def _pick(value: str, options: tuple[str, ...], what: str) -> str:
    for o in options:
        if value.strip().lower() == o.lower():
            return o
    raise _Bad(f"{what} {value!r} not one of {options}")


def _from_json_args(d: dict, dialect: str) -> Action:
    if "action" not in d:
        raise _Bad("JSON has no 'action' key")
    name = read_str(d["action"], "'action'").strip().lower()
    if dialect == "ui_genie" and name == "swipe" and "coordinate2" not in d:
        atype = "scroll"
    elif name in CARRIED[dialect] and name != "scroll":
        atype = name
    else:
        raise _Bad(f"unknown action {name!r} for dialect {dialect!r}")
    carried = CARRIED[dialect][atype]
    kw: dict[str, Any] = {}
    if "coordinate" in d:
        kw["x"], kw["y"] = read_point(d["coordinate"], "'coordinate'")
    if "coordinate2" in d and "x2" in carried:
        kw["x2"], kw["y2"] = read_point(d["coordinate2"], "'coordinate2'")
    if atype == "scroll":
        kw["direction"] = FLIP[_pick(read_str(d.get("direction"), "'direction'"), DIRECTIONS,
                                     "direction")]
    for k in ("text", "action_desc"):
        if k in carried and d.get(k) is not None:
            kw[k] = read_str(d[k], repr(k))
    if "time" in carried and d.get("time") is not None:
        kw["time"] = read_num(d["time"], "'time'")
    if atype == "system_button":
        kw["button"] = _pick(read_str(d.get("button"), "'button'"), SYSTEM_BUTTONS, "button")
    if atype == "terminate":
        kw["status"] = _pick(read_str(d.get("status"), "'status'"), STATUSES, "status")
    for k in ("som", "element"):
        if d.get(k) is not None:
            kw["element"] = read_int(d[k], repr(k))
    kw = {k: v for k, v in kw.items() if k in carried}
    return Action(type=atype, **kw)


def _format_ui_s1(a: Action, thought: str) -> str:
    return f"<think>{thought}</think>\n<action>{dump_json(_json_args(a, 'ui_s1'))}</action>"


def _parse_ui_s1(text: str) -> tuple[str, Action]:
    thought, rest = split_thought(text, "<action>")
    body = tag_body(rest, "<action>", "</action>")
    return thought, _from_json_args(load_json_object(body, "<action> body"), "ui_s1")


def _format_ui_genie(a: Action, thought: str) -> str:
    call = dump_json({"name": "mobile_use", "arguments": _json_args(a, "ui_genie")})
    head = f"<think>{thought}</think>\n" if thought else ""
    return f"{head}<tool_call>{call}</tool_call>"


def _parse_ui_genie(text: str) -> tuple[str, Action]:
    thought, rest = split_thought(text, "<tool_call>")
    obj = load_json_object(tag_body(rest, "<tool_call>", "</tool_call>"), "<tool_call> body")
    args = obj.get("arguments")
    if isinstance(args, str):
        args = load_json_object(args, "'arguments' string")
    if not isinstance(args, dict):
        raise _Bad("<tool_call> JSON needs an 'arguments' object")
    return thought, _from_json_args(args, "ui_genie")


# ------------------------------------------------------------------ UI-TARS
_BOX_TOKENS = re.compile(r"<\|box_start\|>|<\|box_end\|>")
_BOX_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_ACTION_LINE = re.compile(r"^[ \t]*Action:[ \t]*", re.MULTILINE)
_TARS_BUTTONS = {"Back": "press_back", "Home": "press_home", "Enter": "press_enter",
                 "Menu": "press_menu"}


def _tars_point(v: Any, what: str) -> tuple[float, float]:
    if isinstance(v, str):
        s = _BOX_TOKENS.sub("", v)
        if re.sub(r"[\s(),\[\]]", "", _BOX_NUM.sub("", s)):
            raise _Bad(f"{what} is not a point: {v!r}"[:300])
        v = _BOX_NUM.findall(s)
    return read_point(v, what)


def _format_uitars(a: Action, thought: str) -> str:
    box = lambda x, y: f"({num_str(x)},{num_str(y)})"  # noqa: E731
    t = a.type
    if t in ("click", "long_press"):
        args = [("start_box", box(a.x, a.y))]
        if a.time is not None:
            args.append(("time", num_str(a.time)))
        call = format_call(t, args, "'")
    elif t == "swipe":
        call = format_call("scroll", [("start_box", box(a.x, a.y)),
                                      ("end_box", box(a.x2, a.y2))], "'")
    elif t == "scroll":
        args = [("start_box", box(a.x, a.y))] if a.x is not None else []
        call = format_call("scroll", args + [("direction", a.direction)], "'")
    elif t in ("type", "answer", "open"):
        call = format_call("open_app" if t == "open" else t, [("content", a.text)], "'")
    elif t == "system_button":
        call = f"{_TARS_BUTTONS[a.button]}()"
    elif t == "wait":
        call = format_call("wait", [("time", num_str(a.time))], "'")
    else:  # terminate(success)
        call = format_call("finished", [("content", a.text or "")], "'")
    return f"Thought: {thought}\nAction: {call}" if thought else f"Action: {call}"


def _parse_uitars(text: str) -> tuple[str, Action]:
    matches = list(_ACTION_LINE.finditer(text))
    if not matches:  # lenient: "Thought: … Action: call" on one line
        matches = list(re.finditer(r"Action:[ \t]*", text))
    if not matches:
        raise _Bad("no 'Action:' line")
    m = matches[-1]
    thought = text[:m.start()].strip()
    if thought.startswith("Thought:"):
        thought = thought[len("Thought:"):].strip()
    name, kw = parse_call(text[m.end():])
    name = name.lower()
    content = lambda k="content": read_str(kw.get(k, ""), repr(k))  # noqa: E731
    if name in ("click", "left_single", "tap"):
        return thought, Action("click", *_tars_point(kw.get("start_box"), "'start_box'"))
    if name == "long_press":
        time = kw.get("time")
        time = None if time in (None, "") else read_num(time, "'time'")
        return thought, Action("long_press", *_tars_point(kw.get("start_box"), "'start_box'"),
                               time=time)
    if name in ("scroll", "drag", "swipe"):
        if kw.get("end_box") is not None:
            x, y = _tars_point(kw.get("start_box"), "'start_box'")
            x2, y2 = _tars_point(kw["end_box"], "'end_box'")
            return thought, Action("swipe", x, y, x2, y2)
        direction = _pick(read_str(kw.get("direction"), "'direction'"), DIRECTIONS, "direction")
        x = y = None
        if kw.get("start_box") is not None:
            x, y = _tars_point(kw["start_box"], "'start_box'")
        return thought, Action("scroll", x, y, direction=direction)
    if name in ("type", "answer"):
        return thought, Action(name, text=content())
    if name == "open_app":
        return thought, Action("open", text=content("app_name" if "app_name" in kw else "content"))
    for button, fn in _TARS_BUTTONS.items():
        if name == fn:
            return thought, Action("system_button", button=button)
    if name == "wait":
        t = kw.get("time")
        return thought, Action("wait", time=DEFAULT_WAIT if t in (None, "") else read_num(t, "'time'"))
    if name == "finished":
        return thought, Action("terminate", status="success", text=content() or None)
    raise _Bad(f"unknown UI-TARS action {name!r}")


# ------------------------------------------------------------------ MobileRL (AndroidLab do/finish)
_MRL_BUTTONS = ("Back", "Home", "Enter")


def _format_mobilerl(a: Action, thought: str) -> str:
    pbox = lambda: [a.x, a.y, a.x, a.y]  # noqa: E731  degenerate box: centre == point exactly
    t = a.type
    if t in ("click", "long_press"):
        call = format_call("do", [("action", "Tap" if t == "click" else "Long Press"),
                                  ("element", pbox())], '"')
    elif t == "type":
        call = format_call("do", [("action", "Type"), ("text", a.text)], '"')
    elif t == "scroll":
        args = [("element", pbox())] if a.x is not None else []
        call = format_call("do", [("action", "Swipe")] + args
                           + [("direction", FLIP[a.direction]), ("dist", "medium")], '"')
    elif t == "open":
        call = format_call("do", [("action", "Launch"), ("app", a.text)], '"')
    elif t == "system_button":
        call = format_call("do", [("action", a.button)], '"')
    elif t == "wait":
        call = format_call("do", [("action", "Wait"), ("time", a.time)], '"')
    else:  # terminate(success)
        call = format_call("finish", [] if a.text is None else [("message", a.text)], '"')
    head = f"<think>{thought}</think>" if thought else ""
    return f"{head}<answer>{call}</answer>"


def _parse_mobilerl(text: str) -> tuple[str, Action]:
    thought, rest = split_thought(text, "<answer>")
    name, kw = parse_call(tag_body(rest, "<answer>", "</answer>"))
    if name == "finish":
        op = "finish"
    elif name == "do":
        op = re.sub(r"[\s_]", "", read_str(kw.get("action"), "'action'")).lower()
    else:
        raise _Bad(f"expected do(...) or finish(...), got {name}(...)")
    if op in ("tap", "longpress", "longpres"):
        x, y = read_point(kw.get("element"), "'element'")
        return thought, Action("click" if op == "tap" else "long_press", x, y)
    if op == "type":
        return thought, Action("type", text=read_str(kw.get("text"), "'text'"))
    if op == "swipe":
        direction = _pick(read_str(kw.get("direction"), "'direction'"), DIRECTIONS, "direction")
        x = y = None
        if kw.get("element") is not None:
            x, y = read_point(kw["element"], "'element'")
        return thought, Action("scroll", x, y, direction=FLIP[direction])
    if op == "launch":
        return thought, Action("open", text=read_str(kw.get("app"), "'app'"))
    if op in ("back", "home", "enter"):
        return thought, Action("system_button", button=op.capitalize())
    if op == "wait":
        t = kw.get("time")
        return thought, Action("wait", time=DEFAULT_WAIT if t is None else read_num(t, "'time'"))
    if op == "finish":
        msg = kw.get("message")
        return thought, Action("terminate", status="success",
                               text=None if msg is None else read_str(msg, "'message'"))
    raise _Bad(f"unknown MobileRL action {op!r}")


# ------------------------------------------------------------------ public API
_PARSERS: dict[str, Callable[[str], tuple[str, Action]]] = {
    "ui_s1": _parse_ui_s1, "uitars": _parse_uitars, "mobilerl": _parse_mobilerl,
    "ui_genie": _parse_ui_genie}
_FORMATTERS: dict[str, Callable[[Action, str], str]] = {
    "ui_s1": _format_ui_s1, "uitars": _format_uitars, "mobilerl": _format_mobilerl,
    "ui_genie": _format_ui_genie}


def parse_response(text: str, dialect: str) -> tuple[str, Action]:
    """Model response → (thought, Action); ActionParseError (only) if it does not parse."""
    _check_dialect(dialect)
    if not isinstance(text, str):
        raise ActionParseError(f"{dialect}: response must be a str, got {type(text).__name__}", text)
    try:
        return _PARSERS[dialect](text)
    except _Bad as e:
        raise ActionParseError(f"{dialect}: {e}", text) from None
    except ActionError as e:
        raise ActionParseError(f"{dialect}: invalid action: {e}", text) from None
    except Exception as e:  # noqa: BLE001  the contract: nothing but ActionParseError escapes
        raise ActionParseError(f"{dialect}: {type(e).__name__}: {e}"[:500], text) from None


def format_response(action: Action, dialect: str, thought: str = "") -> str:
    """(thought, Action) → response text in `dialect`; ValueError if the dialect cannot express it."""
    view = dialect_view(action, dialect)
    thought = (thought or "").strip()
    if dialect != "uitars" and "</think>" in thought:
        raise ValueError(f"thought for dialect {dialect!r} must not contain '</think>'")
    return _FORMATTERS[dialect](view, thought)


def _scale(action: Action, src: tuple[int, int], dst: tuple[int, int]) -> Action:
    if len(src) != 2 or len(dst) != 2 or min(*src, *dst) <= 0:
        raise ValueError(f"sizes must be positive (width, height) pairs, got {src} and {dst}")
    return action.scaled(dst[0] / src[0], dst[1] / src[1])


def scale_action_to_image(action: Action, screen_size: tuple[int, int],
                          image_size: tuple[int, int]) -> Action:
    """Screen pixels (W, H) → pixels of the image the model sees (W', H')."""
    return _scale(action, screen_size, image_size)


def scale_action_to_screen(action: Action, image_size: tuple[int, int],
                           screen_size: tuple[int, int]) -> Action:
    """Model-image pixels (W', H') → screen pixels (W, H)."""
    return _scale(action, image_size, screen_size)


assert set(ACTION_TYPES) == set(_BASE)
