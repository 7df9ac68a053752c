"""Action descriptions (`action_desc`): exact strings on a hand-built episode, on PhoneSim's expert episodes, and
in the reward model's history summaries instead of the raw action."""
import numpy as np

from gui_jax.core.types import Action, Episode, Observation, UIElement
from gui_jax.envs.sim import PhoneSim
from gui_jax.envs.sim.describe import describe_action, describe_steps
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.rm_scoring import RewardModelConfig, rm_messages
from gui_jax.rl.prompting import PromptConfig
from gui_jax.tasks import make_task
from gui_jax.tasks.generate import generate_episode


def _obs(app, elements):
    els = [UIElement(index=i, **e) for i, e in enumerate(elements)]
    return Observation(screenshot=np.zeros((24, 12, 3), np.uint8), ui_elements=els, current_app=app,
                       goal="Play Quiet Fire", screen_size=(1080, 2400))


ROOT = {"cls": "android.widget.FrameLayout", "bounds": (0, 0, 1080, 2400)}
HOME = _obs("launcher", [ROOT, {"cls": "android.widget.TextView", "bounds": (0, 300, 270, 500), "text": "Music",
                                "clickable": True}])
SONGS = _obs("music", [ROOT,
                       {"cls": "android.widget.LinearLayout", "bounds": (0, 1920, 1080, 2110), "clickable": True,
                        "long_clickable": True},
                       {"cls": "android.widget.TextView", "bounds": (40, 1945, 1040, 2025), "text": "Quiet Fire"},
                       {"cls": "android.widget.TextView", "bounds": (40, 2030, 1040, 2090), "text": "Nova"},
                       {"cls": "android.widget.ImageButton", "bounds": (0, 80, 150, 240), "content_desc": "Navigate up",
                        "clickable": True}])
SEARCH = _obs("music", [ROOT,
                        {"cls": "android.widget.TextView", "bounds": (40, 250, 1040, 310), "text": "Search"},
                        {"cls": "android.widget.EditText", "bounds": (40, 315, 1040, 445), "clickable": True,
                         "focused": True, "text": "hel", "resource_id": "com.phonesim.music:id/query"},
                        {"cls": "android.widget.Switch", "bounds": (860, 615, 1040, 695), "clickable": True,
                         "checkable": True, "text": "OFF", "content_desc": "Shuffle"}])


def test_descriptions_on_a_hand_built_episode():
    ep = Episode(episode_id="hand", goal="Play Quiet Fire", observations=[HOME, SONGS, SEARCH, SEARCH, SEARCH],
                 actions=[Action("open", text="Music"), Action("click", x=540, y=2015),
                          Action("type", text="hello"), Action("system_button", button="Back"),
                          Action("terminate", status="success")],
                 target_bboxes=[None] * 5, step_instructions=[""] * 5)
    assert [a.action_desc for a in describe_steps(ep).actions] == [
        "open Music", "tap 'Quiet Fire' in Music", "type 'hello' into Search", "go back", "declare the task done"]
    # a description already there is kept
    kept = describe_steps(Episode("hand", ep.goal, ep.observations[:1],
                                  [Action("open", text="Music", action_desc="x")]))
    assert kept.actions[0].action_desc == "x"
    cases = [
        (Action("click", x=100, y=400), HOME, "tap 'Music' on the home screen"),
        (Action("long_press", x=540, y=2015, time=1.0), SONGS, "long-press 'Quiet Fire' in Music"),
        (Action("click", x=75, y=160), SONGS, "tap 'Navigate up' in Music"),
        (Action("click", x=540, y=1000), SONGS, "tap an empty spot in Music"),
        (Action("click", element=1), SONGS, "tap 'Quiet Fire' in Music"),        # by index: the same row
        (Action("click", text="Navigate up"), SONGS, "tap 'Navigate up' in Music"),   # by label
        (Action("click", x=540, y=380), SEARCH, "tap the 'Search' field in Music"),  # a field: its label, not its text
        (Action("click", x=950, y=655), SEARCH, "switch on 'Shuffle' in Music"),
        (Action("type", text="hi"), SONGS, "type 'hi'"),                              # no focused field
        (Action("scroll", direction="down"), SONGS, "scroll down in Music"),
        (Action("swipe", x=540, y=1800, x2=540, y2=600), SONGS, "swipe up in Music"),
        (Action("system_button", button="Home"), SONGS, "go to the home screen"),
        (Action("system_button", button="Enter"), SEARCH, "press Enter"),
        (Action("answer", text="42"), SONGS, "answer '42'"),
        (Action("wait", time=1.0), SONGS, "wait"),
        (Action("terminate", status="failure"), SONGS, "declare the task failed"),
    ]
    assert [describe_action(a, o) for a, o, _ in cases] == [want for _, _, want in cases]
    # a screen that names no app adds no place
    assert describe_action(Action("scroll", direction="up"), _obs("", [ROOT])) == "scroll up"


def test_phonesim_expert_episodes_carry_their_descriptions():
    ep = generate_episode(make_task("contacts.add", 0), PhoneSim(render=False))
    assert [a.action_desc for a in ep.actions] == [
        "open Contacts", "tap 'Add contact' in Contacts", "tap the 'Name' field in Contacts",
        "type 'Elif Lopez' into Name", "tap the 'Phone' field in Contacts", "type '+1 555 524 8329' into Phone",
        "tap 'Save' in Contacts", "declare the task done"]
    toggle = generate_episode(make_task("clock.alarm_toggle", 0), PhoneSim(render=False))
    assert [a.action_desc for a in toggle.actions] == ["open Clock", "switch off '08:30 Call mom' in Clock",
                                                      "declare the task done"]


def test_rm_history_summaries_use_the_descriptions():
    ep = describe_steps(Episode(episode_id="hand", goal="Play Quiet Fire", observations=[HOME, SONGS, SEARCH, SEARCH],
                                actions=[Action("open", text="Music"), Action("click", x=540, y=2015),
                                         Action("type", text="hello"), Action("system_button", button="Back")],
                                target_bboxes=[None] * 4, step_instructions=[""] * 4))
    pcfg = PromptConfig(observation="ui_text", target="element", system_prompt=False)
    rcfg = RewardModelConfig(history_images=0, describe_targets=True, system_prompt=False)
    rec = de.RewardRecord("step", ep.goal, tuple(de.StepRef("hand", t) for t in range(4)), True, "expert")

    def intro(lookup):
        messages, _ = rm_messages(rec, lookup, pcfg, rcfg)
        return messages[-1]["content"][0]["text"]
    assert intro({"hand": ep}) == ("Goal: Play Quiet Fire\nEarlier steps:\n1. open Music\n"
                                   "2. tap 'Quiet Fire' in Music\n3. type 'hello' into Search\n")
    # without descriptions the summary is the raw action (this step has no target box to caption it by)
    raw = Episode("hand", ep.goal, ep.observations, [a.replace(action_desc=None) for a in ep.actions])
    assert intro({"hand": raw}).splitlines()[2:4] == ["1. open(text='Music')", "2. click(x=540, y=2015)"]
