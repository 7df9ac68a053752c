"""The env evaluation job's core runs any MiniWob++ task list through the rollout engine and reports per-task
SR with Wilson intervals (scripted expert policy: every page solved; a quitter: none)."""
import numpy as np
import pytest

from gui_jax.core.dialects import format_response, parse_response
from gui_jax.core.types import Action
from gui_jax.eval.metrics import wilson_interval
from gui_jax.jobs import load_config
from gui_jax.jobs.env_eval import env_factory, evaluate_on_envs, format_table, make_tasks
from gui_jax.envs.miniwob_experts import expert_actions
from gui_jax.rl.policy import Generation


class ExpertPolicy:
    """Plays the scripted MiniWob expert (planned from the first screen); `quit=True` gives up at once."""

    def __init__(self, quit=False):
        self.plans, self.quit = {}, quit

    def prompt_fn(self, task, history, obs):
        if not history:
            self.plans[task.task_id] = expert_actions(task, obs)
        return [{"role": "user", "content": [{"type": "text", "text": f"{task.task_id}|{len(history)}"}]}], []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for messages, _ in prompts:
            tid, t = messages[0]["content"][0]["text"].rsplit("|", 1)
            plan = self.plans[tid]
            a = Action("terminate", status="failure") if self.quit or int(t) >= len(plan) else plan[int(t)]
            out.append(Generation(text=format_response(a, "ui_genie"), prompt_ids=np.zeros(1, np.int32),
                                  response_ids=np.zeros(1, np.int32), logprobs=np.zeros(1, np.float32)))
        return out


def test_miniwob_task_list_per_task_sr_with_ci():
    cfg = load_config("configs/miniwob_eval.py")
    ecfg = cfg.env
    ecfg.tasks, ecfg.seeds, ecfg.n_envs = ("click-test", "enter-text", "click-option"), (0, 1), 1
    tasks = make_tasks(ecfg)
    assert [t.task_id for t in tasks[:2]] == ["miniwob.click-test#0", "miniwob.click-test#1"]
    parse = lambda text, obs: parse_response(text, "ui_genie")[1]  # noqa: E731  (task pixels already)
    policy = ExpertPolicy()
    _, table, report = evaluate_on_envs(policy, env_factory(ecfg, 6), tasks, None, num_envs=1, max_steps=6,
                                        prompt_fn=policy.prompt_fn, parse_fn=parse)
    for name in ("miniwob.click-test", "miniwob.enter-text", "miniwob.click-option"):
        assert table[name]["n"] == 2 and table[name]["SR"] == 1.0
        assert table[name]["ci95"] == pytest.approx(list(wilson_interval(2, 2)))
    assert table["overall"]["successes"] == 6 and table["env_failures"] == 0
    assert report["completed"] == 6
    quitter = ExpertPolicy(quit=True)
    ecfg.tasks = ("click-button",)
    _, table, _ = evaluate_on_envs(quitter, env_factory(ecfg, 6), make_tasks(ecfg), None, num_envs=1, max_steps=6,
                                   prompt_fn=quitter.prompt_fn, parse_fn=parse)
    assert table["miniwob.click-button"]["SR"] == 0.0
    assert "| miniwob.click-button | 2 | 0.000 [0.000, 0.658] |" in format_table(table)


def test_unknown_backend_and_task_names_fail_clearly():
    ecfg = load_config("configs/miniwob_eval.py").env
    ecfg.tasks = ("click-tset",)
    with pytest.raises(ValueError, match="config.env.tasks = \\('click-tset',\\): unknown MiniWob\\+\\+ task 'click-tset'"):
        make_tasks(ecfg)
    ecfg.backend = "nope"
    with pytest.raises(ValueError, match="config.env.backend = 'nope': not one of phonesim, remote, miniwob, android"):
        make_tasks(ecfg)
