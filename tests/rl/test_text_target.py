"""prompt.target = "text": the expert names each click by the shortest label prefix that identifies its
element, those responses replay to success in PhoneSim, and the step matcher scores them exact."""
import json

import pytest

from gui_jax.core.dialects import parse_response
from gui_jax.envs.sim import PhoneSim, make_task
from gui_jax.rl.prompting import PromptConfig, expert_response
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, expert_element, judge_step
from gui_jax.tasks.generate import generate_episodes

TEXT = PromptConfig(observation="ui_text", target="text", word_tokens=True, system_prompt=False)


def _click_label(response):
    body = json.loads(response.split("<action>")[1].split("</action>")[0])
    return body["action"], body.get("text")


@pytest.mark.parametrize("template,seed", [("messages.open_thread", 3), ("clock.alarm_toggle", 5),
                                           ("music.play", 7)])
def test_expert_text_clicks_copy_goal_words_and_replay_to_success(template, seed):
    task = make_task(template, seed)
    (ep,) = list(generate_episodes([task], resolution=(112, 252)))
    sim = PhoneSim(render=False, resolution=(112, 252), max_steps=8, tree=True)
    obs, info, clicks = sim.reset(task), {}, 0
    for t, action in enumerate(ep.actions):
        response = expert_response(action, obs, TEXT, element=expert_element(ep, t))
        assert judge_step(response, ep, t, TEXT, SemiOnlineConfig(require_thought=False)).exact_match
        if action.type == "click":
            kind, label = _click_label(response)
            assert kind == "click" and label.startswith(" ") and label.strip().lower() in ep.goal.lower()
            clicks += 1
        obs, done, info = sim.step(parse_response(response, TEXT.dialect)[1])
    assert clicks >= 1 and info.get("success") is True


def test_a_wrong_label_is_a_type_match_but_not_exact():
    task = make_task("messages.open_thread", 3)
    (ep,) = list(generate_episodes([task], resolution=(112, 252)))
    t = next(i for i, a in enumerate(ep.actions) if a.type == "click")
    shown = [e for e in ep.observations[t].ui_elements if e.text and e.index != expert_element(ep, t)]
    other = next(e.text for e in shown if e.text.split()[0] not in ep.goal)
    wrong = '<think></think>\n<action>{"action": "click", "text": "%s"}</action>' % other
    j = judge_step(wrong, ep, t, TEXT, SemiOnlineConfig(require_thought=False))
    assert j.type_match and not j.exact_match
    nothing = '<think></think>\n<action>{"action": "click", "text": "Spaceship"}</action>'
    j = judge_step(nothing, ep, t, TEXT, SemiOnlineConfig(require_thought=False))
    assert j.type_match and not j.exact_match
