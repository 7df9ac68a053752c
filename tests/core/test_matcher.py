"""docs/algorithms.md §1 match rules at their boundaries."""
import pytest

from gui_jax.core.matcher import content_direction, match_action
from gui_jax.core.types import Action

IMG = (1000, 2000)  # width, height


def click(x, y, t="click"):
    return Action(t, x=x, y=y) if t == "click" else Action(t, x=x, y=y, time=1.0)


@pytest.mark.parametrize("t", ["click", "long_press"])
def test_bbox_enlarged_1_2_edge_inclusive(t):
    # bbox 100 wide/high centred at (500, 1000): enlarged ×1.2 → half-size 60 → [440, 560] × [940, 1060]
    bbox = (450, 950, 550, 1050)
    expert = click(500, 1000, t)
    assert match_action(click(560, 1000, t), expert, image_size=IMG, expert_bbox=bbox) == (True, True)
    assert match_action(click(440, 940, t), expert, image_size=IMG, expert_bbox=bbox) == (True, True)
    # Just outside the enlarged box and farther than 0.04 from the point (x: 0.0605 > 0.04).
    assert match_action(click(560.5, 1000, t), expert, image_size=IMG, expert_bbox=(480, 980, 520, 1020))[1] is False
    assert match_action(click(561, 1000, t), expert, image_size=IMG, expert_bbox=bbox,
                        dist_threshold=0.0) == (True, False)
    # Scale is a parameter: ×1.0 keeps the original box only.
    assert match_action(click(555, 1000, t), expert, image_size=IMG, expert_bbox=bbox,
                        bbox_scale=1.0, dist_threshold=0.0) == (True, False)


def test_distance_threshold_edge():
    expert = click(500, 1000)
    # 0.04 of width 1000 = 40 px horizontally: on the edge → match; beyond → no match.
    assert match_action(click(540, 1000), expert, image_size=IMG) == (True, True)
    assert match_action(click(540.5, 1000), expert, image_size=IMG) == (True, False)
    # Normalisation is per axis: 0.04 of height 2000 = 80 px vertically.
    assert match_action(click(500, 1080), expert, image_size=IMG) == (True, True)
    assert match_action(click(500, 1081), expert, image_size=IMG) == (True, False)
    # Diagonal: (0.03, 0.03) → 0.0424 > 0.04.
    assert match_action(click(530, 1060), expert, image_size=IMG) == (True, False)
    assert match_action(click(528, 1056), expert, image_size=IMG) == (True, True)


def test_type_must_be_equal():
    assert match_action(click(500, 1000), Action("long_press", x=500, y=1000), image_size=IMG) == (False, False)
    assert match_action(Action("type", text="a"), Action("answer", text="a"), image_size=IMG) == (False, False)
    assert match_action(Action("answer", text="a"), Action("key", text="a"), image_size=IMG) == (False, False)


@pytest.mark.parametrize("t", ["type", "answer", "open"])
def test_text_substring_both_ways(t):
    e = Action(t, text="Buy Milk")
    assert match_action(Action(t, text="  buy milk "), e, image_size=IMG) == (True, True)
    assert match_action(Action(t, text="milk"), e, image_size=IMG) == (True, True)  # pred in expert
    assert match_action(Action(t, text="please BUY MILK now"), e, image_size=IMG) == (True, True)  # expert in pred
    assert match_action(Action(t, text="buy bread"), e, image_size=IMG) == (True, False)
    assert match_action(Action(t, text="  "), e, image_size=IMG) == (True, False)


@pytest.mark.parametrize("t", ["type", "answer", "open"])
def test_exact_text_rule_rejects_truncations_and_padding(t):
    """text_rule='exact' (rl.text_match): equal after lowercase + strip; the pieces the substring rule accepts
    (the truncated answers a policy learned to give under it) earn no match."""
    e = Action(t, text="The meeting moved to Friday")
    assert match_action(Action(t, text=" the MEETING moved to friday "), e, image_size=IMG,
                        text_rule="exact") == (True, True)
    for piece in ("The", "The meeting", "the meeting moved to friday, ok"):
        assert match_action(Action(t, text=piece), e, image_size=IMG) == (True, True)
        assert match_action(Action(t, text=piece), e, image_size=IMG, text_rule="exact") == (True, False)
    with pytest.raises(ValueError, match="unknown text-match rule 'fuzzy'"):
        match_action(Action(t, text="x"), e, image_size=IMG, text_rule="fuzzy")


def test_scroll_swipe_direction_conversion():
    # Finger swipes up (y decreases) → content scrolls down.
    up_finger = Action("swipe", x=500, y=1500, x2=500, y2=500)
    assert content_direction(up_finger) == "down"
    assert match_action(up_finger, Action("scroll", direction="down"), image_size=IMG) == (True, True)
    assert match_action(Action("scroll", direction="down"), up_finger, image_size=IMG) == (True, True)
    assert match_action(up_finger, Action("scroll", direction="up"), image_size=IMG) == (True, False)
    # Finger right → content left; horizontal when |dx| > |dy|.
    right = Action("swipe", x=100, y=1000, x2=600, y2=1100)
    assert content_direction(right) == "left"
    assert match_action(right, Action("scroll", direction="left"), image_size=IMG) == (True, True)
    # Tie |dx| == |dy| → vertical.
    tie = Action("swipe", x=100, y=100, x2=300, y2=300)
    assert content_direction(tie) == "up"
    # Two swipes: compare content directions.
    assert match_action(Action("swipe", x=0, y=900, x2=0, y2=100), up_finger, image_size=IMG) == (True, True)
    # Zero-length swipe has no direction.
    assert match_action(Action("swipe", x=1, y=1, x2=1, y2=1), up_finger, image_size=IMG) == (True, False)


def test_system_button_case_insensitive_and_type_only_kinds():
    assert match_action(Action("system_button", button="Back"), Action("system_button", button="Back"),
                        image_size=IMG) == (True, True)
    assert match_action(Action("system_button", button="Home"), Action("system_button", button="Back"),
                        image_size=IMG) == (True, False)
    assert match_action(Action("key", text="ENTER"), Action("key", text="enter"), image_size=IMG) == (True, True)
    assert match_action(Action("wait", time=1), Action("wait", time=5), image_size=IMG) == (True, True)
    assert match_action(Action("terminate", status="failure"), Action("terminate", status="success"),
                        image_size=IMG) == (True, True)


def test_element_index_clicks():
    elements = [(0, 0, 100, 100), (450, 950, 550, 1050)]
    expert = Action("click", x=500, y=1000, element=1)
    assert match_action(Action("click", element=1), expert, image_size=IMG) == (True, True)
    assert match_action(Action("click", element=0), expert, image_size=IMG, elements=elements,
                        expert_bbox=elements[1]) == (True, False)
    assert match_action(Action("click", element=0), Action("click", x=50, y=50), image_size=IMG,
                        elements=elements) == (True, True)


def test_with_the_element_tree_a_click_must_reach_the_experts_element():
    """A row (clickable, 0-100 x 200-260) holding its label and a switch (clickable): the switch lies in the
    row's box, so the box rule accepts it, yet a tap there toggles instead of opening the row."""
    from gui_jax.core.matcher import hit_element
    from gui_jax.core.types import UIElement
    ui = [UIElement(0, "FrameLayout", (0, 0, 100, 400)),
          UIElement(1, "LinearLayout", (0, 200, 100, 260), clickable=True),
          UIElement(2, "TextView", (5, 210, 60, 250), text="07:45"),
          UIElement(3, "Switch", (70, 210, 95, 250), text="ON", clickable=True),
          UIElement(4, "Button", (0, 300, 100, 340), text="Add", clickable=True, enabled=False)]
    row = (0.0, 200.0, 100.0, 260.0)
    expert = Action("click", x=50.0, y=230.0)
    kw = dict(image_size=(100, 400), expert_bbox=row, elements=[e.bounds for e in ui])
    switch, label, edge = Action("click", x=82.0, y=230.0), Action("click", element=2), Action("click", x=50.0, y=262.0)
    assert match_action(switch, expert, **kw) == (True, True)               # the box rule alone
    assert match_action(switch, expert, **kw, ui=ui) == (True, False)       # the tap reaches the switch
    assert match_action(label, expert, **kw, ui=ui) == (True, True)         # the row's label: the row receives it
    assert match_action(edge, expert, **kw) == (True, True)                 # in the 1.2-scaled box
    assert match_action(edge, expert, **kw, ui=ui) == (True, False)         # reaches nothing
    # an expert click that reaches no enabled clickable element: the box rules decide
    assert match_action(Action("click", x=50.0, y=318.0), Action("click", x=52.0, y=320.0), image_size=(100, 400),
                        expert_bbox=(0.0, 300.0, 100.0, 340.0), ui=ui) == (True, True)
    assert hit_element(ui, 82.0, 230.0).index == 3 and hit_element(ui, 20.0, 230.0).index == 1
    assert hit_element(ui, 50.0, 320.0) is None and hit_element(ui, 50.0, 100.0) is None
