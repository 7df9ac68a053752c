"""prompt.answer_spaced: the expert writes an answer after a leading space, so a value copied from a UI line has
the tokens it has on the screen; the space changes nothing a reader of the answer sees (step match, PhoneSim's
success check)."""
import dataclasses
import json

from gui_jax.core.dialects import parse_response
from gui_jax.envs.sim import PhoneSim, make_task
from gui_jax.models.tokenizer import tiny_tokenizer
from gui_jax.rl.prompting import expert_response, ui_text
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, expert_element, judge_step
from gui_jax.tasks.generate import generate_episodes
from gui_jax.train.pretrain_data import quickstart_prompt_config

PLAIN = quickstart_prompt_config(24, answer_spaced=False)
SPACED = dataclasses.replace(PLAIN, answer_spaced=True)


def _answer(response: str) -> str:
    return json.loads(response.split("<action>")[1].split("</action>")[0])["text"]


def test_a_spaced_answer_copies_the_screens_tokens_and_still_succeeds():
    tok = tiny_tokenizer()
    task = make_task("settings.model_answer", 2)
    (ep,) = list(generate_episodes([task], resolution=(112, 252)))
    sim = PhoneSim(render=False, resolution=(112, 252), max_steps=8, tree=True)
    obs, info, answers = sim.reset(task), {}, 0
    for t, action in enumerate(ep.actions):
        response = expert_response(action, obs, SPACED, element=expert_element(ep, t))
        plain = expert_response(action, obs, PLAIN, element=expert_element(ep, t))
        assert judge_step(response, ep, t, SPACED, SemiOnlineConfig(require_thought=False)).exact_match
        if action.type == "answer":
            value = _answer(plain)
            assert _answer(response) == " " + value and not value.startswith(" ")
            screen = ui_text(obs, SPACED)
            assert f"; {value}\n" in screen + "\n"   # the value is a UI line's label, after "; "
            ids = tok.encode(_answer(response))
            line = tok.encode("; " + value)
            assert line[-len(ids):] == ids and tok.encode(value) != ids   # the screen's tokens, not the bare ones
            answers += 1
        else:
            assert response == plain              # only answers change
        obs, done, info = sim.step(parse_response(response, SPACED.dialect)[1])
    assert answers == 1 and info.get("success") is True
