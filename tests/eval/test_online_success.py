"""Online evaluation in PhoneSim with scripted policies (oracle replay, garbage, early stop)."""
import numpy as np
import pytest

from gui_jax.core.dialects import format_response
from gui_jax.envs.sim.phonesim import PhoneSim, expert_actions, make_task
from gui_jax.eval.online_success import online_metrics, run_online_episodes
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import PromptConfig
from support.fake_policy import goal_and_step

PCFG = PromptConfig(dialect="ui_genie", observation="ui_text", target="coordinate", history_turns=0,
                    history_mode="compact")
TASKS = [make_task("settings.bluetooth_on", 0), make_task("music.play", 3), make_task("expenses.amount", 5)]


class ReplayPolicy:
    """Replays each task's oracle actions (screen pixels: no screenshot in the prompt)."""

    def __init__(self, tasks, garbage_for=()):
        self.plans = {t.goal: [s.action for s in expert_actions(t)] for t in tasks}
        self.garbage_for = set(garbage_for)

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for messages, _ in prompts:
            goal, t = goal_and_step(messages)
            reply = "no idea" if goal in self.garbage_for else format_response(self.plans[goal][t], "ui_genie")
            out.append(Generation(reply, np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.float32)))
        return out


def test_oracle_replay_succeeds_and_garbage_fails():
    recs = run_online_episodes(ReplayPolicy(TASKS, garbage_for={TASKS[2].goal}), TASKS, PCFG, max_steps=10)
    by = {r["task_id"]: r for r in recs}
    assert by[TASKS[0].task_id]["success"] and by[TASKS[1].task_id]["success"]
    assert by[TASKS[0].task_id]["steps"] == len(expert_actions(TASKS[0]))
    bad = by[TASKS[2].task_id]
    assert not bad["success"] and bad["steps"] == 10 and bad["unparsable"] == 10
    m = online_metrics(recs)
    assert m["SR"] == pytest.approx(2 / 3)
    assert m["unparsable_rate"] == pytest.approx(10 / sum(r["steps"] for r in recs))


def test_trace_keeps_each_steps_screen_and_parsed_action():
    """keep_trace: the oracle's trace is its plan, each action beside the screen it was taken on (the first is
    the task's start screen); an unparsable response is None. Without it, records carry no trace."""
    recs = run_online_episodes(ReplayPolicy(TASKS, garbage_for={TASKS[2].goal}), TASKS, PCFG, max_steps=4,
                               keep_trace=True)
    by = {r["task_id"]: r for r in recs}
    plan = [s.action for s in expert_actions(TASKS[1])]
    trace = by[TASKS[1].task_id]["trace"]
    assert [a for _, a in trace] == plan
    start = PhoneSim(render=False, max_steps=4, tree=True).reset(TASKS[1])
    assert trace[0][0].ui_xml == start.ui_xml and trace[1][0].ui_xml != start.ui_xml
    assert [a for _, a in by[TASKS[2].task_id]["trace"]] == [None] * 4
    assert "trace" not in run_online_episodes(ReplayPolicy(TASKS), TASKS[:1], PCFG, max_steps=4)[0]


def test_pass_at_k_over_trials():
    recs = [{"task_id": "a", "difficulty": "easy", "trial": k, "success": k == 1, "steps": 3, "unparsable": 0}
            for k in range(2)] + \
           [{"task_id": "b", "difficulty": "hard", "trial": k, "success": False, "steps": 5, "unparsable": 0}
            for k in range(2)]
    m = online_metrics(recs)
    assert m["SR"] == 0.0 and m["pass@2"] == pytest.approx(0.5)
    assert m["SR_easy"] == 0.0 and m["SR_hard"] == 0.0
