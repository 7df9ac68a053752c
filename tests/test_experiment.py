"""Experiments: a spec is checked before anything runs; arms × seeds resume after a kill on the sweep
engine; the report's numbers are those of gui_jax.eval; --commands_only lists points in dependency order.
No model runs: the engine's job call is replaced by a fake that writes the per-task successes we choose."""
import json
import pathlib
import re

import pytest

from gui_jax import experiment as ge
from gui_jax import sweep as gs
from gui_jax.eval.metrics import paired_bootstrap, wilson_interval
from gui_jax.eval.suite import paired_test

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "configs" / "quickstart.py")
GRPO = str(ROOT / "configs" / "grpo_online.py")
TASKS = [f"t{i:02d}" for i in range(20)]  # zero-padded: sorted order = task order
# per-task successes of the fake job's last stage, by (rl.gamma, seed); arm b gains 7 tasks and loses none at seed 0
VEC = {("0.0", "0"): [0] * 10 + [1] * 2 + [0] * 8, ("0.0", "1"): [1, 0] * 10,
       ("0.5", "0"): [1] * 7 + [0] * 3 + [1, 1] + [0] * 8, ("0.5", "1"): [1, 1] * 5 + [1, 0] * 5}
SFT_VEC = [1] + [0] * 19


def _spec(tmp_path, spec: dict, name="spec.py") -> str:
    path = tmp_path / name
    path.write_text(f"def get_spec():\n    return {spec!r}\n")
    return str(path)


def _two_arms(**extra) -> dict:
    return {"name": "ab", "arms": {"a": {"recipe": QUICKSTART, "overrides": {"rl.gamma": 0.0}},
                                   "b": {"recipe": QUICKSTART, "overrides": {"rl.gamma": 0.5}},
                                   "a_sft": {"results_of": "a", "stage": "sft"}},
            "seeds": [0, 1], "seed_fields": ["seed", "rl.seed"], "evaluation": {"metric": "online_success"},
            "comparisons": [["a", "b"], ["a_sft", "a"]], **extra}


def _flags(cmd) -> dict:
    return dict(a[len("--"):].split("=", 1) for a in cmd if a.startswith("--") and "=" in a)


def fake_job(calls: list, fail_after: int | None = None):
    """Stands in for the job subprocess: records the point, writes a quickstart-style results.json."""
    def call(cmd, log):
        f = _flags(cmd)
        workdir = pathlib.Path(f["workdir"])
        calls.append(f"{workdir.parent.name}/{workdir.name}")
        if fail_after is not None and len(calls) > fail_after:
            raise RuntimeError("killed")  # the runner dies while this point runs
        vec = VEC[(f["config.rl.gamma"], f["config.seed"])]
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "results.json").write_text(json.dumps({"stages": {
            "sft": {"online_success": SFT_VEC, "online_task_ids": TASKS},
            "semi_online_rl": {"online_SR": sum(vec) / len(vec), "online_success": vec, "online_task_ids": TASKS}},
            "profile": {}}))
        return 0
    return call


@pytest.mark.parametrize("change,needle", [
    (lambda s: s["arms"]["a"]["overrides"].update({"rl.gamam": 1}),
     "spec.arms.a.overrides: the recipe has no field 'rl.gamam'; did you mean rl.gamma"),
    (lambda s: s["comparisons"].append(["a", "bb"]), "spec.comparisons[2]: unknown arm 'bb'"),
    (lambda s: s["arms"]["b"].pop("recipe"), "spec.arms.b.recipe: missing"),
    (lambda s: s["arms"]["b"].update(recipe="configs/nope.py"), "spec.arms.b.recipe: file not found: configs/nope.py"),
    (lambda s: s.update(armz={}), "spec.armz: unknown key"),
    (lambda s: s["arms"]["b"].update(recipee=QUICKSTART), "spec.arms.b.recipee: unknown key"),
    (lambda s: s.update(seed_fields=["seed", "rl.sed"]), "spec.seed_fields: the recipe has no field 'rl.sed'"),
    (lambda s: s["arms"]["a_sft"].pop("stage"), "spec.arms.a_sft.stage: an arm that reads a's runs needs"),
    (lambda s: s["arms"]["a"].update(init_from={"arm": "c", "path": "sft/checkpoints", "flag": "rl.gamma"}),
     "spec.arms.a.init_from.arm: 'c' is not another arm"),
    (lambda s: s["evaluation"].update(test="t"), "spec.evaluation.test: 't'"),
    (lambda s: s.update(seeds=[0, 0]), "spec.seeds: must be a non-empty list of distinct ints"),
])
def test_malformed_spec_names_the_key(change, needle):
    spec = _two_arms()
    change(spec)
    with pytest.raises(ge.ExperimentError) as e:
        ge.parse_spec(spec)
    assert needle in str(e.value)


def test_init_from_cycle_is_named():
    spec = {"name": "c", "seeds": [0], "arms": {
        "x": {"recipe": GRPO, "init_from": {"arm": "y", "path": "sft/checkpoints", "flag": "init.checkpoint_dir"}},
        "y": {"recipe": GRPO, "init_from": {"arm": "x", "path": "sft/checkpoints", "flag": "init.checkpoint_dir"}}}}
    with pytest.raises(ge.ExperimentError, match=r"spec.arms.x.init_from: the arms start from each other \(x → y → x"):
        ge.parse_spec(spec)


def test_malformed_spec_fails_before_running_anything(tmp_path, monkeypatch, capsys):
    spec = _two_arms()
    spec["arms"]["b"]["overrides"]["rl.gamam"] = 1
    monkeypatch.setattr(gs, "_call", lambda *a: pytest.fail("a job ran"))
    rc = ge.main([_spec(tmp_path, spec), f"--workdir={tmp_path / 'w'}", f"--results_dir={tmp_path / 'r'}"])
    assert rc == 2
    assert capsys.readouterr().err.strip() == ("error: spec.arms.b.overrides: the recipe has no field 'rl.gamam'; "
                                               "did you mean rl.gamma?")
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()


def test_killed_experiment_resumes_missing_points_and_reports_eval_statistics(tmp_path, monkeypatch):
    spec = _spec(tmp_path, _two_arms())
    args = [spec, f"--workdir={tmp_path / 'w'}", f"--results_dir={tmp_path / 'r'}"]
    calls = []
    monkeypatch.setattr(gs, "_call", fake_job(calls, fail_after=2))
    with pytest.raises(RuntimeError, match="killed"):
        ge.main(args)
    assert calls == ["a/seed=0", "a/seed=1", "b/seed=0"]  # the third point died while running
    exp = ge.load_spec(spec)
    assert [gs.point_dir_done(ge.point_dir(str(tmp_path / "w"), p)) for p in ge.plan(exp)] == [True, True, False, False]

    calls.clear()
    monkeypatch.setattr(gs, "_call", fake_job(calls))
    assert ge.main(args) == 0
    assert calls == ["b/seed=0", "b/seed=1"]  # only the missing points
    calls.clear()
    assert ge.main(args) == 0 and calls == []  # all finished: report only

    report = json.loads((tmp_path / "r" / "ab.json").read_text())
    a = VEC[("0.0", "0")] + VEC[("0.0", "1")]
    b = VEC[("0.5", "0")] + VEC[("0.5", "1")]
    pa = report["arms"]["a"]["pooled"]
    assert (pa["successes"], pa["n"]) == (sum(a), 40) and pa["SR"] == sum(a) / 40
    assert pa["ci95"] == list(wilson_interval(sum(a), 40))
    s1 = report["arms"]["b"]["per_seed"]["1"]
    assert s1["ci95"] == list(wilson_interval(sum(VEC[("0.5", "1")]), 20))
    assert report["arms"]["a_sft"]["pooled"]["successes"] == 2 and report["arms"]["a_sft"]["stages"] == ["sft"]
    ids = [f"{s}/{t}" for s in (0, 1) for t in TASKS]
    c = report["comparisons"][0]
    assert (c["a"], c["b"], c["pairs"]) == ("a", "b", 40)
    assert c["p"] == paired_test({"online_task_ids": ids, "online_success": a},
                                 {"online_task_ids": ids, "online_success": b})
    boot = paired_bootstrap(a, b, seed=0)
    assert c["diff"] == pytest.approx(sum(b) / 40 - sum(a) / 40) and c["diff_ci95"] == [boot["lo"], boot["hi"]]
    assert (c["gained"], c["lost"]) == (sum(x < y for x, y in zip(a, b)), sum(x > y for x, y in zip(a, b)))
    p0 = paired_test({"online_task_ids": TASKS, "online_success": VEC[("0.0", "0")]},
                     {"online_task_ids": TASKS, "online_success": VEC[("0.5", "0")]})
    assert c["per_seed"]["0"]["p"] == p0 and p0 < 0.05
    md = (tmp_path / "r" / "ab.md").read_text()
    assert f"`python -m gui_jax.experiment {spec} --workdir=" in md and "| a → b | 40 |" in md
    assert (tmp_path / "r" / "ab.png").stat().st_size > 1000

    (tmp_path / "r2").mkdir()
    (tmp_path / "r2" / "ab.json").write_text('{"a script": "report"}')  # not ours: never overwritten
    assert ge.main(args[:2] + [f"--results_dir={tmp_path / 'r2'}"]) == 2 and calls == []
    changed = _two_arms()  # the same workdir with other settings would mix two experiments
    changed["arms"]["b"]["overrides"]["rl.gamma"] = 0.9
    assert ge.main([_spec(tmp_path, changed, "changed.py"), f"--workdir={tmp_path / 'w'}", "--report_only"]) == 2


def test_a_report_is_rebuilt_from_the_outcome_record_when_the_workdirs_are_gone(tmp_path, monkeypatch):
    spec = _spec(tmp_path, _two_arms())
    w, r = tmp_path / "w", tmp_path / "r"
    monkeypatch.setattr(gs, "_call", fake_job([]))
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}"]) == 0
    first = json.loads((r / "ab.json").read_text())
    record = ge.load_record(str(r / "ab.outcomes.json"))
    assert sorted(record) == ["a/seed=0", "a/seed=1", "b/seed=0", "b/seed=1"]
    assert record["b/seed=1"]["stages"]["semi_online_rl"] == dict(zip(TASKS, VEC[("0.5", "1")]))
    assert record["a/seed=0"]["stages"]["sft"] == dict(zip(TASKS, SFT_VEC))  # every stage: a_sft reads it
    raw = (r / "ab.outcomes.json").read_text()
    assert raw.count('"t00"') == 1  # one task list shared by every point and stage

    import shutil
    shutil.rmtree(w)  # another machine: the workdirs are gone, the committed record is not
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--report_only"]) == 0
    again = json.loads((r / "ab.json").read_text())
    assert again["comparisons"] == first["comparisons"]
    assert {n: a["pooled"] for n, a in again["arms"].items()} == {n: a["pooled"] for n, a in first["arms"].items()}
    assert again["arms"]["a"]["seeds_from_record"] == [0, 1]
    assert "(seed 0, 1 from the outcome record)" in (r / "ab.md").read_text()
    assert (r / "ab.outcomes.json").read_text() == raw  # nothing new: byte-identical

    # a re-run point replaces its stored outcomes; a changed arm does not use (and drops) its stale entries
    calls = []
    monkeypatch.setattr(gs, "_call", fake_job(calls))
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--point=a/seed=1"]) == 0 and calls == ["a/seed=1"]
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--report_only"]) == 0
    assert json.loads((r / "ab.json").read_text())["arms"]["a"]["seeds_from_record"] == [0]
    changed = _two_arms()
    changed["arms"]["b"]["overrides"]["rl.gamma"] = 0.9
    assert ge.main([_spec(tmp_path, changed, "ab2.py"), f"--workdir={w}", f"--results_dir={r}", "--report_only"]) == 0
    assert json.loads((r / "ab.json").read_text())["arms"]["b"]["seeds_done"] == []
    assert sorted(ge.load_record(str(r / "ab.outcomes.json"))) == ["a/seed=0", "a/seed=1"]

    # without the record, a report of fewer points never silently replaces the committed one
    saved = (r / "ab.outcomes.json").read_text()
    (r / "ab.outcomes.json").unlink()
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--report_only"]) == 2
    assert json.loads((r / "ab.json").read_text())["arms"]["a"]["seeds_done"] == [0, 1]
    assert sorted(ge.load_record(str(r / "ab.outcomes.json"))) == ["a/seed=1"]  # kept what finished here
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--report_only", "--replace_report"]) == 0
    assert json.loads((r / "ab.json").read_text())["arms"]["a"]["seeds_done"] == [1]
    (r / "ab.outcomes.json").write_text(saved)

    (r / "ab.outcomes.json").write_text(raw.replace('"success": "1', '"success": "2', 1))
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--report_only"]) == 2
    with pytest.raises(ge.RecordError, match=r"ab.outcomes.json: points\['a/seed=0'\].stages\['.*'\].success"):
        ge.load_record(str(r / "ab.outcomes.json"))


def test_commands_only_lists_points_in_dependency_order(tmp_path):
    init = lambda src: {"arm": src, "path": "sft/checkpoints", "flag": "init.checkpoint_dir"}
    spec = _spec(tmp_path, {"name": "chain", "seeds": [0, 1], "arms": {
        "c": {"recipe": GRPO, "init_from": init("b")}, "b": {"recipe": GRPO, "init_from": init("a")},
        "a": {"recipe": GRPO}}, "seed_fields": ["seed", "online.seed"]})
    w = tmp_path / "w"
    assert ge.main([spec, f"--workdir={w}", "--commands_only"]) == 0

    def lines():
        text = (w / "commands.sh").read_text().splitlines()
        return [re.search(r"--point=(\S+)(?:  # after (\S+))?$", l).groups() for l in text if not l.startswith("#")]
    assert lines() == [("a/seed=0", None), ("a/seed=1", None), ("b/seed=0", "a/seed=0"), ("b/seed=1", "a/seed=1"),
                       ("c/seed=0", "b/seed=0"), ("c/seed=1", "b/seed=1")]
    exp = ge.load_spec(spec)
    cmd = ge.point_command(exp, str(w), ge.Point("c", 1))
    assert f"--config.init.checkpoint_dir={w}/b/seed=1/sft/checkpoints" in cmd and f"--workdir={w}/c/seed=1" in cmd
    (w / "a" / "seed=0").mkdir(parents=True)
    (w / "a" / "seed=0" / "sweep_point.json").write_text('{"status": "done"}')
    assert ge.main([spec, f"--workdir={w}", "--commands_only"]) == 0
    assert lines()[:2] == [("a/seed=1", None), ("b/seed=0", None)]  # a finished source needs no wait
    assert ge.main([spec, f"--workdir={w}", "--point=c/seed=1"]) == 2  # its source has not run


def test_an_arm_starting_from_two_arms_sets_both_flags_and_waits_for_both(tmp_path):
    """init_from as a list: the policy from one arm, the reward model from another (PRM-PPO); the point's
    command sets each flag to its source's workdir, commands.sh waits on both, and a missing source is named."""
    spec = _spec(tmp_path, {"name": "two", "seeds": [3], "arms": {
        "policy": {"recipe": GRPO}, "rm": {"recipe": GRPO},
        "ppo": {"recipe": GRPO, "init_from": [
            {"arm": "policy", "path": "sft/checkpoints", "flag": "init.checkpoint_dir"},
            {"arm": "rm", "path": "rm/checkpoints", "flag": "online.rm_checkpoint_dir"}]}}})
    w = tmp_path / "w"
    exp = ge.load_spec(spec)
    assert list(exp.arms) == ["policy", "rm", "ppo"]
    cmd = ge.point_command(exp, str(w), ge.Point("ppo", 3))
    assert f"--config.init.checkpoint_dir={w}/policy/seed=3/sft/checkpoints" in cmd
    assert f"--config.online.rm_checkpoint_dir={w}/rm/seed=3/rm/checkpoints" in cmd
    assert ge.main([spec, f"--workdir={w}", "--commands_only"]) == 0
    last = (w / "commands.sh").read_text().splitlines()[-1]
    assert last.endswith("--point=ppo/seed=3  # after policy/seed=3, rm/seed=3")
    (w / "policy" / "seed=3").mkdir(parents=True)
    (w / "policy" / "seed=3" / "sweep_point.json").write_text('{"status": "done"}')
    assert ge.main([spec, f"--workdir={w}", "--commands_only"]) == 0
    assert (w / "commands.sh").read_text().splitlines()[-1].endswith("--point=ppo/seed=3  # after rm/seed=3")
    assert ge.main([spec, f"--workdir={w}", "--point=ppo/seed=3"]) == 2  # rm has not run
    # an input-only arm (report: False) runs but is neither scored nor compared: its results.json holds no metric
    quiet = {"name": "q", "seeds": [3], "arms": {"rm": {"recipe": GRPO, "report": False}, "ppo": {
        "recipe": GRPO, "init_from": {"arm": "rm", "path": "rm/checkpoints", "flag": "online.rm_checkpoint_dir"}}}}
    for arm, result in (("rm", {"metrics": {"step_f1": 0.8}}), ("ppo", {"online_success": {"t1": 1, "t2": 0}})):
        d = tmp_path / "q" / arm / "seed=3"
        d.mkdir(parents=True)
        (d / "sweep_point.json").write_text('{"status": "done"}')
        (d / "results.json").write_text(json.dumps(result))
    qexp, qdir = ge.parse_spec(quiet), str(tmp_path / "q")
    report = ge.build_report(qexp, qdir, ge.collect_outcomes(qexp, qdir, {}))
    assert report["arms"]["rm"]["pooled"]["n"] == 0 and report["arms"]["rm"]["report"] is False
    assert report["arms"]["ppo"]["pooled"]["successes"] == 1
    report["command"] = "x"
    assert "| rm | " in ge.markdown(report) and "(an input of other arms, not scored)" in ge.markdown(report)
    with pytest.raises(ge.ExperimentError, match=r"spec.comparisons\[0\]: arm 'rm' is not reported"):
        ge.parse_spec({**quiet, "comparisons": [["rm", "ppo"]]})
    # an unscored job whose stages are scored by arms reading them (each n of one verifier run)
    staged = {"name": "s", "seeds": [3], "arms": {"ver": {"recipe": GRPO, "report": False},
                                                  "n1": {"results_of": "ver", "stage": "n=1"},
                                                  "n2": {"results_of": "ver", "stage": "n=2"}},
              "comparisons": [["n1", "n2"]]}
    d = tmp_path / "s" / "ver" / "seed=3"
    d.mkdir(parents=True)
    (d / "sweep_point.json").write_text('{"status": "done"}')
    ids = ["t1", "t2", "t3"]
    (d / "results.json").write_text(json.dumps({"stages": {
        "n=1": {"online_success": [0, 0, 1], "online_task_ids": ids},
        "n=2": {"online_success": [1, 1, 1], "online_task_ids": ids}}}))
    sexp, sdir = ge.parse_spec(staged), str(tmp_path / "s")
    points = ge.collect_outcomes(sexp, sdir, {})
    assert points["ver/seed=3"]["stages"]["n=2"] == {"t1": 1, "t2": 1, "t3": 1}
    sreport = ge.build_report(sexp, sdir, points)
    assert sreport["arms"]["ver"]["pooled"]["n"] == 0 and "3" in sreport["arms"]["ver"]["time_per_seed"]
    assert (sreport["arms"]["n1"]["pooled"]["successes"], sreport["arms"]["n2"]["pooled"]["successes"]) == (1, 3)
    c = sreport["comparisons"][0]
    assert (c["pairs"], c["gained"], c["lost"], c["p"]) == (3, 2, 0, 0.5)
    with pytest.raises(ge.ExperimentError, match=r"spec.comparisons\[0\]: arm 'ver' is not reported"):
        ge.parse_spec({**staged, "comparisons": [["ver", "n2"]]})
    with pytest.raises(ge.ExperimentError, match=r"spec.arms.rm.report: must be True or False"):
        ge.parse_spec({**quiet, "arms": {**quiet["arms"], "rm": {"recipe": GRPO, "report": "no"}}})
    twice = {"name": "t", "seeds": [0], "arms": {"a": {"recipe": GRPO}, "b": {"recipe": GRPO, "init_from": [
        {"arm": "a", "path": "x", "flag": "init.checkpoint_dir"}, {"arm": "a", "path": "y",
                                                                    "flag": "init.checkpoint_dir"}]}}}
    with pytest.raises(ge.ExperimentError, match=r"spec.arms.b.init_from: sets the flag"):
        ge.parse_spec(twice)
    bad = {"name": "t", "seeds": [0], "arms": {"a": {"recipe": GRPO}, "b": {"recipe": GRPO, "init_from": [
        {"arm": "a", "path": "x", "flag": "init.checkpoint_dir"}, {"arm": "z", "path": "y", "flag": "seed"}]}}}
    with pytest.raises(ge.ExperimentError, match=r"spec.arms.b.init_from\[1\].arm: 'z' is not another arm"):
        ge.parse_spec(bad)


def test_run_points_skips_the_dependants_of_a_failed_source():
    ran = []
    jobs = {k: (lambda k=k: ran.append(k) or (1 if k == "a" else 0)) for k in ("a", "b", "c", "d")}
    failed = gs.run_points(jobs, parallel=2, after={"b": "a", "d": "c"})
    assert sorted(ran) == ["a", "c", "d"] and failed == ["a", "b"]


def test_a_dependant_with_ready_starts_when_its_sources_stage_is_written_while_the_source_runs(tmp_path,
                                                                                               monkeypatch):
    """init_from "ready": "sft": the PPO arm starts once the quickstart's results.json holds its SFT stage, not
    after the quickstart's RL stages. The source job blocks until the dependant has started (an Event, not a
    clock): had the runner waited for the whole source, the source would see its wait time out."""
    import threading
    init = {"arm": "qs", "path": "sft/checkpoints", "flag": "init.checkpoint_dir", "ready": "sft"}
    body = {"name": "rd", "seeds": [0], "arms": {"qs": {"recipe": QUICKSTART}, "ppo": {"recipe": GRPO, "init_from": init}}}
    spec = _spec(tmp_path, body)
    w = tmp_path / "w"
    started, seen = threading.Event(), []

    def job(cmd, log):
        d = pathlib.Path(_flags(cmd)["workdir"])
        d.mkdir(parents=True, exist_ok=True)
        if d.parent.name == "qs":
            (d / "results.json").write_text(json.dumps({"stages": {"sft": {}}}))  # SFT done, RL to come
            seen.append(started.wait(timeout=60))
            (d / "results.json").write_text(json.dumps({"stages": {"sft": {}, "semi_online_rl": {
                "online_success": [1, 0], "online_task_ids": ["x", "y"]}}}))
        else:
            started.set()
            (d / "results.json").write_text(json.dumps({"online_success": {"x": 1, "y": 1}}))
        return 0

    monkeypatch.setattr(gs, "_call", job)
    monkeypatch.setattr(gs, "READY_POLL_S", 0.01)
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={tmp_path / 'r'}", "--parallel=2"]) == 0
    assert seen == [True]
    # `ready` schedules only: a point finished without it is not stale under a spec with it, and the reverse
    exp = ge.load_spec(spec)
    plain = ge.parse_spec({**body, "arms": {**body["arms"], "ppo": {"recipe": GRPO, "init_from": {
        k: v for k, v in init.items() if k != "ready"}}}})
    assert ge.settings(exp, ge.Point("ppo", 0)) == ge.settings(plain, ge.Point("ppo", 0))
    assert ge.stale_points(plain, str(w)) == []
    # commands.sh names the stage a dependant waits for; --point refuses to start before it is written
    for arm in ("qs", "ppo"):
        (w / arm / "seed=0" / "sweep_point.json").unlink()
    (w / "qs" / "seed=0" / "results.json").write_text(json.dumps({"stages": {}}))
    assert ge.main([spec, f"--workdir={w}", "--commands_only"]) == 0
    assert (w / "commands.sh").read_text().rstrip().endswith("--point=ppo/seed=0  # after qs/seed=0 stage sft")
    assert ge.main([spec, f"--workdir={w}", "--point=ppo/seed=0"]) == 2
    with pytest.raises(ge.ExperimentError, match=r"spec.arms.ppo.init_from.ready: 3 must be a stage name"):
        ge.parse_spec({**body, "arms": {**body["arms"], "ppo": {"recipe": GRPO, "init_from": {**init, "ready": 3}}}})


def test_run_points_skips_a_dependant_whose_source_fails_before_its_stage_is_ready():
    ran = []
    jobs = {k: (lambda k=k: ran.append(k) or (1 if k == "a" else 0)) for k in ("a", "b", "c")}
    failed = gs.run_points(jobs, parallel=2, after={"b": [("a", lambda: False)], "c": [("a", lambda: True)]})
    assert sorted(ran) == ["a", "c"] and failed == ["a", "b"]  # c's stage was written before a failed


def test_task_outcomes_reads_both_layouts_and_refuses_rates():
    assert ge.task_outcomes({"online_success": {"7": 1, "3": 0}}, "online_success", "w") == {"7": 1, "3": 0}
    assert ge.task_outcomes({"online_success": [1, 0, 1], "online_task_ids": ["x", "y", "x"]}, "online_success",
                            "w") == {"x": 1, "y": 0, "x (repeat 1)": 1}
    with pytest.raises(ge.ExperimentError, match="not per-task successes"):
        ge.task_outcomes({"online_SR": 0.3}, "online_SR", "w")
    with pytest.raises(ge.ExperimentError, match="need 0/1 outcomes"):
        ge.task_outcomes({"online_success": {"a": 0.5}}, "online_success", "w")


def test_an_evaluate_jobs_flat_results_are_the_stage_result(tmp_path):
    exp = ge.parse_spec({"name": "ev", "seeds": [3], "arms": {"x": {"recipe": QUICKSTART}}})
    d = pathlib.Path(ge.point_dir(str(tmp_path), ge.Point("x", 3)))
    d.mkdir(parents=True)
    (d / "sweep_point.json").write_text('{"status": "done"}')
    (d / "results.json").write_text(json.dumps({"online_success": [1, 0], "online_task_ids": ["a", "b"]}))
    outcomes = lambda: ge.arm_outcomes(exp, exp.arms["x"], ge.collect_outcomes(exp, str(tmp_path), {}))
    assert outcomes() == {3: ("result", {"a": 1, "b": 0}, False)}
    (d / "results.json").unlink()  # the evaluate job's own file name
    (d / "eval.json").write_text(json.dumps({"online_success": [0, 1], "online_task_ids": ["a", "b"]}))
    assert outcomes() == {3: ("result", {"a": 0, "b": 1}, False)}


def test_every_shipped_spec_parses_against_its_recipes():
    files = sorted((ROOT / "experiments").glob("*.py"))
    specs = [p for p in files if "def get_spec" in p.read_text()]
    # experiments/ holds the runner's specs only: a tool belongs in the package, a probe's answer in results/
    assert specs == files, f"not experiment specs: {[p.name for p in files if p not in specs]}"
    assert len(specs) >= 2
    for path in specs:
        exp = ge.load_spec(str(path))
        assert exp.comparisons and ge.plan(exp), path.name


def test_a_points_time_is_recorded_with_its_cores_and_load_and_reported(tmp_path, monkeypatch):
    clock = iter([100.0, 1900.0])  # the job "runs" 30 minutes
    loads = iter([(1.5, 0, 0), (2.25, 0, 0)])
    monkeypatch.setattr(gs.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(gs.os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(gs.os, "sched_getaffinity", lambda pid: {0})
    monkeypatch.setattr(gs, "_call", lambda cmd, log: 0)
    d = tmp_path / "x" / "seed=3"
    assert gs.run_command(["job"], str(d), {"arm": "x"}) == 0
    assert ge.point_time(str(d)) == {"wall_s": 1800.0, "cpus": 1, "load_before": 1.5, "load_after": 2.25,
                                     "source": "runner"}
    assert ge._time(ge.point_time(str(d))) == "30.0 min (1 core, 1.5 → 2.2)"
    # a point finished before the runner kept time: the job's own stage times, said to be only that
    old = tmp_path / "y" / "seed=0"
    old.mkdir(parents=True)
    (old / "sweep_point.json").write_text('{"status": "done"}')
    (old / "results.json").write_text(json.dumps({"stages": {}, "profile": {"train_sft": {"wall_s": 600.0},
                                                                            "eval_sft": {"wall_s": 60.0},
                                                                            "this_run": {"wall_s": 660.0}}}))
    assert ge.point_time(str(old))["wall_s"] == 660.0
    assert ge._time(ge.point_time(str(old))) == "11.0 min (its stages; cores and load not recorded)"
    (old / "results.json").unlink()
    assert ge.point_time(str(old)) is None and ge._time(None) == "not recorded"


def test_a_point_finished_by_another_experiment_is_copied_in_not_rerun(tmp_path, monkeypatch):
    """Two specs sharing an arm (same settings): the second copies the first's finished points in and runs only
    its own; a point with other settings, or with --no_reuse, runs."""
    exps = tmp_path / "experiments"
    first = _two_arms()
    second = _two_arms(name="ac")
    second["arms"]["b"]["overrides"] = {"rl.gamma": 0.0}  # b here has a's settings there (an arm's name is not
    # part of a point's settings: recipe, overrides, init_from, seed fields and seed are), so it is reused too
    second["comparisons"] = [["a", "b"]]
    calls = []
    monkeypatch.setattr(gs, "_call", fake_job(calls))
    assert ge.main([_spec(tmp_path, first, "ab.py"), f"--workdir={exps / 'ab'}",
                    f"--results_dir={tmp_path / 'r'}"]) == 0
    assert sorted(calls) == ["a/seed=0", "a/seed=1", "b/seed=0", "b/seed=1"]
    calls.clear()
    spec2 = _spec(tmp_path, second, "ac.py")
    assert ge.main([spec2, f"--workdir={exps / 'ac'}", f"--results_dir={tmp_path / 'r'}"]) == 0
    assert calls == []
    status = ge.gs.point_status(str(exps / "ac" / "b" / "seed=1"))
    assert status["reused_from"] == str(exps / "ab" / "a" / "seed=1") and status["experiment"] == "ac"
    assert (exps / "ac" / "b" / "seed=1" / "results.json").read_text() == (
        exps / "ab" / "a" / "seed=1" / "results.json").read_text()
    report = json.loads((tmp_path / "r" / "ac.json").read_text())
    assert report["comparisons"][0]["diff"] == 0.0 and report["comparisons"][0]["pairs"] == 40

    third = _two_arms(name="ad")
    third["arms"]["b"]["overrides"] = {"rl.gamma": 0.9}
    VEC[("0.9", "0")], VEC[("0.9", "1")] = VEC[("0.5", "0")], VEC[("0.5", "1")]
    try:
        assert ge.main([_spec(tmp_path, third, "ad.py"), f"--workdir={exps / 'ad'}", "--no_reuse",
                        f"--results_dir={tmp_path / 'r'}"]) == 0
        assert sorted(calls) == ["a/seed=0", "a/seed=1", "b/seed=0", "b/seed=1"]
        calls.clear()
        assert ge.main([_spec(tmp_path, third, "ad2.py"), f"--workdir={exps / 'ad2'}",
                        f"--results_dir={tmp_path / 'r2'}", "--point=b/seed=0"]) == 0
        assert calls == []  # b/seed=0 with gamma 0.9 finished in ad: copied, not run
        assert not (exps / "ad2" / "a").exists()  # a cluster line copies only its point (and its sources)
    finally:
        del VEC[("0.9", "0")], VEC[("0.9", "1")]


def test_a_finished_point_whose_run_started_elsewhere_than_its_settings_say_is_not_reused(tmp_path, monkeypatch):
    """Settings name the start by arm; the recorded command shows the checkpoint the run started from. A status
    claiming `b` started from `a` while its command passed another arm's checkpoints is run again, not copied."""
    exps = tmp_path / "experiments"
    spec = _two_arms()
    spec["arms"]["b"]["init_from"] = {"arm": "a", "path": "sft/checkpoints", "flag": "init.checkpoint_dir"}
    calls = []
    monkeypatch.setattr(gs, "_call", fake_job(calls))
    assert ge.main([_spec(tmp_path, spec, "ab.py"), f"--workdir={exps / 'ab'}", f"--results_dir={tmp_path / 'r'}"]) == 0
    assert sorted(calls) == ["a/seed=0", "a/seed=1", "b/seed=0", "b/seed=1"]
    status_file = exps / "ab" / "b" / "seed=0" / "sweep_point.json"
    status = json.loads(status_file.read_text())
    assert "ab/a/seed=0/sft/checkpoints" in status["command"]
    status["command"] = status["command"].replace("ab/a/seed=0/sft", "ab/other/seed=0/sft")
    status_file.write_text(json.dumps(status))
    calls.clear()
    assert ge.main([_spec(tmp_path, {**spec, "name": "ac"}, "ac.py"), f"--workdir={exps / 'ac'}",
                    f"--results_dir={tmp_path / 'r'}"]) == 0
    assert calls == ["b/seed=0"]
    assert "reused_from" not in ge.gs.point_status(str(exps / "ac" / "b" / "seed=0"))
    assert ge.gs.point_status(str(exps / "ac" / "b" / "seed=1"))["reused_from"] == str(exps / "ab" / "b" / "seed=1")


def test_a_new_shipped_base_makes_results_from_the_old_one_stale_not_pooled(tmp_path, monkeypatch):
    """A point's settings name the shipped weights it starts from (sha256 in the built-in's checksums.json), also
    through init_from; after a new base ships, the stored points no longer count and the report is not refused."""
    from gui_jax.models import builtin
    sums = json.loads((ROOT / "gui_jax/models/assets/builtin/tiny_base/checksums.json").read_text())
    shipped = "builtin:tiny-base@" + sums["model.safetensors"][:12]
    spec_dict = _two_arms()
    spec_dict["arms"]["scratch"] = {"recipe": QUICKSTART, "overrides": {"rl.gamma": 0.0, "model.checkpoint": ""}}
    spec_dict["arms"]["rm"] = {"recipe": str(ROOT / "configs" / "reward_model.py"), "report": False,
                               "init_from": {"arm": "scratch", "path": "hf", "flag": "model.checkpoint"}}
    exp = ge.parse_spec(spec_dict)
    assert ge.settings(exp, ge.Point("a", 0))["base"] == shipped and exp.arms["a_sft"].base is None
    assert "base" not in ge.settings(exp, ge.Point("scratch", 0))  # random weights: no base
    assert exp.arms["rm"].base is None  # its weights come from `scratch`, which has none
    spec_dict["arms"]["rm"]["init_from"]["arm"] = "a"
    assert ge.parse_spec(spec_dict).arms["rm"].base == shipped  # through its source

    spec = _spec(tmp_path, _two_arms())
    w, r = tmp_path / "w", tmp_path / "r"
    monkeypatch.setattr(gs, "_call", fake_job([]))
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}"]) == 0
    assert f"Base weights (`builtin:<name>@<sha256 of the weights>`): {shipped}." in (r / "ab.md").read_text()
    assert ge.load_record(str(r / "ab.outcomes.json"))["a/seed=0"]["settings"]["base"] == shipped

    import shutil
    shutil.rmtree(w)
    monkeypatch.setattr(builtin, "weights_id", lambda spec: spec + "@0123456789ab" if builtin.is_builtin(spec) else None)
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--report_only"]) == 0  # nothing from this base yet
    assert json.loads((r / "ab.json").read_text())["arms"]["b"]["seeds_done"] == [0, 1]  # the old report stays
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--point=a/seed=0"]) == 0
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--report_only"]) == 0  # fewer points: not refused
    report = json.loads((r / "ab.json").read_text())
    assert [report["arms"][a]["seeds_done"] for a in ("a", "b", "a_sft")] == [[0], [], [0]]
    assert report["arms"]["a_sft"]["base"] == "builtin:tiny-base@0123456789ab"
    assert sorted(ge.load_record(str(r / "ab.outcomes.json"))) == ["a/seed=0"]  # the old base's left (git keeps them)


def test_successes_by_template_count_each_arms_tasks_and_skip_ids_without_a_template():
    pooled = {"a": {(0, "music.play#1"): 1, (0, "music.play#2"): 0, (1, "music.play#1"): 1, (0, "clock.x#3"): 0},
              "b": {(0, "music.play#1"): 0, (0, "clock.x#3"): 1}, "c": {}}
    table = ge.by_template(pooled)
    assert table == {"clock.x": {"a": [0, 1], "b": [1, 1]}, "music.play": {"a": [2, 3], "b": [0, 1]}}
    assert list(table) == ["clock.x", "music.play"]
    assert ge.by_template({"a": {(0, "t01"): 1, (0, "music.play#1"): 1}}) == {}  # another backend's ids: no table
    report = {"name": "x", "description": "", "command": "c", "workdir": "w", "seeds": [0], "metric": "m",
              "arms": {}, "comparisons": [], "by_template": table}
    for name in ("a", "b", "c"):
        report["arms"][name] = {"results_of": "z", "per_seed": {}, "pooled": {"n": 0, "successes": 0},
                                "stages": [], "seeds_done": [], "base": None}
    md = ge.markdown(report)
    assert "| template | a | b |" in md and "| music.play | 2/3 | 0/1 |" in md and "| clock.x | 0/1 | 1/1 |" in md


def test_a_waiting_dependant_holds_no_slot():
    """Two slots, jobs a, b (after a), c: c runs beside a instead of waiting behind b. a blocks until c has
    started (an Event, not a clock): with b holding the second slot, a's wait would time out."""
    import threading
    c_started, seen, order = threading.Event(), [], []

    def a():
        order.append("a")
        seen.append(c_started.wait(timeout=60))
        return 0

    def c():
        order.append("c")
        c_started.set()
        return 0

    jobs = {"a": a, "b": lambda: order.append("b") or 0, "c": c}
    assert gs.run_points(jobs, parallel=2, after={"b": "a"}) == []
    assert seen == [True] and order == ["a", "c", "b"]
    with pytest.raises(RuntimeError, match="wait on each other"):
        gs.run_points({"x": lambda: 0, "y": lambda: 0}, parallel=1, after={"x": "y", "y": "x"})


def test_a_jobs_report_tables_join_the_report_and_outlive_its_workdir(tmp_path, monkeypatch):
    """A job's results.json "report_tables" ({title: markdown}, e.g. self_improve's RM rounds) are printed per
    arm and seed under the SR tables, and kept in the outcome record for a rebuild without the workdirs."""
    spec = _spec(tmp_path, _two_arms())
    w, r = tmp_path / "w", tmp_path / "r"
    plain = fake_job([])

    def with_tables(cmd, log):
        plain(cmd, log)
        f = _flags(cmd)
        if f["config.rl.gamma"] == "0.5":
            path = pathlib.Path(f["workdir"]) / "results.json"
            res = json.loads(path.read_text())
            path.write_text(json.dumps({**res, "report_tables": {"RM rounds": f"| x |\n|---|\n| {f['config.seed']} |"}}))
        return 0
    monkeypatch.setattr(gs, "_call", with_tables)
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}"]) == 0
    md = (r / "ab.md").read_text()
    assert "### b, seed 0: RM rounds\n\n| x |\n|---|\n| 0 |" in md and "### b, seed 1: RM rounds" in md
    assert "### a, seed" not in md
    assert ge.load_record(str(r / "ab.outcomes.json"))["b/seed=1"]["tables"] == {"RM rounds": "| x |\n|---|\n| 1 |"}
    import shutil
    shutil.rmtree(w)
    assert ge.main([spec, f"--workdir={w}", f"--results_dir={r}", "--report_only"]) == 0
    rebuilt = (r / "ab.md").read_text()
    assert "### b, seed 0: RM rounds\n\n| x |\n|---|\n| 0 |" in rebuilt and "### b, seed 1: RM rounds" in rebuilt

    bad = w / "a" / "seed=0"
    bad.mkdir(parents=True)
    (bad / "results.json").write_text(json.dumps({"stages": {}, "report_tables": {"t": 3}}))
    with pytest.raises(ge.ExperimentError, match="report_tables must map titles to markdown strings"):
        ge.job_tables(str(bad / "results.json"))
