"""AndroidLab metrics from online episodes: reasonable operations (the screen changed), expert step counts,
sub-goals where the env reports them, for the PhoneSim loop and the rollout engine's records."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action
from gui_jax.envs.sim.phonesim import PhoneSim, expert_actions, make_task
from gui_jax.eval.androidlab import androidlab_report, reasonable_step, trajectory_fields
from gui_jax.eval.online_success import online_metrics, run_online_episodes
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import PromptConfig

TASK = make_task("music.play", 3)
TASKS = [TASK, make_task("settings.bluetooth_on", 0)]
PCFG = PromptConfig(dialect="ui_genie", observation="ui_text", system_prompt=False)


def _screens():
    sim = PhoneSim(render=False, tree=True)
    start = sim.reset(TASK)
    wasted, _, _ = sim.step(Action("click", x=540, y=700))    # nothing clickable there: the screen stays
    opened, _, _ = sim.step(Action("open", text="Music"))
    return start, wasted, opened


def test_reasonable_step_is_a_screen_change():
    start, wasted, opened = _screens()
    assert not reasonable_step(start, Action("click", x=540, y=700), wasted)
    assert reasonable_step(wasted, Action("open", text="Music"), opened)
    assert not reasonable_step(start, None, start)                       # an unparsable response
    assert reasonable_step(opened, Action("terminate", status="success"), None)  # ends the episode
    assert reasonable_step(opened, Action("answer", text="x"), opened)


def test_report_hand_values_and_what_is_unknown():
    rows = [{"success": True, "steps": 4, "reasonable_ops": 3, "expert_steps": 3, "subgoals": None},
            {"success": True, "steps": 5, "reasonable_ops": 5, "expert_steps": None, "subgoals": None},
            {"success": False, "steps": 6, "reasonable_ops": 0, "expert_steps": 2, "subgoals": None}]
    r = androidlab_report(rows)
    assert r["SR"] == pytest.approx(2 / 3) and r["ROR"] == pytest.approx(8 / 15)
    assert r["RRR"] == pytest.approx(3 / 4)  # successful episodes with a known expert count only
    assert math.isnan(r["SubSR"]) and (r["episodes"], r["expert_step_episodes"], r["subgoal_episodes"]) == (3, 2, 0)
    rows[0]["subgoals"], rows[2]["subgoals"] = (2, 2), (1, 4)
    assert androidlab_report(rows)["SubSR"] == pytest.approx(3 / 6)
    assert androidlab_report(rows)["subgoal_episodes"] == 2


def test_rollout_records_give_the_fields():
    start, wasted, opened = _screens()
    steps = [SimpleNamespace(observation=start, action=Action("click", x=540, y=700), info={}),
             SimpleNamespace(observation=wasted, action=Action("open", text="Music"),
                             info={"subgoals_done": 1, "subgoals_total": 3}),
             SimpleNamespace(observation=opened, action=None, info={})]
    rec = SimpleNamespace(task=TASK, steps=steps, final_observation=opened)
    assert trajectory_fields(rec) == {"reasonable_ops": 1, "expert_steps": 3, "subgoals": (1, 3)}
    rec.task = SimpleNamespace(task_id="Settings|Open Wi-Fi", goal="Open Wi-Fi")  # a device task: no expert count
    assert trajectory_fields(rec)["expert_steps"] is None


class DetourPolicy:
    """The oracle's plan, after `detour` wasted clicks on a spot with nothing clickable; `garbage` tasks answer
    text that does not parse. The step is the number of earlier responses in the prompt."""

    def __init__(self, detour=0, garbage=()):
        self.detour, self.garbage = detour, set(garbage)

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for msgs, _ in prompts:
            goal = next(c["text"] for m in msgs if m["role"] == "user" for c in m["content"])
            goal = goal.split("\n")[0].removeprefix("Goal: ")
            task = next(t for t in TASKS if t.goal == goal)
            t = sum(m["role"] == "assistant" for m in msgs)
            plan = [Action("click", x=540, y=700)] * self.detour + [s.action for s in expert_actions(task)]
            reply = "no idea" if task.task_id in self.garbage else format_response(plan[t], "ui_genie")
            out.append(Generation(reply, np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.float32)))
        return out


def test_online_eval_reports_androidlab_metrics():
    recs = run_online_episodes(DetourPolicy(detour=1, garbage={TASKS[1].task_id}), TASKS, PCFG, max_steps=5)
    assert [(r["success"], r["steps"], r["reasonable_ops"], r["expert_steps"]) for r in recs] == [
        (True, 4, 3, 3), (False, 5, 0, 3)]
    m = online_metrics(recs)
    assert (m["SR"], m["RRR"], m["ROR"]) == (0.5, 3 / 4, 3 / 9)
    assert math.isnan(m["SubSR"]) and m["subgoal_episodes"] == 0  # PhoneSim tasks carry no sub-goals


def test_results_table_shows_androidlab_columns_that_have_values():
    from gui_jax.eval.suite import format_table
    recs = run_online_episodes(DetourPolicy(detour=1), TASKS, PCFG, max_steps=5)
    result = {f"online_{k}": v for k, v in online_metrics(recs).items()}
    head, _, row = format_table({"evaluated": result}).splitlines()
    assert head == "| stage | online_SR | online_RRR | online_ROR |"  # no SubSR: no task carries sub-goals
    assert row == "| evaluated | 1.000 | 0.750 | 0.750 |"


def test_records_report_counts_completed_episodes_only():
    from gui_jax.eval.androidlab import records_report
    start, wasted, opened = _screens()
    step = SimpleNamespace(observation=start, action=Action("open", text="Music"), info={})
    done = SimpleNamespace(task=TASK, steps=[step], final_observation=opened, success=True, status="completed")
    lost = SimpleNamespace(task=TASK, steps=[step], final_observation=None, success=False, status="env_failure")
    r = records_report([done, lost])
    assert (r["episodes"], r["SR"], r["ROR"], r["RRR"]) == (1, 1.0, 1.0, 3.0)
