"""Point actions by label: resolution rules, the expert's identifying prefix, dialect round trip, PhoneSim
execution and step matching all agree."""
import pytest

from gui_jax.core.dialects import ActionParseError, format_response, parse_response
from gui_jax.core.labels import identifying_label, label_to_element, resolve_label
from gui_jax.core.types import Action, ActionError, UIElement


def el(i, text="", desc="", clickable=False, checkable=False):
    return UIElement(index=i, cls="android.widget.TextView", bounds=(0, 100 * i, 1080, 100 * i + 90), text=text,
                     content_desc=desc, clickable=clickable, checkable=checkable)


ALARMS = [el(0, "Clock"), el(3, "08:30 Call mom"), el(4, "ON", "08:30 Call mom", checkable=True, clickable=True),
          el(6, "18:15 Gym"), el(7, "ON", "18:15 Gym", checkable=True, clickable=True), el(9, "Add alarm", clickable=True)]
THREADS = [el(2, "Tara Young"), el(3, "Running late"), el(5, "Tarik Ali"), el(6, "See you"),
           el(8, "Quinn Young"), el(9, "Lunch?")]


def test_exact_beats_prefix_beats_contains():
    els = [el(1, "Young Tara"), el(2, "Tara Young band"), el(3, "Tara Young")]
    assert resolve_label("tara young", els) == 3          # exact, case and spacing ignored
    assert resolve_label("  Tara   Young ", els) == 3
    assert resolve_label("Tara", els) == 2                # prefix (word boundary) before contains
    assert resolve_label("young", els) == 1               # prefix of element 1
    assert resolve_label("band", els) == 2                # contains at a word boundary
    assert resolve_label("Tar", els) is None              # not a whole word
    assert resolve_label("", els) is None


def test_interactive_element_wins_within_a_level_then_document_order():
    assert resolve_label("08:30", ALARMS) == 4            # label line 3 and switch 4 both start with it
    assert resolve_label("08:30 call mom", ALARMS) == 4   # exact on 3's text and 4's description
    assert resolve_label("ON", ALARMS) == 4               # two switches: the first
    assert resolve_label("18:15 Gym ON", ALARMS) == 7     # description + text joined


def test_identifying_label_is_the_shortest_prefix_that_resolves_back():
    assert identifying_label(THREADS, 2) == "Tara"
    assert identifying_label(THREADS, 8) == "Quinn"
    assert identifying_label(ALARMS, 4) == "08:30"        # description first: not "ON"
    assert identifying_label(ALARMS, 7) == "18:15"
    assert identifying_label(ALARMS, 3) is None           # its words always resolve to the switch
    assert identifying_label(THREADS, 42) is None
    twins = [el(1, "Tara Young"), el(2, "Tara Young")]
    assert identifying_label(twins, 2) is None            # indistinguishable by label
    for els in (ALARMS, THREADS):
        for e in els:
            lab = identifying_label(els, e.index)
            assert lab is None or resolve_label(lab, els) == e.index


def test_label_to_element_and_action_validation():
    assert label_to_element(Action("click", text=" Tara"), THREADS) == Action("click", element=2)
    unknown = Action("click", text="Nobody")
    assert label_to_element(unknown, THREADS) == unknown
    typed = Action("type", text="Tara")
    assert label_to_element(typed, THREADS) == typed
    with pytest.raises(ActionError, match="needs field 'x'"):
        Action("click")


def test_ui_s1_round_trip_and_coordinate_dialects_refuse():
    a = Action("click", text=" Tara")
    text = format_response(a, "ui_s1", "")
    assert text == '<think></think>\n<action>{"action": "click", "text": " Tara"}</action>'
    assert parse_response(text, "ui_s1") == ("", a)
    with pytest.raises(ValueError, match="by element index or label only"):
        format_response(a, "uitars", "")
    with pytest.raises(ActionParseError):
        parse_response('<action>{"action": "click"}</action>', "ui_s1")
