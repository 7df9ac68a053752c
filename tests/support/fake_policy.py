"""Scripted policies and synthetic episodes for rollout tests (no model needed)."""
import numpy as np

from gui_jax.core.types import Action, Episode, Observation, UIElement
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import PromptConfig

# the text-only element prompt make_episode's screens fit (4 lines of UI text, compact history, no system prompt)
UI_PROMPT = PromptConfig(observation="ui_text", target="element", history_turns=0, history_mode="compact",
                         system_prompt=False, max_ui_lines=4)


def make_episode(goal="Turn on Wi-Fi", n=3, size=(108, 240)):
    """n click steps; step t's target is element t at a distinct place. Screen 1080x2400."""
    obs, acts, boxes = [], [], []
    for t in range(n + 1):
        els = [UIElement(index=k, cls="android.widget.Button", bounds=(100, 200 + 300 * k, 500, 400 + 300 * k),
                         text=f"item {k}", clickable=True) for k in range(n)]
        img = np.full((size[1], size[0], 3), 10 * t, np.uint8)
        obs.append(Observation(screenshot=img, ui_elements=els, goal=goal, screen_size=(1080, 2400)))
    for t in range(n):
        acts.append(Action("click", x=300, y=300 + 300 * t))
        boxes.append((100.0, 200.0 + 300 * t, 500.0, 400.0 + 300 * t))
    return Episode(episode_id=goal, goal=goal, observations=obs, actions=acts, target_bboxes=boxes,
                   step_instructions=[f"tap item {t}" for t in range(n)])


def goal_and_step(messages):
    """(goal, step index) read back from a compact-history prompt (history_turns=0): every earlier step is one
    numbered line under "Earlier steps:"."""
    text = "".join(c.get("text", "") for m in messages if m["role"] == "user" for c in m["content"])
    goal = text.split("Goal: ", 1)[1].split("\n", 1)[0]
    earlier = text.split("Earlier steps:\n", 1)[1].split("\nUI:")[0] if "Earlier steps:" in text else ""
    return goal, len(earlier.splitlines())


def click_response(t, correct=True, thought=""):
    # Coordinates in the 108x240 image (1/10 of the screen).
    y = 30 + 30 * t if correct else 230
    return f"<think>{thought}</think>\n<action>{{\"action\": \"click\", \"coordinate\": [30, {y}]}}</action>"


class ScriptedPolicy:
    """script(goal, t, call_kind) -> response text; records every prompt it sees."""

    def __init__(self, script):
        self.script = script
        self.calls = []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        self.calls.append(prompts)
        out = []
        for messages, images in prompts:
            goal_text = next(c["text"] for m in messages if m["role"] == "user"
                             for c in m["content"] if c.get("type") == "text")
            goal = goal_text.split("\n")[0].removeprefix("Goal: ")
            text = self.script(goal, messages, goal_text)
            out.append(Generation(text=text, prompt_ids=np.zeros(3, np.int32),
                                  response_ids=np.zeros(2, np.int32), logprobs=np.zeros(2, np.float32)))
        return out

    def encode(self, prompt, response):
        raise NotImplementedError
