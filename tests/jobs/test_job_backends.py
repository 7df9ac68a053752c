"""evaluate, verifier_eval and self_improve on `env.backend = androidworld` (issue 31), configured as on the command
line: envs and tasks come from gui_jax/envs/factory.py, against the AndroidWorld stand-in (its endpoints, its
scoring: tests/support/androidworld_server.py). No model is compiled (each test takes a second or two): the jobs'
agent is a scripted policy that solves SystemWifiTurnOn only (its solving click, then terminate), read from the
real prompts; a scripted proposer, whose scorer ranks the solving click first, plays the verifier and the beam
search (solved exactly where n reaches that click)."""
import json
import os

import numpy as np
import pytest

from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action
from gui_jax.jobs import evaluate as evaluate_job
from gui_jax.jobs import load_config
from gui_jax.jobs import self_improve as si
from gui_jax.jobs import verifier_eval as ve
from gui_jax.rl.policy import Generation
from support.androidworld_server import RESPONSES, AndroidWorldStandIn
from support.fake_policy import goal_and_step

TINY = {"data.num_train_episodes": 2, "data.num_test_episodes": 1, "data.templates": ("music.play",),
        "data.train_seed_range": (0, 4), "data.test_seed_range": (1000, 1002), "data.resolution": (112, 252),
        "model.checkpoint": "", "model.num_hidden_layers": 1, "model.vision_depth": 1, "model.max_new_tokens": 8}
TYPES = ("SystemWifiTurnOn", "ClockStopWatchRunning")
GOAL_TYPE = {g["goal"]: t for t, goals in RESPONSES["GET /task/goal"].items() for g in goals}
MISS = Action("click", x=5.0, y=5.0)


def env_fields(url, **extra):
    return {"env.backend": "androidworld", "env.server_urls": (url,), "env.tasks": TYPES, "env.seeds": (0,),
            "env.eval_seeds": (1,), "env.n_envs": 1, "env.health_interval_s": 0.0, **extra}


def propose(goal, history, obs, n, rng):
    """Step 0: a miss, then the task's solving click; later steps: terminate(success)."""
    if history:
        return [Action("terminate", status="success")] * n
    x, y = RESPONSES["solving_click"][GOAL_TYPE[goal]]
    return ([MISS, Action("click", x=float(x), y=float(y))] * n)[:n]


def scorer(goal, history, obs, actions):
    return [0.0 if a == MISS else 1.0 for a in actions]


class Solver:
    """The jobs' policy: on a SystemWifiTurnOn goal its solving click at step 0, on other AndroidWorld goals a miss,
    then terminate(success); on PhoneSim screens (SOP) terminate(failure)."""

    def __init__(self, dialect):
        self.dialect, self.seen = dialect, []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for messages, _ in prompts:
            goal, t = goal_and_step(messages)
            self.seen.append((goal, t))
            if goal not in GOAL_TYPE:
                a = Action("terminate", status="failure")
            elif t > 0:
                a = Action("terminate", status="success")
            else:
                x, y = RESPONSES["solving_click"][GOAL_TYPE[goal]]
                a = Action("click", x=float(x), y=float(y)) if GOAL_TYPE[goal] == "SystemWifiTurnOn" else MISS
            out.append(Generation(text=format_response(a, self.dialect), prompt_ids=np.zeros(3, np.int32),
                                  response_ids=np.zeros(1, np.int32), logprobs=np.zeros(1, np.float32)))
        return out


class ScriptedAgent:
    """Stands in for gui_jax.rl.agent.Agent in the jobs (policy, params)."""

    def __init__(self, config, seed=0):
        self.policy, self.params = Solver(config.prompt.dialect), {}


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr("gui_jax.rl.agent.Agent", ScriptedAgent)
    with AndroidWorldStandIn() as s:
        yield s


def test_evaluate_runs_its_online_episodes_on_androidworld(server, tmp_path):
    cfg = load_config("configs/evaluate.py", **TINY, **env_fields(server.url), **{
        "eval.untrained": True, "eval.max_steps": 2, "eval.step_metrics": False})
    evaluate_job.run(cfg, str(tmp_path))
    res = json.load(open(tmp_path / "eval.json"))
    assert res["online_env"] == "androidworld"
    assert res["online_task_ids"] == [f"androidworld.{t}#0" for t in TYPES]   # env.tasks × env.seeds
    assert res["online_success"] == [1, 0] and res["online_SR"] == 0.5            # the server's scores
    assert res["online_steps_to_success"] == 2.0
    assert res["SOP_episodes"] == 1                                          # SOP: the split's expert episode
    routes = server.routes()
    assert routes.count("POST /task/initialize") == 2 == routes.count("GET /task/score")
    assert [q["task_type"] for r, q in server.calls if r == "POST /task/initialize"] == list(TYPES)


def test_verifier_eval_on_androidworld_solves_where_n_reaches_the_solving_click(server, tmp_path, monkeypatch):
    monkeypatch.setattr(ve, "policy_proposer", lambda *a, **kw: propose)
    monkeypatch.setattr(ve, "rm_step_scorer", lambda *a, **kw: scorer)
    cfg = load_config("configs/verifier_eval.py", **TINY, **env_fields(server.url), **{
        "verifier.rm_untrained": True, "verifier.ns": (1, 2), "verifier.max_steps": 3,
        "verifier.greedy_baseline": True, "verifier.progress": False})
    ve.run(cfg, str(tmp_path))
    res = json.load(open(tmp_path / "results.json"))
    assert res["task_ids"] == [f"androidworld.{t}#0" for t in TYPES]
    n1, n2, greedy = res["by_n"]["1"], res["by_n"]["2"], res["greedy"]
    assert (n1["success"], n1["steps"]) == ([0, 0], [2, 2])       # the miss, then terminate: scored 0
    assert (n2["success"], n2["steps"]) == ([1, 1], [2, 2])       # the solving click, then terminate: scored 1
    assert (n2["gained_vs_n1"], n2["mcnemar_p_vs_n1"]) == (2, 0.5)
    assert (greedy["success"], greedy["steps"]) == ([1, 0], [2, 2])   # the scripted policy, greedy, no verifier
    routes = server.routes()
    assert routes.count("POST /task/initialize") == 2 * 2 + 2 == routes.count("GET /task/score")  # n ∈ {1, 2}, greedy
    assert "held-out androidworld tasks" in (tmp_path / "results.md").read_text()


def test_self_improve_on_androidworld_evaluates_and_synthesises_on_the_server(server, tmp_path, monkeypatch):
    monkeypatch.setattr(si, "policy_proposer", lambda *a, **kw: propose)
    monkeypatch.setattr(si, "rm_step_scorer", lambda *a, **kw: scorer)
    tuned = []
    monkeypatch.setattr("gui_jax.train.sft.train_sft", lambda agent, episodes, *a, **kw: tuned.append(episodes))
    cfg = load_config("configs/self_improve.py", **TINY, **env_fields(server.url), **{
        "sft.num_steps": 0, "self_improve.rounds": 1, "self_improve.tasks_per_round": 2,
        "self_improve.synth_seed_range": (0, 1), "self_improve.beam_width": 2, "self_improve.num_candidates": 2,
        "self_improve.max_steps": 2, "self_improve.rm_untrained": True, "self_improve.progress": False,
        "self_improve.rm_retrain": False})
    cfg.self_improve.sft.update({"num_steps": 1, "batch_size": 2, "micro_batch_size": 2, "checkpoint_every": 0})
    wd = str(tmp_path / "si")
    si.run(cfg, wd)
    res = json.load(open(os.path.join(wd, "results.json")))
    assert res["task_ids"] == [f"androidworld.{t}#1" for t in TYPES]   # held out: env.tasks × env.eval_seeds
    r0, r1 = res["rounds"]["0"], res["rounds"]["1"]
    assert (r0["episodes"], r0["success"], r1["success"]) == (2, [1, 0], [1, 0])
    assert (r0["synth_searched"], r0["synth_successes"]) == (2, 2)   # env.tasks × the round's seed (0)
    eps, key, _ = si.load_synth(os.path.join(wd, "round_0", "synth"))
    assert key["searched"] == [f"androidworld.{t}#0" for t in TYPES]
    for ep, t in zip(eps, TYPES):   # the beam kept the solving click, then terminate
        x, y = RESPONSES["solving_click"][t]
        assert [(a.type, a.x, a.y) for a in ep.actions] == [("click", x, y), ("terminate", None, None)]
    assert len(tuned) == 1 and [e.episode_id for e in tuned[0][-2:]] == [e.episode_id for e in eps]  # SFT on them
    assert "held-out androidworld tasks" in open(os.path.join(wd, "results.md")).read()


def test_phonesim_env_tasks_train_on_no_held_out_instance(tmp_path):
    """online_rl with PhoneSim's env.tasks × env.seeds: other seeds repeat held-out instances (tasks.complete has
    16), so the train tasks drop every instance of env.eval_seeds' tasks; none left is an error naming env.seeds."""
    from gui_jax.config_check import RunError
    from gui_jax.jobs.online_rl import episode_tasks
    from gui_jax.tasks.splits import instance_key
    over = {"env.backend": "phonesim", "env.tasks": ("tasks.complete",), "env.seeds": tuple(range(40)),
            "env.eval_seeds": tuple(range(1000, 1010)), "init.checkpoint_dir": "unused",
            "data.templates": ("tasks.complete",)}
    train, test, _ = episode_tasks(load_config("configs/grpo_online.py", **over), str(tmp_path))
    held = {instance_key(t) for t in test}
    assert len(test) == 10 and 0 < len(train) < 40 and not any(instance_key(t) in held for t in train)
    from gui_jax.envs.sim import make_task
    assert [t.task_id for t in train] == [t.task_id for t in (make_task("tasks.complete", s) for s in range(40))
                                          if instance_key(t) not in held]
    with pytest.raises(RunError, match="env.seeds: every train task"):
        episode_tasks(load_config("configs/grpo_online.py", **{**over, "env.seeds": (1000, 1001)}), str(tmp_path))
