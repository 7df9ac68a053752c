"""Online GRPO against AndroidWorld's env server (item 2 of issue 31): two stand-in servers replaying AndroidWorld's
responses (tests/support/androidworld_server.py), reached through the `env` block's androidworld backend (its task
list from the server, dns-free URLs, the pool's failover). A scripted policy clicks each task's solving point in
about half its rollouts, so groups differ and GRPO trains; one emulator fault is absorbed by a re-run."""
import logging
import random

import pytest

from gui_jax.config_check import check_config
from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action
from gui_jax.envs.factory import backend_tasks, check_reachable
from gui_jax.jobs import load_config
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.online import train_online
from support.androidworld_server import RESPONSES, AndroidWorldStandIn
from support.oracle_policy import DIALECT, small_agent

PCFG = PromptConfig(dialect=DIALECT, observation="ui_text")


def prompt(task, history, obs):
    return [{"role": "user", "content": [{"type": "text", "text": f"{task.task_type}#{len(history)}"}]}], []


class HalfSolver:
    """Step 0: the task's solving click (probability ½, seeded by sampler seed, row and prompt) or a miss;
    step 1: terminate(success). Responses are tokenised by the agent, so the update trains on them."""

    def __init__(self, agent):
        self.agent = agent

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for i, (messages, images) in enumerate(prompts):
            text = messages[-1]["content"][0]["text"]
            task_type, t = text.rsplit("#", 1)
            if int(t) == 0:
                x, y = RESPONSES["solving_click"][task_type]
                hit = random.Random(f"{seed}:{i}:{text}").random() < 0.5
                a = Action("click", x=float(x), y=float(y)) if hit else Action("click", x=5.0, y=5.0)
            else:
                a = Action("terminate", status="success")
            out.append(self.agent.policy.encode((messages, images), format_response(a, DIALECT)))
        return out


def test_grpo_on_androidworld_accounts_for_every_episode(tmp_path, caplog):
    with AndroidWorldStandIn() as a, AndroidWorldStandIn(fail_execute=1) as b:
        config = load_config("configs/grpo_online.py", **{
            "env.backend": "androidworld", "env.server_urls": (a.url, b.url), "env.n_envs": 2,
            "env.seeds": (0, 1), "env.eval_seeds": (1,), "env.reset_timeout_s": 30.0, "env.call_timeout_s": 30.0})
        check_config(config)
        check_reachable(config.env)
        tasks = backend_tasks(config.env)  # the server's suite × env.seeds
        assert [t.task_id for t in tasks] == ["androidworld.ClockStopWatchRunning#0", "androidworld.ClockStopWatchRunning#1",
                                              "androidworld.SystemWifiTurnOn#0", "androidworld.SystemWifiTurnOn#1"]
        o = config.online
        o.iterations, o.episodes_per_iteration, o.num_rollouts, o.max_steps = 2, 2, 2, 3
        o.micro_batch_size, o.checkpoint_every, o.recompute_old_logprobs = 8, 10, True
        assert o.curriculum  # AndroidWorld tasks have no difficulty: one level
        agent = small_agent()
        with caplog.at_level(logging.WARNING):
            summary = train_online(agent, tasks, PCFG, o, env_cfg=config.env, workdir=str(tmp_path),
                                   prompt_fn=prompt, policy=HalfSolver(agent))
        rep = summary["rollout_report"]
        assert summary["iterations"] == 2
        assert rep["episodes"] == 2 * 2 * 2 == rep["completed"] + rep["env_failure"]
        assert rep["completed"] == 8 and rep["env_failure"] == 0
        assert rep["failed_attempts"] == 1 and rep["retried"] == 1  # the 500 was re-run on a fresh env
        calls = a.routes() + b.routes()
        # every attempt initialised a task; every completed episode was scored by the server, once
        assert calls.count("POST /task/initialize") == 8 + 1
        assert calls.count("GET /task/score") == 8
        solved = sum(1 for srv in (a, b) for r, q in srv.calls if r == "POST /execute_action"
                     and [q["action"].get("x"), q["action"].get("y")] in RESPONSES["solving_click"].values())
        assert rep["successes"] == solved and 0 < solved < 8  # the server's scoring is the reward
        said = [r for r in caplog.records if "have no difficulty" in r.getMessage()]
        assert len(said) == 1 and "4 of 4 training tasks" in said[0].getMessage()
