"""UI XML parsing and the docs/algorithms.md §10 simplifier (MobileRL App. D) on fixtures and on PhoneSim dumps."""

import pytest
from lxml import etree

from gui_jax.core.types import Action
from gui_jax.envs.sim import PhoneSim, make_task
from gui_jax.envs.xml import UIXmlError, parse_bounds, parse_ui_xml, simplify_xml


def node(bounds, cls="android.widget.FrameLayout", text="", desc="", rid="", children="", **flags):
    names = (
        "checkable",
        "checked",
        "clickable",
        "enabled",
        "focusable",
        "focused",
        "scrollable",
        "long-clickable",
        "password",
        "selected",
    )
    attrs = " ".join(f'{n}="{"true" if flags.get(n.replace("-", "_"), n == "enabled") else "false"}"' for n in names)
    head = (
        f'<node index="0" text="{text}" resource-id="{rid}" class="{cls}" package="com.example" '
        f'content-desc="{desc}" {attrs} bounds="{bounds}"'
    )
    return f"{head}>{children}</node>" if children else f"{head} />"


FIXTURE = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
    + node(
        "[0,0][1080,2400]",
        children="".join(
            [
                # the MobileRL App. D example node
                node(
                    "[221,1095][858,1222]",
                    cls="android.widget.TextView",
                    text="Audio Recorder",
                    rid="com.dimowner.audiorecorder:id/txt_title",
                ),
                # redundant layout node: dropped, but its clickable child is kept
                node(
                    "[0,200][1080,400]",
                    cls="android.widget.LinearLayout",
                    children=node(
                        "[40,220][1040,380]", cls="android.widget.Button", text="Save", clickable=True, focusable=True
                    ),
                ),
                # switch with text and a different content-desc, checked
                node(
                    "[860,500][1040,600]",
                    cls="android.widget.Switch",
                    text="ON",
                    desc="Wi-Fi",
                    clickable=True,
                    checkable=True,
                    checked=True,
                    focusable=True,
                ),
                # off-screen node (below the screen) and its child: both dropped
                node(
                    "[0,2300][1080,2600]",
                    cls="android.widget.LinearLayout",
                    text="Below",
                    children=node("[0,2350][500,2450]", cls="android.widget.TextView", text="Hidden child"),
                ),
                # not contained in its parent: dropped
                node(
                    "[0,700][500,800]",
                    cls="android.widget.LinearLayout",
                    clickable=True,
                    children=node("[400,700][600,800]", cls="android.widget.TextView", text="Overflowing"),
                ),
                # scrollable list with a long-clickable item and a content-desc only image
                node(
                    "[0,900][1080,1090]",
                    cls="androidx.recyclerview.widget.RecyclerView",
                    scrollable=True,
                    children=node(
                        "[0,900][1080,1000]",
                        cls="android.widget.ImageView",
                        desc="Photo",
                        long_clickable=True,
                        clickable=True,
                    ),
                ),
                node(
                    "[0,1300][1080,1400]",
                    cls="android.widget.EditText",
                    text="",
                    password=True,
                    focusable=True,
                    focused=True,
                    clickable=True,
                    selected=True,
                ),
            ]
        ),
    )
    + "</hierarchy>"
)

EXPECTED = "\n".join(
    [
        "TextView;;;Audio Recorder;[221,1095][858,1222]",
        "Button;click;focusable;Save;[40,220][1040,380]",
        "Switch;click;checkable,checked,focusable;ON | Wi-Fi;[860,500][1040,600]",
        "LinearLayout;click;;;[0,700][500,800]",
        "RecyclerView;scroll;;;[0,900][1080,1090]",
        "ImageView;click,long-click;;Photo;[0,900][1080,1000]",
        "EditText;click;focusable,password,selected;;[0,1300][1080,1400]",
    ]
)


def test_simplifier_matches_spec_on_fixture():
    assert simplify_xml(FIXTURE, (1080, 2400)) == EXPECTED


def test_simplifier_keep_offscreen():
    out = simplify_xml(FIXTURE, (1080, 2400), keep_offscreen=True).splitlines()
    assert "LinearLayout;;;Below;[0,2300][1080,2600]" in out
    assert "TextView;;;Hidden child;[0,2350][500,2450]" in out
    assert "TextView;;;Overflowing;[400,700][600,800]" in out


def test_parse_ui_xml_fields():
    els = parse_ui_xml(FIXTURE)
    assert len(els) == 12 and [e.index for e in els] == list(range(12))
    sw = next(e for e in els if e.cls.endswith("Switch"))
    assert (sw.text, sw.content_desc, sw.checked, sw.checkable, sw.clickable, sw.bounds) == (
        "ON",
        "Wi-Fi",
        True,
        True,
        True,
        (860, 500, 1040, 600),
    )
    assert els[1].resource_id == "com.dimowner.audiorecorder:id/txt_title"


def test_errors_are_clear():
    with pytest.raises(UIXmlError, match="does not parse"):
        simplify_xml("<hierarchy><node")
    with pytest.raises(UIXmlError, match="bad bounds"):
        parse_bounds("[1,2][3]")


def test_phonesim_xml_parses_and_round_trips():
    sim = PhoneSim(render=False)
    sim.reset(make_task("contacts.edit_phone", 3))
    for a in (Action("open", text="Contacts"), Action("scroll", direction="down")):
        obs, _, _ = sim.step(a)
        root = etree.fromstring(obs.ui_xml.encode())
        assert root.tag == "hierarchy"
        assert parse_ui_xml(obs.ui_xml) == obs.ui_elements
        lines = simplify_xml(obs.ui_xml).splitlines()
        clickable = [e for e in obs.ui_elements if e.clickable]
        for e in clickable:  # every visible clickable widget appears with its bounds
            assert any(line.endswith("[{},{}][{},{}]".format(*e.bounds)) and ";click" in line for line in lines)
        names = [c.name for c in sim.dev.apps["contacts"].items]
        assert any(any(n in line for n in names) for line in lines)
