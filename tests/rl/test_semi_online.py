"""Patch Module semantics (docs/algorithms.md §3) with scripted policies."""

import pytest

from gui_jax.eval.offline import evaluate_sop
from gui_jax.rl.prompting import PromptConfig
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, semi_online_rollouts

from support.fake_policy import ScriptedPolicy, click_response, make_episode

PCFG = PromptConfig(dialect="ui_s1", observation="screenshot", history_turns=8)


def _step_of(messages):
    return sum(m["role"] == "assistant" for m in messages)


def _policy(wrong_steps):
    """Correct except at the given step indices (with a thought: ui_s1 requires one by default)."""
    return ScriptedPolicy(lambda goal, msgs, _: click_response(_step_of(msgs), _step_of(msgs) not in wrong_steps,
                                                               thought=f"step {_step_of(msgs)}"))


def test_all_correct_runs_whole_episode():
    ep = make_episode(n=3)
    steps = semi_online_rollouts(_policy(set()), [ep], PCFG, SemiOnlineConfig(num_rollouts=2), seed=0)
    assert [(s.rollout, s.step) for s in sorted(steps, key=lambda s: (s.rollout, s.step))] == \
        [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert all(s.exact_match and not s.patched and s.reward == pytest.approx(1.0) for s in steps)


@pytest.mark.parametrize("eps,expected_steps", [(0, [0, 1]), (1, [0, 1, 2, 3]), (-1, [0, 1, 2, 3, 4])])
def test_patch_threshold(eps, expected_steps):
    ep = make_episode(n=5)
    # Wrong at steps 1 and 3: ε=0 stops at 1; ε=1 patches 1, stops at 3; ε=-1 patches both.
    pol = _policy({1, 3})
    steps = semi_online_rollouts(pol, [ep], PCFG, SemiOnlineConfig(num_rollouts=1, patch_threshold=eps), seed=0)
    assert [s.step for s in steps] == expected_steps
    assert [s.mismatch for s in steps] == [s.step in (1, 3) for s in steps]
    # The mismatched step is kept with its reward: parsed, type right, wrong place → 0.1 + 0.4 (paper).
    for s in steps:
        assert s.reward == pytest.approx(0.5 if s.mismatch else 1.0)


def test_patched_history_holds_the_expert_action():
    ep = make_episode(n=3)
    pol = _policy({0})
    semi_online_rollouts(pol, [ep], PCFG, SemiOnlineConfig(num_rollouts=1, patch_threshold=1), seed=0)
    # At step 1 the history's assistant turn is the thought-free expert action in image pixels.
    hist = [m["content"] for m in pol.calls[1][0][0] if m["role"] == "assistant"]
    assert hist == ['<think></think>\n<action>{"action": "click", "coordinate": [30, 30]}</action>']


def test_off_policy_patch_thought_comes_from_the_auxiliary_model():
    ep = make_episode(n=3)
    pol = _policy({1})
    aux = ScriptedPolicy(lambda goal, msgs, text: "<think>the list shows item 1, tap it</think>")
    with pytest.raises(ValueError, match="aux_policy"):
        semi_online_rollouts(pol, [ep], PCFG, SemiOnlineConfig(num_rollouts=1, patch_strategy="off_policy"), seed=0)
    semi_online_rollouts(pol, [ep], PCFG, SemiOnlineConfig(num_rollouts=1, patch_strategy="off_policy"), seed=0,
                         aux_policy=aux)
    # M0(I, a*, S_t): one call for the step-1 patch, hint = the expert action in image pixels, no history.
    assert len(aux.calls) == 1 and len(pol.calls) == 3  # the policy only samples steps 0, 1, 2
    (aux_msgs, aux_images), = aux.calls[0]
    aux_text = aux_msgs[1]["content"][0]["text"]
    assert 'Hint: the correct next action is <think></think>\n<action>{"action": "click", "coordinate": [30, 60]}' \
        in aux_text
    assert not [m for m in aux_msgs if m["role"] == "assistant"] and len(aux_images) == 1
    # Step 2's history holds the patch: the aux thought + the expert action (30, 60) = screen (300, 600) / 10.
    hist = [m["content"] for m in pol.calls[2][0][0] if m["role"] == "assistant"]
    assert hist[1] == ('<think>the list shows item 1, tap it</think>\n'
                       '<action>{"action": "click", "coordinate": [30, 60]}</action>')


def test_on_policy_patch_conditions_on_the_rollout_history():
    ep = make_episode(n=3)

    def script(goal, msgs, text):
        if "Hint:" in text:
            return click_response(0, True, thought="because the hint says so")
        return click_response(_step_of(msgs), _step_of(msgs) != 1, thought=f"my step {_step_of(msgs)}")
    pol = ScriptedPolicy(script)
    semi_online_rollouts(pol, [ep], PCFG, SemiOnlineConfig(num_rollouts=1, patch_strategy="on_policy"), seed=0)
    assert len(pol.calls) == 4  # step 0, step 1, the hint call for step 1, step 2
    # M(I, a*, H_t, S_t): the hint prompt carries H_1 = step 0's response as the policy wrote it.
    hint_msgs = pol.calls[2][0][0]
    assert [m["content"] for m in hint_msgs if m["role"] == "assistant"] == [
        '<think>my step 0</think>\n<action>{"action": "click", "coordinate": [30, 30]}</action>']
    patched = [m["content"] for m in pol.calls[3][0][0] if m["role"] == "assistant"][1]
    assert patched == ('<think>because the hint says so</think>\n'
                       '<action>{"action": "click", "coordinate": [30, 60]}</action>')


def test_sop_is_greedy_stop_at_first_mismatch():
    eps = [make_episode("g1", n=4), make_episode("g2", n=2), make_episode("g3", n=2)]

    def script(goal, msgs, _):
        t = _step_of(msgs)
        wrong = {"g1": {2}, "g2": set(), "g3": {0}}[goal]
        return click_response(t, t not in wrong)
    out = evaluate_sop(ScriptedPolicy(script), eps, PCFG)
    # g1: 2/4, g2: 2/2, g3: 0/2 → PG = (0.5 + 1 + 0)/3, TSR = 1/3.
    assert out["PG"] == pytest.approx(0.5)
    assert out["TSR"] == pytest.approx(1 / 3)
    assert out["Score"] == pytest.approx((0.5 + 1 / 3) / 2)
