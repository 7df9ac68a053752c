"""Online GRPO and held-out evaluation on the device backends of the `env` block, configured as on the command line
(issue 31, items 1 and 2), with scripted policies whose responses the small agent tokenises (the update trains on
them):
- android: the stand-in uiautomator2 device (tests/support/android_device.py) behind `env.serials`;
- androidworld: two stand-in AndroidWorld env servers (tests/support/androidworld_server.py, AndroidWorld's
  endpoints and responses) behind `env.server_urls`: its task list, its scoring, the pool's failover."""
import logging
import random
import types

import numpy as np
import pytest

from gui_jax.config_check import check_config
from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action
from gui_jax.envs.factory import backend_tasks, check_reachable
from gui_jax.jobs import load_config
from gui_jax.jobs.env_eval import env_factory, evaluate_on_envs, make_tasks
from gui_jax.jobs.online_rl import evaluate_online_pool
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.online import train_online
from support.android_device import StandIn, connect_stand_ins
from support.androidworld_server import RESPONSES, AndroidWorldStandIn
from support.oracle_policy import DIALECT, small_agent

PCFG = PromptConfig(dialect=DIALECT, observation="ui_text")
WIFI = (540.0, 375.0)  # the centre of the stand-in Settings screen's Wi-Fi row


@pytest.fixture(scope="module")
def agent():
    return small_agent(layers=1)


def _small_run(o, **kw):
    o.iterations, o.episodes_per_iteration, o.num_rollouts, o.max_steps = 2, kw.get("episodes", 2), 2, 3
    o.micro_batch_size, o.checkpoint_every, o.recompute_old_logprobs = 8, 10, True


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


class Tapper:
    """Device episodes: step 0 taps Wi-Fi (by coordinates), step 1 terminates(success). `encode`: tokenised by
    the agent (training); else plain generations (evaluation reads only the text)."""

    def __init__(self, agent=None):
        self.agent, self.prompts = agent, []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for messages, images in prompts:
            self.prompts.append(messages)
            t = sum(m["role"] == "assistant" for m in messages) if self.agent is None else \
                int(messages[-1]["content"][0]["text"].rsplit("#", 1)[1])
            a = Action("click", x=WIFI[0], y=WIFI[1]) if t == 0 else Action("terminate", status="success")
            text = format_response(a, DIALECT)
            out.append(self.agent.policy.encode((messages, images), text) if self.agent is not None else
                       Generation(text=text, prompt_ids=np.arange(3, dtype=np.int32), response_ids=np.ones(1, np.int32),
                                  logprobs=np.zeros(1, np.float32)))
        return out


def device_prompt(task, history, obs):
    return [{"role": "user", "content": [{"type": "text", "text": f"{task.task_id}#{len(history)}"}]}], []


def test_grpo_and_evaluation_on_the_stand_in_device(agent, tmp_path, monkeypatch, caplog):
    device = StandIn()
    connect_stand_ins(monkeypatch, {"emulator-5554": device})
    try:
        # as `--config.env.backend=android --config.env.serials='("emulator-5554",)'` sets them
        config = load_config("configs/grpo_online.py", **{
            "env.backend": "android", "env.serials": ("emulator-5554",), "env.tasks": ("Settings|Turn on Wi-Fi",),
            "env.settle_s": 0.0, "env.connect_timeout_s": 5.0, "prompt.dialect": DIALECT})
        check_config(config)
        check_reachable(config.env)
        tasks = backend_tasks(config.env)
        assert [(t.task_id, t.goal, t.app) for t in tasks] == [("android.turn_on_wi_fi#0", "Turn on Wi-Fi", "Settings")]
        _small_run(config.online, episodes=1)
        with caplog.at_level(logging.WARNING):
            summary = train_online(agent, tasks, PCFG, config.online, env_cfg=config.env, workdir=str(tmp_path),
                                   prompt_fn=device_prompt, policy=Tapper(agent))
        rep = summary["rollout_report"]
        assert summary["iterations"] == 2 and rep["episodes"] == 2 * 1 * 2 == rep["completed"] == 4
        assert rep["env_failure"] == 0 and rep["env_steps"] == 4 * 2
        # the task has no rule check: success is the judge's (none here: reward 0), never the agent's claim
        assert rep["successes"] == 0
        rpc = [c for c in device.calls if c[0] == "click"]
        assert rpc == [("click", [540, 375])] * 4  # each episode's tap reached the device
        assert sum("monkey -p com.android.settings" in c for c in device.shell) == 4  # the app, launched per reset
        said = [r for r in caplog.records if "have no difficulty" in r.getMessage()]
        assert len(said) == 1 and "1 of 1 training tasks" in said[0].getMessage()
        # held-out evaluation through the same backend (online_rl's and env_eval's), the real prompt builder
        held_out = backend_tasks(config.env, config.env.eval_seeds)
        assert [t.task_id for t in held_out] == ["android.turn_on_wi_fi#1"]
        policy = Tapper()
        result = evaluate_online_pool(types.SimpleNamespace(policy=policy), held_out, PCFG, config)
        assert result["n"] == 1 and result["rollout_report"]["completed"] == 1 and result["online_SR"] == 0.0
        texts = [c["text"] for m in policy.prompts[0] if m["role"] == "user" for c in m["content"]]
        assert texts == ["Goal: Turn on Wi-Fi\n", "\nUI:\n[1] TextView;click,long;Wi-Fi"]  # the device's UI tree
        ev = load_config("configs/miniwob_eval.py", **{
            "env.backend": "android", "env.serials": ("emulator-5554",), "env.tasks": ("Settings|Turn on Wi-Fi",),
            "env.seeds": (0, 1, 2), "env.settle_s": 0.0, "eval.untrained": True})
        check_config(ev)
        _, table, report = evaluate_on_envs(policy, env_factory(ev.env, 4), make_tasks(ev.env), PCFG, num_envs=1,
                                            max_steps=4, env_cfg=ev.env)
        assert table["android.turn_on_wi_fi"]["n"] == 3 and report["completed"] == 3 and table["env_failures"] == 0
        assert len([c for c in device.calls if c[0] == "click"]) == 4 + 1 + 3
    finally:
        device.server.shutdown()


def test_grpo_on_androidworld_accounts_for_every_episode(agent, tmp_path, caplog):
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
        _small_run(o)
        assert o.curriculum  # AndroidWorld tasks have no difficulty: one level
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
