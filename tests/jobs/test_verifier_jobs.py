"""The verifier_eval and self_improve jobs (issue: reward models, uses of the RM).

(a) best-of-n with a scorer that ranks the oracle's action first: SR 1.0 once n includes it; n = 1 equals the
    plain rollout of the first proposal; results.json holds hand-computed counts, Wilson bounds and McNemar p;
    the job end to end with the tiny policy: n = 1 at temperature 0 equals the greedy online evaluation; the RM
    as a live step scorer scores a batch as it scores one by one.
(b) self_improve runs end to end (tiny policy, oracle-guided beam search, real SFT) and resumes per round; with
    rm_retrain the RM's data grows each round by exactly the records that round's search produced.
(c) bad configs raise ConfigError naming the field.
"""
import json
import math
import os

import numpy as np
import pytest

from gui_jax.config_check import ConfigError
from gui_jax.core.types import Action
from gui_jax.envs.sim import expert_actions, make_task
from gui_jax.jobs import load_config
from gui_jax.jobs import self_improve as si
from gui_jax.jobs import verifier_eval as ve

TINY = {"data.num_train_episodes": 2, "data.num_test_episodes": 2, "data.templates": ("music.play", "tasks.complete"),
        "data.train_seed_range": (0, 4), "data.test_seed_range": (1000, 1002), "data.resolution": (112, 252),
        "model.checkpoint": "", "model.num_hidden_layers": 1, "model.vision_depth": 1, "model.max_new_tokens": 8}
Z = 1.959963984540054
TASKS = [make_task("music.play", 400), make_task("tasks.complete", 400), make_task("clock.alarm_toggle", 402)]
ORACLE_AT = 2   # index of the oracle's action among the proposals


def _oracle(goal, t):
    task = next(x for x in TASKS if x.goal == goal)
    steps = expert_actions(task)
    return steps[t].action if t < len(steps) else Action("terminate", status="failure")


def _first(goal, t):
    """What the plain (n = 1) policy does: the oracle on the first task, Home on the others."""
    return _oracle(goal, t) if goal == TASKS[0].goal else Action("system_button", button="Home")


def stub_propose(goal, history, obs, n, rng):
    t = len(history)
    cands = [_first(goal, t), Action("wait", time=1.0), _oracle(goal, t)] + [Action("wait", time=2.0)] * 13
    return cands[:n]


def oracle_scorer(goal, history, obs, actions):
    return [1.0 if a == _oracle(goal, len(history)) else 0.0 for a in actions]


def _wilson(k, n):  # written out independently of eval/metrics.py
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def test_oracle_ranked_first_solves_every_task_once_n_includes_it(tmp_path):
    make_env = ve.sim_factory((112, 252), 5, render=False)
    outcomes = ve.verifier_outcomes(TASKS, make_env, stub_propose, oracle_scorer, (1, 2, 4, 8), max_steps=5, seed=3)
    summary = ve.summarise(outcomes)
    # the plain rollout of the first proposal, by hand
    plain = []
    for task in TASKS:
        env, done, t, info = make_env(), False, 0, {}
        env.reset(task)
        while not done:
            _, done, info = env.step(_first(task.goal, t))
            t += 1
        plain.append(int(info.get("success", False)))
    assert plain == [1, 0, 0]
    out = ve.write_results(summary, str(tmp_path), extra={"seed": 3})
    saved = json.load(open(tmp_path / "results.json"))
    assert saved == json.loads(json.dumps(out))
    by_n = saved["by_n"]
    assert saved["task_ids"] == [t.task_id for t in TASKS]
    # each n as a stage the experiment runner pairs by task (experiments/verifier_n.py)
    assert set(saved["stages"]) == {"n=1", "n=2", "n=4", "n=8"}
    assert saved["stages"]["n=4"] == {"online_success": [1, 1, 1], "online_task_ids": saved["task_ids"]}
    assert saved["stages"]["n=1"]["online_success"] == plain
    assert by_n["1"]["success"] == plain == by_n["2"]["success"]     # no oracle among 1 or 2 proposals
    assert by_n["4"]["success"] == by_n["8"]["success"] == [1, 1, 1]
    for n, k in ((1, 1), (2, 1), (4, 3), (8, 3)):
        r = by_n[str(n)]
        assert (r["n"], r["successes"], r["episodes"], r["SR"]) == (n, k, 3, k / 3)
        np.testing.assert_allclose(r["ci95"], _wilson(k, 3), rtol=0, atol=1e-12)
    np.testing.assert_allclose(by_n["4"]["ci95"], [0.43850, 1.0], atol=1e-5)   # 3/3
    np.testing.assert_allclose(by_n["1"]["ci95"], [0.06149, 0.79235], atol=1e-5)   # 1/3
    # vs n = 1: 0 lost, 2 gained → exact McNemar p = 2 · P(Bin(2, ½) ≤ 0) = 0.5
    assert (by_n["4"]["lost_vs_n1"], by_n["4"]["gained_vs_n1"], by_n["4"]["mcnemar_p_vs_n1"]) == (0, 2, 0.5)
    assert by_n["1"]["mcnemar_p_vs_n1"] == 1.0
    n_oracle = [len(expert_actions(t)) for t in TASKS]
    assert by_n["8"]["steps"] == n_oracle and by_n["1"]["steps"] == [n_oracle[0], 5, 5]
    assert "| 4 | 1.000 [0.439, 1.000] | 3/3 | +0.667 (0/2, p=0.5) |" in (tmp_path / "results.md").read_text()
    # deterministic for one seed
    again = ve.summarise(ve.verifier_outcomes(TASKS, make_env, stub_propose, oracle_scorer, (1, 2, 4, 8),
                                              max_steps=5, seed=3))
    assert again == summary


def test_verifier_job_at_n1_greedy_equals_the_online_eval_and_rm_batches_equal_singles(tmp_path):
    from gui_jax.jobs.reward_model import rm_configs
    cfg = load_config("configs/verifier_eval.py", **{**TINY, "verifier.rm_untrained": True, "verifier.ns": (1, 2),
                                                     "verifier.temperature": 0.0, "verifier.max_steps": 2,
                                                     "verifier.greedy_baseline": True, "verifier.progress": False})
    ve.run(cfg, str(tmp_path))
    res = json.load(open(tmp_path / "results.json"))
    assert res["policy"]["kind"] == "untrained" and res["reward_model"]["kind"] == "untrained"
    n1, g = res["by_n"]["1"], res["greedy"]
    assert len(res["task_ids"]) == 2 and len(n1["success"]) == 2
    # the tiny policy as a proposer, n = 1 at temperature 0, is the plain greedy online evaluation
    assert (n1["success"], n1["steps"]) == (g["success"], g["steps"])
    assert (g["lost_vs_n1"], g["gained_vs_n1"], g["mcnemar_p_vs_n1"]) == (0, 0, 1.0)
    assert "| greedy, no verifier |" in (tmp_path / "results.md").read_text()
    # the RM scores candidates of a live partial trajectory; a batch equals one-by-one scoring
    rm, _ = ve.load_reward_model(cfg, "verifier")
    pcfg, rcfg = rm_configs(cfg)
    score_many = ve.rm_step_scorer(rm, pcfg, rcfg)
    env = ve.sim_factory((112, 252), 5, render=False)()
    obs0 = env.reset(TASKS[0])
    a0 = _oracle(TASKS[0].goal, 0)
    obs1, _, _ = env.step(a0)
    cands = [_oracle(TASKS[0].goal, 1), Action("system_button", button="Back"), Action("terminate", status="success")]
    batch = score_many(TASKS[0].goal, [(obs0, a0)], obs1, cands)
    singles = [score_many(TASKS[0].goal, [(obs0, a0)], obs1, [c])[0] for c in cands]
    assert len(batch) == 3 and all(0.0 < p < 1.0 for p in batch)
    np.testing.assert_allclose(batch, singles, rtol=0, atol=1e-5)


def _si_config(**extra):
    over = {**TINY, "sft.num_steps": 0, "self_improve.rounds": 1, "self_improve.tasks_per_round": 2,
            "self_improve.synth_seed_range": (400, 402), "self_improve.beam_width": 2,
            "self_improve.num_candidates": 3, "self_improve.max_steps": 4, "self_improve.rm_untrained": True,
            "self_improve.progress": False, "self_improve.rm_retrain": False, **extra}
    cfg = load_config("configs/self_improve.py", **over)
    cfg.self_improve.sft.update({"num_steps": 2, "batch_size": 2, "micro_batch_size": 2, "checkpoint_every": 0})
    return cfg


def test_self_improve_runs_a_round_and_resumes_without_redoing_it(tmp_path, monkeypatch):
    import gui_jax.eval.online_success as online
    import gui_jax.train.sft as sft
    calls = {"eval": 0, "sft": 0, "search": 0}

    def counting(name, fn):
        def wrapped(*a, **kw):
            calls[name] += 1
            return fn(*a, **kw)
        return wrapped
    monkeypatch.setattr(online, "run_online_episodes", counting("eval", online.run_online_episodes))
    monkeypatch.setattr(sft, "train_sft", counting("sft", sft.train_sft))
    monkeypatch.setattr(si, "synthesise", counting("search", si.synthesise))
    # beam search proposes the stub's candidates and the oracle scorer ranks the expert action first
    monkeypatch.setattr(si, "policy_proposer", lambda *a, **kw: stub_propose)
    monkeypatch.setattr(si, "rm_step_scorer", lambda *a, **kw: oracle_scorer)
    cfg, wd = _si_config(), str(tmp_path / "si")
    si.run(cfg, wd)
    assert calls == {"eval": 2, "sft": 1, "search": 1}
    res = json.load(open(os.path.join(wd, "results.json")))
    held = [make_task(t.split("#")[0], int(t.split("#")[1])) for t in res["task_ids"]]
    searched = [t.task_id for t in si.synth_tasks(cfg, 0, held_out=held)]
    assert len(searched) == 2 and set(searched) <= {t.task_id for t in TASKS}
    assert sorted(res["rounds"]) == ["0", "1"] and res["task_ids"] == json.load(
        open(os.path.join(wd, "round_0", "eval.json")))["task_ids"]
    r0, r1 = res["rounds"]["0"], res["rounds"]["1"]
    assert (r0["synth_searched"], r0["synth_successes"], r0["episodes"]) == (2, 2, 2)
    assert r0["synth_by_template"] == {t.split("#")[0]: [1, 1] for t in searched} and r1["synth_by_template"] == {}
    assert r0["ci95"] == pytest.approx(_wilson(r0["successes"], 2), abs=1e-12)
    b = sum(x and not y for x, y in zip(r0["success"], r1["success"]))
    c = sum(y and not x for x, y in zip(r0["success"], r1["success"]))
    p = min(1.0, 2 * sum(math.comb(b + c, i) for i in range(min(b, c) + 1)) / 2 ** (b + c))
    assert (r1["lost_vs_round0"], r1["gained_vs_round0"], r1["mcnemar_p_vs_round0"]) == (b, c, p)
    eps, key, _ = si.load_synth(os.path.join(wd, "round_0", "synth"))
    for ep in eps:  # the synthesised trajectory is the oracle's
        task = next(t for t in TASKS if t.goal == ep.goal)
        assert ep.actions == [s.action for s in expert_actions(task)]
        assert len(ep.observations) == len(ep.actions) + 1
    assert os.path.isdir(os.path.join(wd, "round_0", "sft", "checkpoints", "2"))
    # a second invocation redoes nothing
    stamps = {p: os.stat(os.path.join(wd, p)).st_mtime_ns
              for p in ("round_0/eval.json", "round_0/synth/synth.json", "round_1/eval.json")}
    si.run(cfg, wd)
    assert calls == {"eval": 2, "sft": 1, "search": 1}
    assert {p: os.stat(os.path.join(wd, p)).st_mtime_ns for p in stamps} == stamps
    assert json.load(open(os.path.join(wd, "results.json")))["rounds"] == res["rounds"]
    # an interrupted round 1 resumes from round 0's fine-tuned weights: only its evaluation runs again
    os.remove(os.path.join(wd, "round_1", "eval.json"))
    si.run(cfg, wd)
    assert calls == {"eval": 3, "sft": 1, "search": 1}
    assert json.load(open(os.path.join(wd, "results.json")))["rounds"] == res["rounds"]


def test_self_improve_expert_only_control_fine_tunes_the_same_rounds_without_search(tmp_path, monkeypatch):
    """self_improve.synthesise=False (the control UI-Genie's rise is measured against): every round evaluates and
    fine-tunes on the expert episodes alone with the same SFT steps; nothing is searched and no reward model is
    loaded (rm_untrained False and no RM source: none is needed)."""
    import gui_jax.train.sft as sft
    seen = []
    real = sft.train_sft

    def recording(agent, episodes, *a, **kw):
        seen.append(sorted(e.episode_id for e in episodes))
        return real(agent, episodes, *a, **kw)
    monkeypatch.setattr(sft, "train_sft", recording)
    monkeypatch.setattr(si, "synthesise", lambda *a, **kw: pytest.fail("the control searched"))
    monkeypatch.setattr(si, "load_reward_model", lambda *a, **kw: pytest.fail("the control loaded an RM"))
    cfg = _si_config(**{"self_improve.rounds": 2, "self_improve.synthesise": False,
                        "self_improve.rm_untrained": False})
    wd = str(tmp_path / "control")
    si.run(cfg, wd)
    res = json.load(open(os.path.join(wd, "results.json")))
    assert sorted(res["rounds"]) == ["0", "1", "2"]
    assert [res["rounds"][r]["synth_searched"] for r in ("0", "1")] == [0, 0]
    for r in ("0", "1", "2"):  # each round's per-task outcomes as the experiment runner reads a stage
        assert res["stages"][f"round_{r}"] == {"online_task_ids": res["task_ids"],
                                               "online_success": res["rounds"][r]["success"]}
    expert = sorted(e.episode_id for e in si.common.prepare(cfg, wd, sides=("train",))[2])
    assert seen == [expert, expert]  # rounds 0 and 1 fine-tune on exactly the expert episodes
    with pytest.raises(ConfigError, match=r"self_improve.rm_retrain.*synthesise=False"):
        si.run(_si_config(**{"self_improve.synthesise": False, "self_improve.rm_retrain": True}), str(tmp_path / "x"))


def test_self_improve_expert_templates_narrow_the_expert_episodes_alone(tmp_path, monkeypatch):
    """self_improve.expert_templates: every round fine-tunes on expert episodes of those templates only, while the
    held-out tasks and the search keep data.templates (the tasks the expert data lacks are searched and scored)."""
    import gui_jax.eval.online_success as online
    import gui_jax.train.sft as sft
    seen, evaluated = [], []
    real_sft, real_eval = sft.train_sft, online.run_online_episodes

    def recording(agent, episodes, *a, **kw):
        seen.append(sorted({e.template for e in episodes}))
        return real_sft(agent, episodes, *a, **kw)

    def scored(policy, tasks, *a, **kw):
        evaluated.append(sorted({t.template for t in tasks}))
        return real_eval(policy, tasks, *a, **kw)
    monkeypatch.setattr(sft, "train_sft", recording)
    monkeypatch.setattr(online, "run_online_episodes", scored)
    cfg = _si_config(**{"self_improve.synthesise": False, "self_improve.rm_untrained": False,
                        "self_improve.expert_templates": ("music.play",)})
    si.run(cfg, str(tmp_path / "narrow"))
    assert seen == [["music.play"]]
    assert evaluated == [["music.play", "tasks.complete"]] * 2
    assert sorted({t.template for t in si.synth_tasks(cfg, 0)}) == ["music.play", "tasks.complete"]
    plain = _si_config()
    assert si.expert_config(plain) is plain and si.expert_config(cfg).data.templates == ("music.play",)
    assert tuple(cfg.data.templates) == ("music.play", "tasks.complete")  # the job's own config is untouched


def test_search_tasks_skip_every_held_out_instance():
    """PhoneSim repeats instances (template, goal, parameters) across seeds, so disjoint seed ranges do not keep the
    search off the held-out tasks: synth_tasks drops every instance a held-out task has, and still fills the round."""
    from gui_jax.tasks.splits import instance_key
    cfg = _si_config(**{"data.templates": ("tasks.complete",), "self_improve.synth_seed_range": (400, 440),
                        "self_improve.tasks_per_round": 10})
    held = [make_task("tasks.complete", s) for s in range(1000, 1010)]
    keys = {instance_key(t) for t in held}
    assert any(instance_key(t) in keys for t in si.synth_tasks(cfg, 0))   # what the seeds alone let through
    kept = si.synth_tasks(cfg, 0, held_out=held)
    assert len(kept) == 10 and not any(instance_key(t) in keys for t in kept)
    assert all(400 <= t.seed < 440 for t in kept)


def test_synthesis_reach_by_template_counts_searched_tasks_and_their_successes():
    synth = {"searched": ["music.play#400", "clock.alarm_toggle#401", "music.play#402"],
             "episode_ids": ["music.play#402@beam"], "successes": 1}
    assert si.synth_by_template(synth) == {"clock.alarm_toggle": [0, 1], "music.play": [1, 2]}
    assert si.synth_by_template(None) == {} and si.synth_by_template({"searched": ["task-3"]}) == {}
    row = {"SR": 0.5, "successes": 1, "episodes": 2, "ci95": [0.1, 0.9], "synth_successes": 1, "synth_searched": 3,
           "synth_by_template": si.synth_by_template(synth)}
    table = si.format_rounds({"0": row, "1": {**row, "synth_by_template": {}, "lost_vs_round0": 0,
                                              "gained_vs_round0": 0, "mcnemar_p_vs_round0": 1.0}})
    assert "| template | round 0 |" in table and "| clock.alarm_toggle | 0/1 |" in table
    assert "| music.play | 1/2 |" in table


@pytest.mark.parametrize("failed_outcomes", [True, False])
def test_self_improve_co_evolution_grows_the_rm_data_by_each_rounds_records(tmp_path, monkeypatch, failed_outcomes):
    """... and with self_improve.rm_failed_outcomes=False by the successes' records alone."""
    import gui_jax.train.rm_training as rmt
    from gui_jax.rewards import data_engine as de
    calls = {"rm": 0}
    real = rmt.train_reward_model

    def counting(*a, **kw):
        calls["rm"] += 1
        return real(*a, **kw)
    monkeypatch.setattr(rmt, "train_reward_model", counting)
    cfg = _si_config(**{"self_improve.rounds": 2, "self_improve.rm_retrain": True,
                        "self_improve.synth_seed_range": (400, 404), "sft.num_steps": 0,
                        "self_improve.rm_failed_outcomes": failed_outcomes})
    tasks = {t.goal: t for r in (0, 1) for t in si.synth_tasks(cfg, r)}

    def oracle(goal, t):
        steps = expert_actions(tasks[goal])
        return steps[t].action if t < len(steps) else Action("terminate", status="failure")

    def propose(goal, history, obs, n, rng):   # a wrong terminate first, so every search also fails once
        return [Action("terminate", status="success"), oracle(goal, len(history)), Action("wait", time=1.0)][:n]
    monkeypatch.setattr(si, "policy_proposer", lambda *a, **kw: propose)
    monkeypatch.setattr(si, "rm_step_scorer", lambda *a, **kw: lambda goal, history, obs, actions: [
        1.0 if a == oracle(goal, len(history)) else 0.5 if a.type == "terminate" else 0.0 for a in actions])
    cfg.self_improve.rm_train.update({"num_steps": 1, "batch_size": 2, "micro_batch_size": 2, "checkpoint_every": 0,
                                      "warmup_steps": 0})
    wd = str(tmp_path / "si")
    si.run(cfg, wd)
    assert calls["rm"] == 2
    before = None
    for r in (0, 1):
        rd = os.path.join(wd, f"round_{r}")
        eps, _, failed = si.load_synth(os.path.join(rd, "synth"))
        produced = de.synthesis_records(eps, failed if failed_outcomes else [])
        assert len(eps) == 2 and len(failed) >= 2   # both tasks solved; the early terminates failed
        # 3-step oracle successes: 3 + 1 + 1 truncation; each failed search one negative outcome (if kept)
        assert len(produced) == 5 * len(eps) + (len(failed) if failed_outcomes else 0)
        now = de.read_records(os.path.join(rd, "rm_records.jsonl"))
        counts = json.load(open(os.path.join(rd, "rm_data.json")))
        if before is None:
            before = now[:counts["base"]]
        assert [x.to_json() for x in now] == [x.to_json() for x in before + produced]
        assert (counts["produced"], counts["total"]) == (len(produced), len(now))
        assert os.path.isdir(os.path.join(rd, "rm", "checkpoints", "1"))
        before = now
    res = json.load(open(os.path.join(wd, "results.json")))["rounds"]
    assert [res[r]["rm_records_after"] for r in ("0", "1")] == [
        json.load(open(os.path.join(wd, f"round_{r}", "rm_data.json")))["total"] for r in (0, 1)]
    for r in ("0", "1", "2"):   # every round's RM scored on the held-out records
        assert 0.0 <= res[r]["rm_step_f1"] <= 1.0 or math.isnan(res[r]["rm_step_f1"])
    assert "RM step F1 / outcome F1" in open(os.path.join(wd, "results.md")).read()
    # every round's RM also by its prefix minimum, and each round against the one before (paired bootstrap)
    cmp = json.load(open(os.path.join(wd, "rm_rounds.json")))
    for r in (0, 1, 2):
        ev = json.load(open(os.path.join(wd, f"round_{r}", "rm_eval", "results.json")))
        for name, key in (("own", "metrics"), ("prefix_min", "metrics_prefix_min")):
            for kind in ("step", "outcome"):
                row = cmp["scorings"][name][kind][r]
                assert row["f1"] == pytest.approx(ev[key][kind]["all"]["f1"], nan_ok=True)
                assert ("vs_previous" in row) == (r > 0) and ("vs_round_0" in row) == (r > 1)
                if r:
                    assert row["vs_previous"]["diff"] == pytest.approx(row["f1"] - cmp["scorings"][name][kind][r - 1][
                        "f1"])
        own, low = (np.load(os.path.join(wd, f"round_{r}", "rm_eval", f)) for f in
                    ("test_scores.npy", "test_scores_prefix_min.npy"))
        assert np.all(low <= own) and np.any(low < own)
    assert "The reward model round by round" in open(os.path.join(wd, "results.md")).read()
    from gui_jax.jobs.self_improve_rm import format_rm_rounds
    assert json.load(open(os.path.join(wd, "results.json")))["report_tables"] == {
        "the reward model round by round": format_rm_rounds(cmp)}   # the experiment runner's report prints it
    si.run(cfg, wd)   # finished: nothing is retrained
    assert calls["rm"] == 2
    # a workdir from before the prefix minimum gets it from the saved scores, the same as when it ran
    path = os.path.join(wd, "round_1", "rm_eval", "results.json")
    ev = json.load(open(path))
    del ev["metrics_prefix_min"]
    json.dump(ev, open(path, "w"))
    os.remove(os.path.join(wd, "rm_rounds.json"))
    si.run(cfg, wd)
    assert json.load(open(os.path.join(wd, "rm_rounds.json"))) == cmp and calls["rm"] == 2


@pytest.mark.parametrize("field,value,needle", [
    ("verifier.ns", (0, 1, 2), "config.verifier.ns"),
    ("verifier.ns", (2, 4), "including 1"),
    ("verifier.ns", (1, 1, 2), "expected distinct values"),
    ("verifier.temperature", -1.0, "config.verifier.temperature"),
    ("data.templates", ("music.plya",), "config.data.templates"),
])
def test_verifier_bad_config_names_the_field(field, value, needle, tmp_path):
    cfg = load_config("configs/verifier_eval.py", **{"verifier.rm_untrained": True, field: value})
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        ve.run(cfg, str(tmp_path))
    assert not os.path.exists(tmp_path / "results.json")


@pytest.mark.parametrize("field,value,needle", [
    ("self_improve.templates", ("music.plya",), "config.self_improve.templates"),
    ("self_improve.expert_templates", ("music.plya",), "config.self_improve.expert_templates"),
    ("self_improve.rounds", -1, "config.self_improve.rounds"),
    ("self_improve.synth_seed_range", (1000, 1100), "overlaps data.test_seed_range"),
    ("self_improve.beam_width", 0, "config.self_improve.beam_width"),
    ("rm.model.history_min", True, "config.rm.model.history_min"),
])
def test_self_improve_bad_config_names_the_field(field, value, needle):
    cfg = load_config("configs/self_improve.py", **{"self_improve.rm_untrained": True, field: value})
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        si.check_self_improve_config(cfg)


def test_a_reward_model_is_required():
    cfg = load_config("configs/verifier_eval.py")
    with pytest.raises(ConfigError, match=r"config\.verifier\.rm_checkpoint_dir"):
        ve.check_verifier_config(cfg)


def test_proposed_label_clicks_become_the_element_they_name_or_a_no_op():
    """A sampled click by label (any target mode) is resolved on the proposal's screen; one naming nothing is
    treated like an unparsable response, so the RM never has to write an element-less click."""
    from gui_jax.envs.sim import PhoneSim
    from gui_jax.rl.prompting import PromptConfig
    pcfg = PromptConfig(observation="ui_text", target="element", system_prompt=False)
    obs = PhoneSim(render=False).reset(make_task("settings.wifi_on", 0))
    clock = next(e.index for e in obs.ui_elements if "Clock" in (e.text, e.content_desc))
    say = lambda body: "<think></think>\n<action>" + body + "</action>"
    assert ve.response_action(say('{"action": "click", "text": "clock"}'), obs, pcfg, False) == Action("click", element=clock)
    assert ve.response_action(say('{"action": "click", "text": "$137.0"}'), obs, pcfg, False) == ve.NO_OP
    assert ve.response_action(say('{"action": "click", "element": 3}'), obs, pcfg, False) == Action("click", element=3)


def test_synthesis_keeps_the_shortest_success_not_the_highest_reward_sum():
    """Every step scores > 0, so each extra answer raises the cumulative reward: the beam finishes successes of
    1-4 steps, the longest with the highest sum; the synthesised episode is the 1-step one."""
    from types import SimpleNamespace

    class Env:
        def reset(self, task):
            return "screen"

        def step(self, a):
            done = a.type == "terminate"
            return "screen", done, {"success": done}

        def close(self):
            pass

    answer, stop = Action("answer", text="x"), Action("terminate", status="success")
    task = SimpleNamespace(task_id="t#1", goal="g", template="t", seed=1)
    si_cfg = SimpleNamespace(beam_width=2, num_candidates=2, max_steps=4, seed=0)
    out, failed = si.synthesise([task], Env, lambda goal, h, obs, n, rng: [answer, stop],
                                lambda goal, h, obs, acts: [1.0 if a == answer else 0.5 for a in acts], si_cfg)
    assert [ep.actions for ep in out] == [[stop]] and failed == []
    from gui_jax.rewards.search import beam_search
    parts = beam_search(task, Env, lambda goal, h, obs, n, rng: [answer, stop], None, beam_width=2,
                        num_candidates=2, max_steps=4,
                        score_many=lambda goal, h, obs, acts: [1.0 if a == answer else 0.5 for a in acts])
    assert [len(p.actions) for p in parts if p.success][0] == 4   # the sum's favourite: three answers, then stop
