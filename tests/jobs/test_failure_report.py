"""gui_jax/jobs/failure_report.py: first-error labels of fabricated traces against an expert episode, the
counts per template and per step, and the report's tables."""
import numpy as np
import pytest

from gui_jax.core.types import Action, Episode, Observation, UIElement
from gui_jax.jobs import failure_report as fr

ROW = (0, 100, 200, 150)      # the expert's target: a list row
LABEL = (10, 110, 90, 140)    # the row's label, inside the row
OTHER = (0, 200, 200, 250)    # another row


def _obs():
    return Observation(screenshot=np.zeros((4, 4, 3), np.uint8),
                       ui_elements=[UIElement(index=1, cls="row", bounds=ROW), UIElement(index=2, cls="text", bounds=LABEL),
                                    UIElement(index=3, cls="row", bounds=OTHER)])


def _expert():
    acts = [Action("open", text="Music"), Action("click", element=1), Action("terminate", status="success")]
    return Episode("music.play#1000", "Play Bema", [_obs() for _ in acts], acts, target_bboxes=[None, ROW, None],
                   template="music.play")


@pytest.mark.parametrize("steps,label,at", [
    ([Action("open", text="Clock")], "wrong_app", 0),
    ([Action("open", text="Music"), None], "unparsable", 1),
    ([Action("open", text="Music"), Action("terminate", status="success")], "stops_early", 1),
    ([Action("open", text="Music"), Action("click", element=3)], "wrong_step", 1),
    ([Action("open", text="Music"), Action("click", x=100.0, y=225.0)], "wrong_step", 1),
    # the row's label (element 2) and a point inside the row are the expert's click; the answer differs later
    ([Action("open", text="Music"), Action("click", element=2), Action("answer", text="x")], "wrong_step", 2),
    # the expert's steps throughout and still a failure: labelled at the step after the trace
    ([Action("open", text="Music"), Action("click", x=150.0, y=120.0), Action("terminate", status="success")],
     "wrong_step", 3),
])
def test_first_error_labels(steps, label, at):
    trace = [(_obs(), a) for a in steps]
    assert fr.first_error(trace, _expert()) == (label, at)


def test_error_example_names_the_step_both_actions_and_the_screen():
    ep = _expert()
    obs = _obs()
    obs.ui_elements[1].text = "Bema"
    trace = [(obs, Action("open", text="Music")), (obs, Action("click", element=3))]
    assert fr.error_example(trace, ep, 1) == {"goal": "Play Bema", "step": 1, "expert": "click(element=1)",
                                              "policy": "click(element=3)", "screen": "Bema"}
    assert fr.error_example([(obs, None)], ep, 0)["policy"] == "unparsable"
    past = fr.error_example(trace + [(obs, Action("terminate", status="success"))], ep, 3)
    assert (past["expert"], past["policy"], past["screen"]) == ("none", "none", "")


def test_an_answer_with_a_leading_space_or_other_case_is_the_experts():
    # prompt.answer_spaced: the policy writes " Bema" for the expert's "Bema"; readers strip and ignore case
    acts = [Action("open", text="Music"), Action("answer", text="Bema"), Action("terminate", status="success")]
    ep = Episode("music.artist#1", "Who sings?", [_obs() for _ in acts], acts, target_bboxes=[None] * 3,
                 template="music.artist")
    spaced = [(_obs(), Action("open", text="Music")), (_obs(), Action("answer", text=" bema")),
              (_obs(), Action("answer", text=" Bema"))]
    assert fr.first_error(spaced, ep) == ("wrong_step", 2)
    assert fr.first_error(spaced[:1] + [(_obs(), Action("answer", text=" Bem"))], ep) == ("wrong_step", 1)


def test_experts_pair_by_task_id_where_goals_repeat():
    from gui_jax.envs.sim.phonesim import Task
    acts = [Action("open", text="Settings")]
    eps = [Episode(f"settings.model_answer#{s}", "What is the model number of this phone?", [_obs()], acts,
                   target_bboxes=[None], template="settings.model_answer") for s in (7, 3)]
    tasks = [Task("settings.model_answer", s, eps[0].goal, "Settings", ("Settings",), "easy", 0.0, 3, True)
             for s in (3, 7)]
    assert [e.episode_id for e in fr.experts_of(tasks, eps)] == ["settings.model_answer#3", "settings.model_answer#7"]
    with pytest.raises(ValueError, match="settings.model_answer#3"):
        fr.experts_of(tasks, eps[:1])


def test_expert_descriptions_do_not_count_as_a_difference():
    # PhoneSim's expert steps carry an action_desc; the policy's parsed actions never do
    ep = _expert()
    ep = Episode(ep.episode_id, ep.goal, ep.observations,
                 [a.replace(action_desc=f"step {i}") for i, a in enumerate(ep.actions)], target_bboxes=ep.target_bboxes,
                 template=ep.template)
    trace = [(_obs(), Action("open", text="Music")), (_obs(), Action("click", element=3))]
    assert fr.first_error(trace, ep) == ("wrong_step", 1)


def test_lands_in_by_element_centre_or_point():
    obs = _obs()
    assert fr.lands_in(Action("click", element=2), obs, ROW)
    assert not fr.lands_in(Action("click", element=3), obs, ROW)
    assert not fr.lands_in(Action("click", element=9), obs, ROW)     # no such element on the screen
    assert fr.lands_in(Action("click", x=0.0, y=150.0), obs, ROW)   # the box's edge counts
    assert not fr.lands_in(Action("click", element=1), obs, None)


def test_counts_per_template_and_step():
    counts = fr.count_labels([("music.play", "success"), ("music.play", "wrong_step"), ("clock.alarm_toggle", "wrong_step"),
                              ("clock.alarm_toggle", "wrong_app"), ("music.play", "wrong_step")])
    assert counts["all"] == {"success": 1, "wrong_step": 3, "wrong_app": 1}
    assert counts["by_template"] == {"clock.alarm_toggle": {"wrong_step": 1, "wrong_app": 1},
                                     "music.play": {"success": 1, "wrong_step": 2}}
    ex = ("goal", "expert", "policy")
    judged = [("music.play", 1, "click", False, ex)] * 5 + [("music.play", 1, "click", True, ex),
                                                            ("music.play", 0, "open", True, ex)]
    rows = fr.count_steps(judged)
    assert [(r["step"], r["type"], r["right"], r["total"], len(r["wrong"])) for r in rows] == \
        [(0, "open", 1, 1, 0), (1, "click", 1, 6, fr.EXAMPLES_PER_CELL)]
    example = {"goal": "Play Bema", "step": 1, "expert": "click(element=1)", "policy": "click(element=3)",
               "screen": "Bema | Quiet"}
    md = fr.markdown({"command": "c", "checkpoint": "/ck", "steps": rows,
                      "online": {"tasks": 5, **counts, "examples": {"music.play wrong_step": [example]}}})
    assert "- music.play wrong_step step 1: 'Play Bema': click(element=1) -> click(element=3); screen: Bema | Quiet" in md
    assert "| music.play | 1 | click | 1 / 6 |" in md
    assert "| success | wrong_app | wrong_step |" in md and "| all | 1 | 1 | 3 |" in md
    assert "| clock.alarm_toggle | 0 | 1 | 1 |" in md


def test_a_path_that_is_no_checkpoint_is_refused(tmp_path, capsys):
    assert fr.main([str(tmp_path), "--workdir", str(tmp_path / "w")]) == 2
    assert "neither a stage's checkpoints folder" in capsys.readouterr().err
