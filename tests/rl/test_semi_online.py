"""Patch Module semantics (SPEC §3) with scripted policies."""

import pytest

from gui_jax.eval.offline import evaluate_sop
from gui_jax.rl.prompting import PromptConfig
from gui_jax.rl.semi_online import SemiOnlineConfig, semi_online_rollouts

from support.fake_policy import ScriptedPolicy, click_response, make_episode

PCFG = PromptConfig(dialect="ui_s1", observation="screenshot", history_turns=8)


def _step_of(messages):
    return sum(m["role"] == "assistant" for m in messages)


def _policy(wrong_steps):
    """Correct except at the given step indices."""
    return ScriptedPolicy(lambda goal, msgs, _: click_response(_step_of(msgs), _step_of(msgs) not in wrong_steps))


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


def test_off_and_on_policy_patch_thoughts():
    ep = make_episode(n=2)
    pol = _policy({0})
    semi_online_rollouts(pol, [ep], PCFG, SemiOnlineConfig(num_rollouts=1, patch_strategy="off_policy"), seed=0)
    assert "<think>tap item 0</think>" in [m["content"] for m in pol.calls[1][0][0] if m["role"] == "assistant"][0]

    def script(goal, msgs, text):
        if "Hint:" in text:
            return click_response(0, True, thought="because the hint says so")
        return click_response(_step_of(msgs), _step_of(msgs) != 0)
    pol = ScriptedPolicy(script)
    semi_online_rollouts(pol, [ep], PCFG, SemiOnlineConfig(num_rollouts=1, patch_strategy="on_policy"), seed=0)
    assert len(pol.calls) == 3  # step 0, the hint call, step 1
    patched = [m["content"] for m in pol.calls[2][0][0] if m["role"] == "assistant"][0]
    assert patched.startswith("<think>because the hint says so</think>")


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
