"""Prompt observations: `xml` (MobileRL's simplified UI XML, off-screen elements dropped), `both`
(screenshot + UI text) and Set-of-Mark screenshots (element boxes and indices drawn, UI-Genie)."""
import re

import numpy as np
import pytest

from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action, Observation
from gui_jax.envs.sim import PhoneSim, expert_actions, make_task
from gui_jax.eval.online_success import run_online_episodes
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import (PromptConfig, build_messages, expert_response, listed_elements, model_image,
                                  ui_text, xml_text)
from gui_jax.rl.set_of_mark import box_in_image, mark_color, mark_screenshot

DIALECT = "ui_genie"
MUSIC_ON_SCREEN = 'bounds="[820,1360][1070,1640]"'
MUSIC_BELOW = 'bounds="[820,2450][1070,2730]"'  # below the 2400-pixel screen (and outside its row)


@pytest.fixture(scope="module")
def home():
    """PhoneSim's home screen (540x1200 screenshot of a 1080x2400 screen)."""
    return PhoneSim(render=True).reset(make_task("music.play", 0))


def with_music_below(obs: Observation, keep_xml: bool = True) -> Observation:
    """The home screen with the Music icon moved below the screen, in the XML dump and the element list."""
    assert obs.ui_xml.count(MUSIC_ON_SCREEN) == 1
    els = [e if e.text != "Music" else type(e)(**{**e.__dict__, "bounds": (820, 2450, 1070, 2730)})
           for e in obs.ui_elements]
    return Observation(screenshot=obs.screenshot, ui_elements=els,
                       ui_xml=obs.ui_xml.replace(MUSIC_ON_SCREEN, MUSIC_BELOW) if keep_xml else "",
                       current_app=obs.current_app, goal=obs.goal, screen_size=obs.screen_size)


HOME_XML = "\n".join([
    "[4] TextView;;;09:41;[40,280][1040,540]",
    "[5] TextView;;;Monday, 2026-03-16;[40,540][1040,630]",
    "[8] TextView;click;focusable;Settings;[10,760][260,1040]",
    "[9] TextView;click;focusable;Clock;[280,760][530,1040]",
    "[10] TextView;click;focusable;Contacts;[550,760][800,1040]",
    "[11] TextView;click;focusable;Messages;[820,760][1070,1040]",
    "[13] TextView;click;focusable;Calendar;[10,1060][260,1340]",
    "[14] TextView;click;focusable;Notes;[280,1060][530,1340]",
    "[15] TextView;click;focusable;Expenses;[550,1060][800,1340]",
    "[16] TextView;click;focusable;Recipes;[820,1060][1070,1340]",
    "[18] TextView;click;focusable;Tasks;[10,1360][260,1640]",
    "[19] TextView;click;focusable;Files;[280,1360][530,1640]",
    "[20] TextView;click;focusable;Recorder;[550,1360][800,1640]",
])


@pytest.mark.parametrize("keep_xml", [True, False])
def test_xml_prompt_text_drops_offscreen_elements(home, keep_xml):
    obs = with_music_below(home, keep_xml)  # without a dump the elements' own bounds decide
    cfg = PromptConfig(observation="xml", target="element", dialect=DIALECT)
    messages, images = build_messages("Play a song", [], obs, cfg)
    assert images == []
    assert messages[-1]["content"] == [{"type": "text", "text": "Goal: Play a song\n"},
                                       {"type": "text", "text": "\nUI:\n" + HOME_XML}]
    assert "Music" in ui_text(obs, PromptConfig(observation="ui_text"))  # ui_text has no off-screen filter
    assert xml_text(home, cfg) == HOME_XML + "\n[21] TextView;click;focusable;Music;[820,1360][1070,1640]"
    assert xml_text(home, PromptConfig(observation="xml", max_ui_lines=2)) == "\n".join(HOME_XML.splitlines()[:2])


def test_both_prompt_has_the_image_and_the_ui_text(home):
    cfg = PromptConfig(observation="both", target="element", dialect=DIALECT)
    messages, images = build_messages("Play a song", [], home, cfg)
    content = messages[-1]["content"]
    assert [c["type"] for c in content] == ["text", "image", "text"]
    assert content[2]["text"] == "\nUI:\n" + ui_text(home, cfg) and "[21] TextView;click;Music" in content[2]["text"]
    assert len(images) == 1 and np.array_equal(images[0], home.screenshot)


def _xml_boxes(text: str) -> dict[int, tuple]:
    return {int(m[1]): tuple(int(v) for v in m.groups()[1:])
            for m in re.finditer(r"^\[(\d+)\] .*;\[(\d+),(\d+)\]\[(\d+),(\d+)\]$", text, re.M)}


class XmlReader:
    """Reads the xml UI lines of each prompt: opens the task's app, clicks the expert's target by its index
    (the smallest listed box around the expert's point), then terminates. Records the prompts it saw."""

    def __init__(self):
        self.seen = []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for messages, images in prompts:
            text = messages[-1]["content"][-1]["text"]
            goal = next(c["text"] for m in messages if m["role"] == "user" for c in m["content"]
                        if c["text"].startswith("Goal: "))[6:].strip()
            t = sum(m["role"] == "assistant" for m in messages)
            self.seen.append((goal, t, text, len(images)))
            task = next(tk for tk in TASKS if tk.goal == goal)
            a = expert_actions(task)[t].action
            if a.type == "click":
                boxes = _xml_boxes(text.removeprefix("\nUI:\n"))
                inside = [k for k, (x1, y1, x2, y2) in boxes.items() if x1 <= a.x < x2 and y1 <= a.y < y2]
                a = Action("click", element=min(inside, key=lambda k: (boxes[k][2] - boxes[k][0]) * (boxes[k][3] - boxes[k][1])))
            r = format_response(a, DIALECT)
            out.append(Generation(r, np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.float32)))
        return out


TASKS = [make_task("settings.wifi_on", 0), make_task("music.play", 1)]


def test_online_eval_runs_on_xml_prompts():
    cfg = PromptConfig(observation="xml", target="element", dialect=DIALECT)
    policy = XmlReader()
    recs = run_online_episodes(policy, TASKS, cfg, max_steps=5)
    assert [r["success"] for r in recs] == [True, True] and [r["steps"] for r in recs] == [3, 3]
    first = [s for s in policy.seen if s[1] == 0]
    assert first[0][2] == "\nUI:\n" + HOME_XML + "\n[21] TextView;click;focusable;Music;[820,1360][1070,1640]"
    assert all(n_images == 0 for *_, n_images in policy.seen)  # no screenshot in an xml prompt
    # SFT targets on the same prompts name elements by the index the xml lines carry
    obs = PhoneSim(render=False).reset(TASKS[1])
    assert expert_response(Action("click", x=900, y=1500), obs, cfg, element=21) == format_response(
        Action("click", element=21), DIALECT)


# ----------------------------------------------------------------------------------------- Set-of-Mark
def test_set_of_mark_draws_only_inside_element_boxes(home):
    cfg = PromptConfig(observation="screenshot", target="element", set_of_mark=True)
    els = listed_elements(home, cfg)
    assert [e.text for e in els][-1] == "Music" and len(els) == 14
    plain = home.screenshot
    marked = mark_screenshot(plain, els, home.screen_size)
    assert marked.shape == plain.shape and marked.dtype == np.uint8
    assert np.array_equal(mark_screenshot(plain, els, home.screen_size), marked)  # deterministic
    size = (plain.shape[1], plain.shape[0])
    boxes = [box_in_image(e.bounds, home.screen_size, size) for e in els]
    inside = np.zeros(plain.shape[:2], bool)
    for x1, y1, x2, y2 in boxes:
        inside[y1:y2, x1:x2] = True
    diff = np.any(marked != plain, axis=-1)
    assert not np.any(diff & ~inside)                          # nothing drawn outside an element's box
    assert all(diff[y1:y2, x1:x2].any() for x1, y1, x2, y2 in boxes)  # every element is marked
    # Music: screen bounds [820,1360][1070,1640] -> pixels [410,680][535,820) of the 540x1200 screenshot
    music = len(els) - 1
    assert boxes[music] == (410, 680, 535, 820)
    color = mark_color(music)
    for y, x in ((819, 534), (750, 410), (750, 411), (819, 470), (681, 500)):  # the outline, 2 px wide
        assert tuple(marked[y, x]) == color, (y, x)
    assert tuple(marked[681, 411]) == color                       # the index tag's fill (top-left corner)
    tag = marked[680:700, 410:440]
    assert np.any(np.all(tag == 255, axis=-1))                    # white digits "21" inside the tag
    for y, x in ((679, 470), (820, 470), (750, 409), (750, 535)):  # just outside: untouched
        assert tuple(marked[y, x]) == tuple(plain[y, x]), (y, x)


def test_set_of_mark_reaches_the_prompt_and_the_agent(home):
    plain_cfg = PromptConfig(observation="screenshot", dialect=DIALECT)
    som_cfg = PromptConfig(observation="screenshot", target="element", set_of_mark=True, dialect=DIALECT)
    _, plain = build_messages("Play a song", [], home, plain_cfg)
    messages, marked = build_messages("Play a song", [], home, som_cfg)
    assert np.array_equal(plain[0], home.screenshot)
    assert np.array_equal(marked[0], mark_screenshot(home.screenshot, listed_elements(home, som_cfg), home.screen_size))
    assert "Numbered boxes on the screenshot" in messages[0]["content"]
    resized = PromptConfig(observation="screenshot", set_of_mark=True, image_max_pixels=28 * 28 * 100)
    _, small = build_messages("g", [], home, resized)
    assert np.array_equal(small[0], model_image(marked[0], resized))  # marked, then resized

    class Recorder:
        images = []

        def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
            self.images += [imgs[-1] for _, imgs in prompts]
            r = format_response(Action("terminate", status="success"), DIALECT)
            return [Generation(r, np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.float32))] * len(prompts)

    agent = Recorder()
    run_online_episodes(agent, [make_task("music.play", 0)], som_cfg, max_steps=1)
    assert np.array_equal(agent.images[0], marked[0])


def test_element_target_needs_ui_text_or_marks():
    with pytest.raises(ValueError, match="set_of_mark"):
        PromptConfig(observation="screenshot", target="element")
    assert PromptConfig(observation="screenshot", target="element", set_of_mark=True).set_of_mark
