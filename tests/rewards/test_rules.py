"""docs/algorithms.md §2 step-reward presets against a hand-computed table."""
import numpy as np
import pytest

from gui_jax.rewards.rules import step_reward_from_flags

# parsed, format_ok (f), type_match, exact_match, paper, code
TABLE = [
    (0, 0, 0, 0, 0.0, 0.0),      # unparsable
    (1, 0, 0, 0, 0.0, 0.09),     # parsed, no thought, wrong type: code s=0.1 → 0.9*0.1
    (1, 1, 0, 0, 0.1, 0.19),     # parsed with thought, wrong type
    (1, 1, 1, 0, 0.5, 0.55),     # type only: paper 0.1+0.4; code 0.1+0.45
    (1, 1, 1, 1, 1.0, 1.0),      # exact
    (1, 0, 1, 1, 0.0, 0.9),      # exact but no thought: paper gates everything on f
    (1, 0, 1, 0, 0.0, 0.45),
    (0, 0, 1, 1, 0.0, 0.0),      # flags from an unparsed response never count
]


@pytest.mark.parametrize("preset,col", [("paper", 4), ("code", 5)])
def test_presets_match_hand_table(preset, col):
    arr = np.array(TABLE, dtype=np.float32)
    r = step_reward_from_flags(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], preset)
    np.testing.assert_allclose(np.asarray(r), arr[:, col], atol=1e-7)


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown step-reward preset 'nope'"):
        step_reward_from_flags([1], [1], [1], [1], "nope")


def test_judge_response_end_to_end():
    from gui_jax.core.types import Action
    from gui_jax.rewards.rules import judge_response
    expert = Action("click", x=500, y=1000)
    kw = dict(image_size=(1000, 2000), expert_bbox=(450, 950, 550, 1050))
    ok = '<think>tap it</think>\n<action>{"action": "click", "coordinate": [505, 1001]}</action>'
    far = '<think>tap it</think>\n<action>{"action": "click", "coordinate": [50, 100]}</action>'
    wrong_type = '<think>x</think>\n<action>{"action": "type", "text": "hi"}</action>'
    no_thought = '<think></think>\n<action>{"action": "click", "coordinate": [505, 1001]}</action>'
    assert judge_response(ok, "ui_s1", expert, **kw).reward == pytest.approx(1.0)
    assert judge_response(far, "ui_s1", expert, **kw).reward == pytest.approx(0.5)
    assert judge_response(far, "ui_s1", expert, preset="code", **kw).reward == pytest.approx(0.55)
    assert judge_response(wrong_type, "ui_s1", expert, **kw).reward == pytest.approx(0.1)
    assert judge_response("click there", "ui_s1", expert, **kw).reward == 0.0
    assert judge_response(no_thought, "ui_s1", expert, **kw).reward == 0.0
    assert judge_response(no_thought, "ui_s1", expert, require_thought=False, **kw).reward == pytest.approx(1.0)
    assert judge_response(no_thought, "ui_s1", expert, preset="code", **kw).reward == pytest.approx(0.9)


def test_a_switch_inside_the_experts_row_is_another_action_for_every_rule_user():
    """clock.delete_alarm opens the alarm's row, whose ON/OFF switch lies inside the row's box: the data
    engine's rule labels, the semi-online RL reward and the failure report's first error all call the switch
    wrong (a tap there toggles the alarm) and the row's own label right."""
    from gui_jax.core.types import Action
    from gui_jax.envs.sim import PhoneSim, make_task
    from gui_jax.jobs import failure_report as fr
    from gui_jax.rewards.data_engine import rule_label
    from gui_jax.rl.prompting import PromptConfig, expert_response
    from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, judge_step
    from gui_jax.tasks.generate import generate_episode
    ep = generate_episode(make_task("clock.delete_alarm", 3), PhoneSim(render=False, resolution=(112, 252)))
    t = 1
    obs, want = ep.observations[t], ep.actions[t]
    switch = next(e for e in obs.ui_elements if e.cls.endswith("Switch") and e.bounds[1] <= want.y <= e.bounds[3])
    x1, y1, x2, y2 = ep.target_bboxes[t]
    assert x1 <= switch.center[0] <= x2 and y1 <= switch.center[1] <= y2      # inside the row's box
    label = next(e for e in obs.ui_elements if not e.clickable and e.text and e.bounds[1] <= want.y <= e.bounds[3])
    as_switch, as_label = Action("click", x=switch.center[0], y=switch.center[1]), Action("click", element=label.index)
    assert not rule_label(ep, t, as_switch) and rule_label(ep, t, Action("click", x=label.center[0], y=label.center[1]))
    from gui_jax.jobs import load_config
    pcfg = PromptConfig(**load_config("configs/quickstart.py").prompt.to_dict())   # element mode
    right, wrong = (judge_step(expert_response(a, obs, pcfg), ep, t, pcfg, SemiOnlineConfig(require_thought=False))
                    for a in (as_label, Action("click", element=switch.index)))
    assert (right.exact_match, wrong.exact_match) == (True, False) and right.reward > wrong.reward
    assert fr.lands_in(as_label, obs, ep.target_bboxes[t], want)
    assert not fr.lands_in(as_switch, obs, ep.target_bboxes[t], want)
    assert fr.lands_in(as_switch, obs, ep.target_bboxes[t])                  # the box alone, without the expert
