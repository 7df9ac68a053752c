"""Dialects: round trips (hypothesis), not-expressible table, paper-format examples, fuzzing, scaling."""
import math
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_jax.core import (DIALECTS, Action, ActionParseError, format_response, parse_response,
                          scale_action_to_image, scale_action_to_screen)
from gui_jax.core.dialects import CARRIED, dialect_view, expressible
from gui_jax.core.types import ACTION_TYPES, DIRECTIONS, STATUSES, SYSTEM_BUTTONS

coord = st.one_of(st.integers(-50, 5000), st.floats(-1e7, 1e7, allow_nan=False))
texts = st.text(max_size=30)
thoughts = st.text(max_size=40).filter(lambda t: "</think>" not in t)
times = st.one_of(st.integers(0, 60), st.floats(0, 100, allow_nan=False, allow_infinity=False))


@st.composite
def actions(draw, atype=None):
    t = atype or draw(st.sampled_from(ACTION_TYPES))
    kw = {}
    if t in ("click", "long_press", "swipe") or (t == "scroll" and draw(st.booleans())):
        kw["x"], kw["y"] = draw(coord), draw(coord)
    if t == "swipe":
        kw["x2"], kw["y2"] = draw(coord), draw(coord)
    if t == "long_press":
        kw["time"] = draw(st.none() | times)
    if t == "wait":
        kw["time"] = draw(times)
    if t == "scroll":
        kw["direction"] = draw(st.sampled_from(DIRECTIONS))
    if t in ("type", "key", "answer", "open"):
        kw["text"] = draw(texts)
    if t == "system_button":
        kw["button"] = draw(st.sampled_from(SYSTEM_BUTTONS))
    if t == "terminate":
        kw["status"] = draw(st.sampled_from(STATUSES))
        kw["text"] = draw(st.none() | texts.filter(bool))
    kw["element"] = draw(st.none() | st.integers(0, 999))
    kw["action_desc"] = draw(st.none() | texts)
    if t in ("click", "long_press") and kw["element"] is not None and draw(st.booleans()):
        kw["x"] = kw["y"] = None  # element-only target
    return Action(type=t, **kw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=actions(), thought=thoughts, dialect=st.sampled_from(DIALECTS))
def test_round_trip_every_type_every_dialect(a, thought, dialect):
    if not expressible(a, dialect):
        with pytest.raises(ValueError):
            format_response(a, dialect, thought)
        return
    view = dialect_view(a, dialect)
    text = format_response(a, dialect, thought)
    assert parse_response(text, dialect) == (thought.strip(), view)
    # the view is a fixed point: an action with only carried fields round-trips identically
    assert parse_response(format_response(view, dialect, thought), dialect) == (thought.strip(), view)
    # uncarried fields are the only thing the view drops
    for f, v in view.to_dict().items():
        assert getattr(a, f) == v or (dialect == "uitars" and f == "text")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("atype", ACTION_TYPES)
def test_round_trip_identical_with_carried_fields(dialect, atype):
    """For each expressible type, actions built from the dialect's carried fields come back equal."""
    if atype not in CARRIED[dialect]:
        pytest.raises(ValueError, format_response, next(iter(_samples(atype))), dialect)
        return
    for a in _samples(atype):
        if expressible(a, dialect):
            view = dialect_view(a, dialect)
            assert view == Action(type=atype, **{f: getattr(a, f) for f in CARRIED[dialect][atype]
                                                 if getattr(a, f) is not None})
            assert parse_response(format_response(view, dialect, "t"), dialect) == ("t", view)


def _samples(atype):
    rnd = random.Random(atype)
    for _ in range(20):
        yield _manual(atype, rnd)


def _manual(t, rnd):
    kw = {"x": rnd.randint(0, 3000), "y": rnd.randint(0, 3000), "x2": rnd.randint(0, 9),
          "y2": rnd.randint(0, 9), "direction": rnd.choice(DIRECTIONS), "text": "q'\"\\\n<é",
          "button": rnd.choice(("Back", "Home", "Enter")), "time": rnd.choice((1, 2.5)),
          "status": "success", "element": rnd.randint(0, 9), "action_desc": "d"}
    from gui_jax.core.dialects import _BASE
    keep = set(_BASE[t]) | {"element", "action_desc"}
    return Action(type=t, **{k: v for k, v in kw.items() if k in keep})


NOT_EXPRESSIBLE = [
    ("ui_s1", Action("scroll", direction="down")),
    ("uitars", Action("key", text="HOME")),
    ("uitars", Action("terminate", status="failure")),
    ("uitars", Action("click", element=3)),
    ("uitars", Action("long_press", element=3)),
    ("mobilerl", Action("swipe", 1, 2, 3, 4)),
    ("mobilerl", Action("key", text="HOME")),
    ("mobilerl", Action("answer", text="42")),
    ("mobilerl", Action("system_button", button="Menu")),
    ("mobilerl", Action("terminate", status="failure")),
    ("mobilerl", Action("click", element=3)),
]


@pytest.mark.parametrize("dialect,action", NOT_EXPRESSIBLE)
def test_not_expressible_raises_at_format(dialect, action):
    with pytest.raises(ValueError) as e:
        format_response(action, dialect, "x")
    assert dialect in str(e.value) and action.type in str(e.value)
    assert not isinstance(e.value, ActionParseError)


def test_expressible_table_matches_carried():
    for d in DIALECTS:
        missing = {t for t in ACTION_TYPES if t not in CARRIED[d]}
        listed = {a.type for dd, a in NOT_EXPRESSIBLE if dd == d and a.type in missing}
        assert missing == listed, d
    assert set(CARRIED["ui_genie"]) == set(ACTION_TYPES)


@pytest.mark.parametrize("dialect,text,expected", [
    ("ui_s1", '<think>go</think>\n<action>{"action": "click", "coordinate": [10, 20]}</action>',
     ("go", Action("click", 10, 20))),
    ("ui_s1", '<action>{"action":"long_press","coordinate":[1.5,2],"time":2}</action>',
     ("", Action("long_press", 1.5, 2, time=2))),
    ("ui_s1", '<think></think><action>{"action": "system_button", "button": "back"}</action>',
     ("", Action("system_button", button="Back"))),
    ("uitars", "Thought: tap it\nAction: click(start_box='<|box_start|>(100,200)<|box_end|>')",
     ("tap it", Action("click", 100, 200))),
    ("uitars", "Action: click(start_box='(10,20,30,40)')", ("", Action("click", 20, 30))),
    ("uitars", "Thought: hi Action: click(start_box='(1,2)')", ("hi", Action("click", 1, 2))),
    ("uitars", "Thought: a\nb\nAction: type(content='hi\\n')", ("a\nb", Action("type", text="hi\n"))),
    ("uitars", "Action: scroll(start_box='(1,2)', end_box='(3,4)')", ("", Action("swipe", 1, 2, 3, 4))),
    ("uitars", "Action: scroll(direction='down')", ("", Action("scroll", direction="down"))),
    ("uitars", "Action: open_app(app_name='Clock')", ("", Action("open", text="Clock"))),
    ("uitars", "Action: wait()", ("", Action("wait", time=5.0))),
    ("uitars", "Action: finished(content='')", ("", Action("terminate", status="success"))),
    ("uitars", "Action: press_home()", ("", Action("system_button", button="Home"))),
    ("mobilerl", '<answer>do(action="Tap", element=[0,0,10,20])</answer>', ("", Action("click", 5, 10))),
    ("mobilerl", '<think>x</think><answer>do(action="Long_Pres", element=[2,2,4,4])</answer>',
     ("x", Action("long_press", 3, 3))),
    ("mobilerl", '<answer>do(action="Swipe", element=[0,0,10,10], direction="up", dist="long")</answer>',
     ("", Action("scroll", 5, 5, direction="down"))),
    ("mobilerl", '<answer>do(action="Swipe", direction="left", dist="short")</answer>',
     ("", Action("scroll", direction="right"))),
    ("mobilerl", "<answer>finish(message='It is 5pm')</answer>",
     ("", Action("terminate", status="success", text="It is 5pm"))),
    ("mobilerl", '<answer>do(action="Wait")</answer>', ("", Action("wait", time=5.0))),
    ("ui_genie", 'plan\n<tool_call>{"name":"mobile_use","arguments":{"action":"swipe","coordinate":[1,2],'
                 '"direction":"up","distance":"short","action_desc":"scroll"}}</tool_call>',
     ("plan", Action("scroll", 1, 2, direction="down", action_desc="scroll"))),
    ("ui_genie", '<tool_call>{"name":"mobile_use","arguments":{"action":"click","som":7}}</tool_call>',
     ("", Action("click", element=7))),
    ("ui_genie", '<tool_call>{"name":"mobile_use","arguments":"{\\"action\\":\\"wait\\",\\"time\\":1}"}'
                 '</tool_call>', ("", Action("wait", time=1))),
])
def test_paper_formats_parse(dialect, text, expected):
    assert parse_response(text, dialect) == expected


@pytest.mark.parametrize("dialect,text,fragment", [
    ("ui_s1", "<think>x</think><action>{\"action\": \"click\"}</action>", "needs field 'x'"),
    ("ui_s1", "<think>x", "unclosed <think>"),
    ("ui_s1", '<action>{"action": "click", "coordinate": [1, NaN]}</action>', "not finite"),
    ("ui_s1", '<action>{"action": "click", "coordinate": [true, 2]}</action>', "must be a number"),
    ("uitars", "Thought: x", "no 'Action:' line"),
    ("uitars", "Action: fly()", "unknown UI-TARS action 'fly'"),
    ("mobilerl", '<answer>do(action="Tap", element=[1e999,0,0,0])</answer>', "not finite"),
    ("ui_genie", "<tool_call>[1]</tool_call>", "must be a JSON object"),
])
def test_parse_errors_are_clear(dialect, text, fragment):
    with pytest.raises(ActionParseError) as e:
        parse_response(text, dialect)
    assert fragment in str(e.value) and e.value.text == text


def test_unknown_dialect_is_value_error():
    with pytest.raises(ValueError, match="ui_s1, uitars, mobilerl, ui_genie") as e:
        parse_response("x", "nope")
    assert not isinstance(e.value, ActionParseError)
    with pytest.raises(ValueError, match="known"):
        format_response(Action("click", 1, 2), "nope")


def test_thought_with_closing_tag_rejected():
    with pytest.raises(ValueError, match="</think>"):
        format_response(Action("click", 1, 2), "ui_s1", "a</think>b")


# ------------------------------------------------------------------ fuzzing
_NUM_SUBS = ["1e999", "-1e999", "NaN", "Infinity", "-5", "99999999999999999999999999", "true", "null",
             "[]", "{}", '"7"', "1.5", "-0", "0x10", "1" * 5000, "[[[[[[[[1]]]]]]]]"]
_JSON_SUBS = ['"coordinate": "x"', '"coordinate": [1]', '"action": 5', '"time": "abc"',
              '"element": 1.5', '"status": "maybe"', '"button": null', '"arguments": []']


def _valid_pool(dialect):
    rnd = random.Random(0)
    pool = []
    for t in ACTION_TYPES:
        for _ in range(3):
            a = _manual(t, rnd)
            if expressible(a, dialect):
                pool.append(format_response(a, dialect, rnd.choice(["", "think 'a' \"b\"\n</x>"])))
    return pool


def _mutate(s, rnd):
    op = rnd.randrange(9)
    n = len(s)
    i = rnd.randrange(n + 1)
    if op == 0 and n:
        return s[:i] + s[i + 1:]
    if op == 1:
        return s[:i] + rnd.choice("<>/\\'\"()[]{},=:\n0-.e" + chr(rnd.randrange(0x10FFFF))) + s[i:]
    if op == 2 and n > 1:
        j = rnd.randrange(n)
        lst = list(s)
        lst[i % n], lst[j] = lst[j], lst[i % n]
        return "".join(lst)
    if op == 3:
        return s[:i]
    if op == 4:
        tag = rnd.choice(["<think>", "</think>", "<action>", "</action>", "<answer>", "</answer>",
                          "<tool_call>", "</tool_call>", "Action: ", "Thought: ", "<|box_start|>"])
        return s[:i] + tag + s[i:]
    if op == 5:
        return s + s
    if op == 6:
        return re.sub(r"-?\d+(\.\d+)?", lambda m: rnd.choice(_NUM_SUBS), s, count=rnd.randint(1, 3))
    if op == 7:
        return re.sub(r'"\w+": ?("[^"]*"|\[[^\]]*\]|\d+)', lambda m: rnd.choice(_JSON_SUBS), s, count=1)
    return s.replace("'", '"') if rnd.random() < 0.5 else s.replace('"', "'")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fuzz_only_action_parse_error(dialect):
    rnd = random.Random(1234 + DIALECTS.index(dialect))
    pool = _valid_pool(dialect)
    for s in pool:  # every valid response parses
        assert isinstance(parse_response(s, dialect)[1], Action)
    parsed = failed = 0
    for k in range(10_000):
        kind = k % 4
        if kind == 0:
            s = "".join(chr(rnd.randrange(0x20, 0x3000)) for _ in range(rnd.randrange(60)))
        elif kind == 1:
            s = bytes(rnd.randrange(256) for _ in range(rnd.randrange(80))).decode("latin-1")
        else:
            s = rnd.choice(pool)
            for _ in range(rnd.randint(1, 3 if kind == 2 else 1)):
                s = _mutate(s, rnd)
        try:
            thought, action = parse_response(s, dialect)
        except ActionParseError as e:
            assert e.text == s
            failed += 1
            continue
        assert isinstance(thought, str) and isinstance(action, Action)
        for f in ("x", "y", "x2", "y2", "time"):
            v = getattr(action, f)
            assert v is None or math.isfinite(v)
        parsed += 1
    assert parsed > 500 and failed > 5000, (parsed, failed)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_non_string_and_deep_json(dialect):
    for bad in (None, 5, b"<action>", "[" * 100_000, '<action>' + "[" * 100_000 + '</action>',
                '<tool_call>' + '{"a":' * 50_000 + '</tool_call>', "\ud800", "Action: " + "(" * 5000):
        with pytest.raises(ActionParseError):
            parse_response(bad, dialect)


# ------------------------------------------------------------------ scaling
@settings(max_examples=100, deadline=None)
@given(a=actions(), screen=st.tuples(st.integers(100, 4000), st.integers(100, 4000)),
       image=st.tuples(st.integers(28, 2000), st.integers(28, 2000)))
def test_scaling_round_trip(a, screen, image):
    back = scale_action_to_screen(scale_action_to_image(a, screen, image), image, screen)
    for f in ("x", "y", "x2", "y2"):
        v, w = getattr(a, f), getattr(back, f)
        assert (v is None and w is None) or math.isclose(v, w, rel_tol=1e-9, abs_tol=1e-6)
    assert back.replace(x=a.x, y=a.y, x2=a.x2, y2=a.y2) == a


def test_scaling_exact_values():
    a = Action("swipe", 100, 200, 1080, 2400)
    img = scale_action_to_image(a, (1080, 2400), (540, 1200))
    assert (img.x, img.y, img.x2, img.y2) == (50, 100, 540, 1200)
    assert scale_action_to_screen(img, (540, 1200), (1080, 2400)) == a
    assert scale_action_to_image(Action("type", text="x"), (10, 10), (5, 5)) == Action("type", text="x")
    with pytest.raises(ValueError, match="positive"):
        scale_action_to_image(a, (0, 10), (5, 5))
