"""Held-out evaluation through the env pool with several sampled trials per task: per-task success
rates, the episode-level SR, the interval by bootstrap over tasks, and the paired sign test; the first
`eval.save_trajectories` episodes saved for the viewer, with the reward model's outcome score."""
import types

import ml_collections
import numpy as np
import pytest

from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action
from gui_jax.envs.sim import expert_actions, make_task
from gui_jax.eval.metrics import bootstrap_mean_interval, wilson_interval
from gui_jax.jobs.online_rl import evaluate_online_pool, paired_p
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import PromptConfig

PCFG = PromptConfig(dialect="ui_genie", observation="ui_text", system_prompt=False)
TASKS = [make_task(t, s) for t in ("messages.open_thread", "clock.alarm_toggle", "music.play") for s in (1, 2, 3)]
assert len({t.goal for t in TASKS}) == len(TASKS)  # the policy finds a task by its goal


class GoalOraclePolicy:
    """Expert actions for the tasks in `solve` (found by the goal in the prompt; the step = the
    assistant turns so far), 'terminate failure' for the others: every trial of a task ends alike."""

    def __init__(self, solve):
        self.expert = {t.goal: [st.action for st in expert_actions(t)] for t in solve}
        self.calls = []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        self.calls.append(temperature)
        out = []
        for messages, _ in prompts:
            first = messages[0]["content"][0]["text"]
            goal = first.split("Goal: ", 1)[1].split("\n", 1)[0]
            t = sum(m["role"] == "assistant" for m in messages)
            plan = self.expert.get(goal)
            a = plan[t] if plan and t < len(plan) else Action("terminate", status="failure")
            text = format_response(a, PCFG.dialect)
            out.append(Generation(text=text, prompt_ids=np.arange(3, dtype=np.int32),
                                  response_ids=np.array([1], np.int32), logprobs=np.zeros(1, np.float32)))
        return out


def _config():
    c = ml_collections.ConfigDict()
    c.env = {"n_envs": 3, "health_interval_s": 0.0}
    c.eval = {"max_steps": 6}
    c.online = {"rollout_mode": "sync", "batch_cap": 8, "max_episode_retries": 1}
    return c


def _agent(solve):
    return types.SimpleNamespace(policy=GoalOraclePolicy(solve))


def test_trials_give_per_task_rates_and_a_task_bootstrap_interval():
    solve = TASKS[::2]                                     # 5 of 9 tasks
    greedy = evaluate_online_pool(_agent(solve), TASKS, PCFG, _config())
    assert greedy["online_success"] == {t.task_id: int(t in solve) for t in TASKS}
    assert greedy["online_SR"] == pytest.approx(5 / 9) and greedy["n"] == 9 and greedy["trials"] == 1
    assert greedy["online_SR_ci95"] == list(wilson_interval(5, 9))
    assert greedy["androidlab"]["episodes"] == 9 and greedy["androidlab"]["SR"] == pytest.approx(5 / 9)

    agent = _agent(solve)
    sampled = evaluate_online_pool(agent, TASKS, PCFG, _config(), temperature=1.0, trials=3)
    assert set(agent.policy.calls) == {1.0}
    assert sampled["n"] == 27 and sampled["rollout_report"]["completed"] == 27
    assert sampled["online_success"] == {t.task_id: float(t in solve) for t in TASKS}
    assert sampled["online_SR"] == pytest.approx(15 / 27)
    assert sampled["online_SR_ci95"] == list(bootstrap_mean_interval([float(t in solve) for t in TASKS], seed=0))
    # paired against the greedy run: same per-task outcomes → p = 1
    assert paired_p(greedy, sampled) == 1.0
    more = evaluate_online_pool(_agent(TASKS[:8]), TASKS, PCFG, _config(), temperature=1.0, trials=2)
    # tasks 0-7 solved instead of 0, 2, 4, 6, 8: 4 gained, 1 lost → 2 · (C(5,0) + C(5,1))/2⁵
    assert paired_p(greedy, more) == pytest.approx(2 * 6 / 32)


@pytest.mark.parametrize("temperature,trials,match", [(0.0, 4, "temperature > 0"), (1.0, 0, "trials must be >= 1")])
def test_bad_trial_settings_are_refused(temperature, trials, match):
    with pytest.raises(ValueError, match=match):
        evaluate_online_pool(_agent([]), TASKS, PCFG, _config(), temperature=temperature, trials=trials)


class OutcomeRM:
    """Stands in for online_rl's reward model: P(+) = 0.9 for a success, 0.2 otherwise."""

    def outcome_scores(self, records):
        return np.array([0.9 if r.success else 0.2 for r in records])


def test_online_rl_evaluation_saves_trajectories_with_the_rm_score(tmp_path):
    from gui_jax.view import load_view
    config = _config()
    config.eval.save_trajectories = 2
    res = evaluate_online_pool(_agent(TASKS[:1]), TASKS[:3], PCFG, config, save_to=str(tmp_path / "start"),
                               reward_model=OutcomeRM())
    assert res["trajectories_saved"] == 2 and res["online_success"] == {t.task_id: int(i == 0)
                                                                         for i, t in enumerate(TASKS[:3])}
    episodes, total = load_view(tmp_path)
    assert total == 2 and [e.success for e in episodes] == [True, False] and [e.rm_score for e in episodes] == [0.9, 0.2]
    assert episodes[1].steps[0].action == "terminate(status='failure')" and episodes[1].steps[0].reward == 0.0
    assert episodes[0].steps[-1].reward == 1.0  # the solved episode's outcome reward on its last step
