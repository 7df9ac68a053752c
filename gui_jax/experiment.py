"""Experiments: arms (recipes + overrides) × seeds run as normal resumable jobs on the sweep engine,
then one report: success rate per arm with 95 % Wilson intervals and paired tests between arms.

    python -m gui_jax.experiment experiments/online_vs_sft.py [--workdir runs/experiments/online_vs_sft] \
        [--parallel 2] [--commands_only] [--report_only] [--results_dir experiments/results]

A spec file defines `get_spec()` returning a dict:
    name         str: default workdir runs/experiments/<name>, report experiments/results/<name>.{md,json,png}
    description  optional str: the question, printed at the top of the report
    arms         {arm: {"recipe": "configs/x.py", "overrides": {flag: value},
                        "init_from": {"arm": other, "path": "sft/checkpoints", "flag": "init.checkpoint_dir"},
                        "stage": results.json stage, "seed_fields": [flags]}}
                 init_from: at each seed, `flag` = <that arm's workdir at the same seed>/<path> (the arm runs
                 after its source; with "ready": stage, as soon as the source's results.json holds that
                 stage, e.g. "sft", while the source's later stages run); a list of such dicts sets several
                 flags from several arms (e.g. the policy from one arm, the reward model from another).
                 An arm may instead read another
                 stage of an arm's runs, without a job of its own: {"results_of": arm, "stage": "sft"}
                 (e.g. the SFT start inside a quickstart run).
    seeds        [ints]: every arm runs once per seed, the seed written to each of `seed_fields`
    seed_fields  [flags] (default ["seed"]); an arm's own `seed_fields` replaces it for that arm
    report       (per arm, default True) False for an arm whose job makes an input of other arms (an export,
                 a reward model): it runs like any arm but is not scored or compared; arms reading its stages
                 (results_of) are (e.g. each n of one verifier run: experiments/verifier_n.py)
    evaluation   {"metric": the results.json field of per-task successes (default "online_success": a 0/1
                  list with `online_task_ids`, or {task id: 0/1} as online_rl writes it; not a rate),
                  "stage": the stage read (default: the last stage holding the metric; a results.json or the
                  evaluate job's eval.json that is one evaluation is the stage "result"),
                  "test": "mcnemar" (default) or "bootstrap", the method of gui_jax.eval.suite.paired_test}
    comparisons  [[a, b], ...]: b against a on the same held-out tasks, paired by (seed, task id) and pooled
                 over seeds
Every key, arm reference and flag is checked against the recipes before anything runs
(gui_jax/experiment_spec.py, with the sweep's flag check). A point (arm, seed) runs `python -m gui_jax.main`
in <workdir>/<arm>/seed=<s> through gui_jax/sweep.py's engine and is finished when its sweep_point.json
says "done": re-running the command runs only the missing points. A point's settings are its recipe, overrides,
init_from, seed fields, seed and the shipped base weights it starts from (`builtin:<name>@<sha>`), so shipping a
new base makes every result from the old one stale rather than pooled with new ones; a finished point whose settings differ
from the spec's stops the run (one workdir, one experiment). A point not started here whose settings equal a
finished point's in another experiment's workdir beside it (runs/experiments/*) is copied in instead of run
(`--no_reuse` runs it), so specs sharing an arm (an SFT start, a baseline) run it once. `--commands_only` writes
<workdir>/commands.sh, one `--point=ARM/seed=S` line per unfinished point in dependency order, for a
cluster scheduler; `--report_only` then writes the report. Beside the report, <name>.outcomes.json keeps every
point's per-task outcomes (gui_jax/experiment_record.py): a point whose workdir is gone is reported from it while
its settings equal the spec's (re-running the experiment still re-runs it: its checkpoints are gone too). A
report that would score fewer points of an unchanged arm than the committed <name>.json is refused (the record is
still updated) unless --replace_report.
The statistics are those of gui_jax.eval
(metrics.wilson_interval, suite.paired_test, metrics.paired_bootstrap for the interval of the
difference); nothing is computed here but counts.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import shutil
import sys

from gui_jax import sweep as gs
from gui_jax.experiment_spec import (Arm, Experiment, ExperimentError, Point, init_entries, load_spec,  # noqa: F401
                                     parse_spec)
from gui_jax.experiment_record import RecordError, load_record, record_path, write_record
from gui_jax.experiment_report import _ci, _time, by_template, markdown, plot  # noqa: F401  (the runner's names)
from gui_jax.sweep import SweepError

# ------------------------------------------------------------------------------------ points and jobs

def plan(exp: Experiment) -> list:
    """Every (arm, seed) that runs a job, sources before the points that start from them."""
    return [Point(a.name, s) for a in exp.arms.values() if not a.results_of for s in exp.seeds]


def point_dir(workdir: str, p: Point) -> str:
    return os.path.join(workdir, p.arm, f"seed={p.seed}")


def sources_of(exp: Experiment, p: Point) -> list:
    """The points a point starts from (its arm's init_from sources at the same seed), in spec order."""
    return [Point(init["arm"], p.seed) for init in exp.arms[p.arm].inits]


def settings(exp: Experiment, p: Point) -> dict:
    """What defines a point's job, independent of the workdir (a finished point run with other
    settings would mix two experiments in one report)."""
    a = exp.arms[p.arm]
    init = a.init_from  # `ready` only schedules (when the source's path is final): not part of the result
    if init is not None:
        strip = lambda e: {k: v for k, v in e.items() if k != "ready"}
        init = [strip(e) for e in init] if isinstance(init, (list, tuple)) else strip(init)
    base = {"base": a.base} if a.base else {}  # absent for a job from random weights: its old points still match
    return json.loads(json.dumps({"recipe": a.recipe, "overrides": a.overrides, "init_from": init,
                                  "seed_fields": a.seed_fields, "seed": p.seed, **base}))


def source_ready(exp: Experiment, workdir: str, p: Point, init: dict) -> bool:
    """Whether point p's init_from source `init` can be started from: the source point has finished, or the
    stage init["ready"] is in its results.json (the quickstart writes it after each stage; its path is final)."""
    d = point_dir(workdir, Point(init["arm"], p.seed))
    if gs.point_dir_done(d):
        return True
    if not init.get("ready"):
        return False
    try:
        with open(os.path.join(d, "results.json")) as f:
            results = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(results, dict) and init["ready"] in results.get("stages", results)


def source_deps(exp: Experiment, workdir: str, p: Point) -> list:
    """run_points' sources of p: a source's point key, or (key, ready) for an init_from with `ready`."""
    return [(Point(i["arm"], p.seed), (lambda i=i: source_ready(exp, workdir, p, i))) if i.get("ready")
            else Point(i["arm"], p.seed) for i in exp.arms[p.arm].inits]


def point_command(exp: Experiment, workdir: str, p: Point, module: str = "gui_jax.main") -> list:
    """The job's command line, built by the sweep's point_command (an arm at one seed = a one-point sweep)."""
    a = exp.arms[p.arm]
    overrides = dict(a.overrides)
    for init, src in zip(a.inits, sources_of(exp, p)):
        overrides[init["flag"]] = os.path.join(point_dir(workdir, src), init["path"])
    one = gs.Sweep(name=exp.name, points=[], overrides=overrides, seed_fields=a.seed_fields, metrics=[exp.metric])
    return gs.point_command(one, gs.SweepPoint((), p.seed), a.recipe, os.path.join(workdir, p.arm), module)


def run_one(exp: Experiment, workdir: str, p: Point, module: str = "gui_jax.main") -> int:
    return gs.run_command(point_command(exp, workdir, p, module), point_dir(workdir, p),
                          {"experiment": exp.name, "arm": p.arm, "seed": p.seed, "settings": settings(exp, p)})


def stale_points(exp: Experiment, workdir: str) -> list:
    out = []
    for p in plan(exp):
        st = gs.point_status(point_dir(workdir, p))
        if st.get("status") == "done" and "settings" in st and st["settings"] != settings(exp, p):
            out.append(p)
    return out


def started_as_recorded(status: dict, p: Point, init) -> bool:
    """Whether a finished point's run passed each init_from flag the <arm>/seed=S/<path> its settings name (its
    recorded command; a status written by an older spec or edited by hand can name a start the run did not
    have). A status without a command cannot be checked and counts as consistent."""
    if "command" not in status:
        return True
    args = shlex.split(status["command"])
    for e in init_entries(init):
        given = [a.split("=", 1)[1] for a in args if a.startswith(f"--config.{e['flag']}=")]
        tail = [e["arm"], f"seed={p.seed}", *os.path.normpath(e["path"]).split(os.sep)]
        if not given or os.path.normpath(given[-1]).split(os.sep)[-len(tail):] != tail:
            return False
    return True


def finished_elsewhere(exp: Experiment, workdir: str, p: Point) -> str | None:
    """A finished point with p's settings in another experiment's workdir beside `workdir` (runs/experiments/*)
    whose run started as those settings say (started_as_recorded): specs that share an arm (an SFT start, a
    baseline) run it once."""
    want, here = settings(exp, p), os.path.abspath(point_dir(workdir, p))
    parent = os.path.dirname(os.path.abspath(workdir))
    for status in sorted(glob.glob(os.path.join(parent, "*", "*", f"seed={p.seed}", "sweep_point.json"))):
        d = os.path.dirname(status)
        st = gs.point_status(d)
        if d != here and st.get("status") == "done" and st.get("settings") == want:
            if started_as_recorded(st, p, exp.arms[p.arm].init_from):
                return d
            print(f"point {p.key}: not reusing {d}: its recorded command started from another checkpoint than "
                  f"its settings name")
    return None


def reuse_finished(exp: Experiment, workdir: str, points: list) -> list:
    """Copies in, for each of `points` not started here, a finished point with its settings from another
    experiment's workdir (finished_elsewhere); its status records where it came from. Returns the reused."""
    reused = []
    for p in points:
        dst = point_dir(workdir, p)
        src = None if os.path.exists(dst) else finished_elsewhere(exp, workdir, p)
        if src is None:
            continue
        shutil.copytree(src, dst, symlinks=True)
        status = {**gs.point_status(dst), "experiment": exp.name, "arm": p.arm, "reused_from": src}
        with open(os.path.join(dst, "sweep_point.json"), "w") as f:
            json.dump(status, f, indent=1)
        print(f"point {p.key}: reused the finished point {src} (same settings)")
        reused.append(p)
    return reused


def write_commands(exp: Experiment, workdir: str, spec_path: str, todo: list) -> str:
    """commands.sh: one runner command per unfinished point, in dependency order (a dependant's
    line says which point must finish first); each writes the point's status like a local run."""
    base = [sys.executable, "-m", "gui_jax.experiment", spec_path, f"--workdir={workdir}"]
    keys = {p.key for p in todo}
    path = os.path.join(workdir, "commands.sh")
    with open(path, "w") as f:
        f.write("#!/usr/bin/env bash\n# one (arm, seed) point per line, from the repository root, on any machine "
                "sharing the workdir;\n# a line ending in '# after X' starts once point X has finished ('X stage S': "
                "once X's results.json holds stage S). Then:\n"
                f"# {shlex.join(base + ['--report_only'])}\n")
        for p in todo:
            waits = [Point(i["arm"], p.seed).key + (f" stage {i['ready']}" if i.get("ready") else "")
                     for i in exp.arms[p.arm].inits if Point(i["arm"], p.seed).key in keys]
            after = f"  # after {', '.join(waits)}" if waits else ""
            f.write(shlex.join(base + [f"--point={p.key}"]) + after + "\n")
    return path


# ------------------------------------------------------------------------------------------- report

def task_outcomes(result: dict, metric: str, where: str) -> dict:
    """{task id: 0/1} from a stage's per-task successes: a list beside `online_task_ids` (the
    evaluation suite) or a {task id: 0/1} dict (online_rl, few_shot)."""
    v = result[metric]
    if isinstance(v, dict):
        items = list(v.items())
    elif isinstance(v, list):
        ids = result.get("online_task_ids")
        if not isinstance(ids, list) or len(ids) != len(v):
            raise ExperimentError(f"{where}: {metric!r} is a list without matching 'online_task_ids' to pair tasks by")
        items = list(zip(ids, v))
    else:
        raise ExperimentError(f"{where}: {metric!r} = {v!r} is not per-task successes; spec.evaluation.metric must "
                              "name a 0/1 list or {task: 0/1} field (e.g. online_success), not a rate")
    out: dict = {}
    for tid, s in items:
        if s not in (0, 1):  # True/False pass too; rates over sampled trials do not pair as McNemar needs
            raise ExperimentError(f"{where}: {metric!r} holds {s!r} for task {tid!r}; need 0/1 outcomes")
        key, n = str(tid), 1
        while key in out:  # a task evaluated twice keeps both outcomes (same order in every arm)
            key, n = f"{tid} (repeat {n})", n + 1
        out[key] = int(s)
    return out


def workdir_stages(exp: Experiment, d: str) -> tuple | None:
    """(results path, {stage: stage dict} of the stages holding the metric) of a finished point's job, or None
    when the point has not finished here. The evaluate job writes its one evaluation as eval.json (the stage
    "result"); quickstart-style results.json holds {"stages": ..., "profile": ...}."""
    path = os.path.join(d, "results.json")
    if not os.path.exists(path):
        path = os.path.join(d, "eval.json")
    if not (gs.point_dir_done(d) and os.path.exists(path)):
        return None
    with open(path) as f:
        results = json.load(f)
    stages = results.get("stages", results)
    if exp.metric in stages:
        stages = {"result": stages}
    return path, {k: v for k, v in stages.items() if isinstance(v, dict) and exp.metric in v}


def job_tables(path: str) -> dict:
    """{title: markdown} a job adds to the experiment's report (its results.json's "report_tables"), else {}."""
    with open(path) as f:
        tables = json.load(f).get("report_tables") if path.endswith("results.json") else None
    if tables is None:
        return {}
    if not (isinstance(tables, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in tables.items())):
        raise ExperimentError(f"{path}: report_tables must map titles to markdown strings")
    return tables


def collect_outcomes(exp: Experiment, workdir: str, stored: dict) -> dict:
    """{point key: {"settings", "time", "stages": {stage: {task: 0/1}}, "where"}} for every scored point: from
    its finished workdir, else from the stored outcome record when the stored settings equal the spec's."""
    out = {}
    read = {a.results_of for a in exp.arms.values() if a.results_of}  # a stage of them is scored
    for p in plan(exp):
        if not exp.arms[p.arm].report and p.arm not in read:
            continue
        d = point_dir(workdir, p)
        found = workdir_stages(exp, d)
        if found is not None:
            path, stages = found
            out[p.key] = {"settings": settings(exp, p), "time": point_time(d), "where": path,
                          "stages": {k: task_outcomes(v, exp.metric, f"{path} [{k}]") for k, v in stages.items()},
                          "tables": job_tables(path)}
        elif p.key in stored and stored[p.key]["settings"] == settings(exp, p):
            out[p.key] = {**stored[p.key], "where": None}
    return out


def arm_outcomes(exp: Experiment, arm: Arm, points: dict, record: str = "the outcome record") -> dict:
    """{seed: (stage, {task: 0/1}, from_record)} over the arm's points in `points` (collect_outcomes)."""
    out = {}
    for seed in exp.seeds:
        entry = points.get(Point(arm.runs, seed).key)
        if entry is None:
            continue
        holding = list(entry["stages"])
        stage = arm.stage or exp.stage or (holding[-1] if holding else None)
        if stage not in holding:
            key = f"spec.arms.{arm.name}.stage" if arm.stage else "spec.evaluation.stage" if exp.stage else \
                "spec.evaluation.metric"
            where = entry["where"] or f"{record} [{Point(arm.runs, seed).key}]"
            raise ExperimentError(f"{key}: {where} has no stage {stage!r} holding {exp.metric!r} "
                                  f"(stages holding it: {holding})")
        out[seed] = (stage, entry["stages"][stage], entry["where"] is None)
    return out


def _rate(outcomes) -> dict:
    from gui_jax.eval.metrics import wilson_interval
    k, n = int(sum(outcomes)), len(outcomes)
    lo, hi = wilson_interval(k, n)
    return {"successes": k, "n": n, "SR": k / n if n else None, "ci95": [lo, hi] if n else None}


def _paired(a: dict, b: dict, test: str) -> dict:
    """b against a on their common (seed, task) keys, through gui_jax.eval only."""
    from gui_jax.eval.metrics import paired_bootstrap, paired_counts
    from gui_jax.eval.suite import paired_test
    keys = sorted(set(a) & set(b))
    if not keys:
        return {"pairs": 0}
    ids = [f"{s}:{t}" for s, t in keys]
    xa, xb = [a[k] for k in keys], [b[k] for k in keys]
    p = paired_test({"online_task_ids": ids, "online_success": xa}, {"online_task_ids": ids, "online_success": xb},
                    method=test)
    boot = paired_bootstrap(xa, xb, seed=0)
    lost, gained = paired_counts(xa, xb)
    return {"pairs": len(keys), "SR_a": sum(xa) / len(xa), "SR_b": sum(xb) / len(xb), "diff": boot["diff"],
            "diff_ci95": [boot["lo"], boot["hi"]], "gained": gained, "lost": lost, "p": p,
            "unpaired": len(set(a) ^ set(b))}


def point_time(point_dir: str) -> dict | None:
    """How long a finished point's job ran: {"wall_s", "cpus", "load_before", "load_after", "source"} from its
    sweep_point.json; for points finished before the runner recorded time, the summed stage wall times of the
    job's results.json "profile" (cores and load unknown); None when neither says."""
    st = gs.point_status(point_dir)
    if "wall_s" in st:
        return {k: st.get(k) for k in ("wall_s", "cpus", "load_before", "load_after")} | {"source": "runner"}
    try:
        with open(os.path.join(point_dir, "results.json")) as f:
            profile = json.load(f).get("profile", {})
    except (OSError, ValueError, AttributeError):
        return None
    # "this_run" is the quickstart's summary of its last segment (its stages again): not a stage of its own
    walls = [v["wall_s"] for k, v in profile.items() if k != "this_run" and isinstance(v, dict) and "wall_s" in v] \
        if isinstance(profile, dict) else []
    return {"wall_s": round(sum(walls), 1), "cpus": None, "load_before": None, "load_after": None,
            "source": "profile"} if walls else None


def build_report(exp: Experiment, workdir: str, points: dict, record: str = "the outcome record") -> dict:
    """The report over `points` (collect_outcomes): per-arm rates, per-seed rates and times, comparisons."""
    arms, pooled = {}, {}
    for arm in exp.arms.values():
        per = arm_outcomes(exp, arm, points, record) if arm.report else {}
        pooled[arm.name] = {(s, t): v for s, (_, o, _) in per.items() for t, v in o.items()}
        arms[arm.name] = {"recipe": arm.recipe, "overrides": arm.overrides, "init_from": arm.init_from,
                          "results_of": arm.results_of, "report": arm.report,
                          "base": exp.arms[arm.runs].base,
                          "stages": sorted({st for st, _, _ in per.values()}),
                          "seeds_done": sorted(per), "seeds_from_record": sorted(s for s, v in per.items() if v[2]),
                          "pooled": _rate(list(pooled[arm.name].values())),
                          "per_seed": {str(s): _rate(list(o.values())) for s, (_, o, _) in per.items()},
                          # a job arm's points collected: also an unscored one whose stages other arms score
                          "time_per_seed": {} if arm.results_of else
                          {str(s): points[k]["time"] for s in exp.seeds if (k := Point(arm.name, s).key) in points}}
    comps = []
    for a, b in exp.comparisons:
        row = {"a": a, "b": b, "test": exp.test, **_paired(pooled[a], pooled[b], exp.test), "per_seed": {}}
        for s in exp.seeds:
            sub = lambda arm: {k: v for k, v in pooled[arm].items() if k[0] == s}
            r = _paired(sub(a), sub(b), exp.test)
            if r["pairs"]:
                row["per_seed"][str(s)] = {k: r[k] for k in ("pairs", "diff", "p")}
        comps.append(row)
    tables = [{"arm": arm.name, "seed": s, "title": title, "markdown": md}
              for arm in exp.arms.values() if not arm.results_of for s in exp.seeds
              for title, md in points.get(Point(arm.name, s).key, {}).get("tables", {}).items()]
    return {"name": exp.name, "description": exp.description, "workdir": workdir, "seeds": exp.seeds,
            "metric": exp.metric, "stage": exp.stage, "arms": arms, "comparisons": comps,
            "by_template": by_template(pooled), "job_tables": tables}


def foreign_report(name: str, results_dir: str) -> str | None:
    """The path of a <name>.json in results_dir that this runner did not write (a committed report of a
    former script, say), which a run must not overwrite; else None."""
    path = os.path.join(results_dir, name + ".json")
    try:
        with open(path) as f:
            return None if json.load(f).get("runner") == "gui_jax.experiment" else path
    except (OSError, ValueError, AttributeError):
        return path if os.path.exists(path) else None


def fewer_points_than_committed(report: dict, results_dir: str) -> str | None:
    """Why the report must not replace <results_dir>/<name>.json (it scores fewer points of some arm than the
    committed one: its workdirs are gone and its outcomes are not in the record), else None."""
    try:
        with open(os.path.join(results_dir, report["name"] + ".json")) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return None
    def same_arm(a: dict, b: dict) -> bool:  # a redefined arm is another experiment: its old points are not lost
        as_json = lambda x: json.loads(json.dumps(x))  # noqa: E731  (tuples in the spec, lists in the file)
        return all(as_json(a.get(k)) == as_json(b.get(k)) for k in ("recipe", "overrides", "results_of", "base"))
    lost = [f"{arm}: seeds {sorted(set(a.get('seeds_done', [])) - set(report['arms'][arm]['seeds_done']))}"
            for arm, a in old.get("arms", {}).items()
            if arm in report["arms"] and same_arm(a, report["arms"][arm])
            and set(a.get("seeds_done", [])) - set(report["arms"][arm]["seeds_done"])]
    return (f"{os.path.join(results_dir, report['name'] + '.json')} scores points this report lacks ({'; '.join(lost)}): "
            "their workdirs are not here and their outcomes are not in the outcome record") if lost else None


def write_report(report: dict, results_dir: str) -> str:
    os.makedirs(results_dir, exist_ok=True)
    stem = os.path.join(results_dir, report["name"])
    plot(report, stem + ".png")
    report["plot"], report["runner"] = stem + ".png", "gui_jax.experiment"
    md = markdown(report)
    with open(stem + ".md", "w") as f:
        f.write(md)
    with open(stem + ".json", "w") as f:
        json.dump(report, f, indent=1)
    return md


# --------------------------------------------------------------------------------------------- main

def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m gui_jax.experiment", description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="the spec file, e.g. experiments/online_vs_sft.py")
    ap.add_argument("--workdir", default=None, help="default runs/experiments/<name>")
    ap.add_argument("--parallel", type=int, default=1, help="points run at once (default 1)")
    ap.add_argument("--commands_only", action="store_true", help="write <workdir>/commands.sh, run nothing")
    ap.add_argument("--report_only", action="store_true", help="report the finished points, run nothing")
    ap.add_argument("--point", default=None, help="run only this point, ARM/seed=S (the lines of commands.sh)")
    ap.add_argument("--results_dir", default=os.path.join("experiments", "results"))
    ap.add_argument("--replace_report", action="store_true",
                    help="write the report even where it scores fewer points than the committed one")
    ap.add_argument("--no_reuse", action="store_true",
                    help="run every point here, also where another experiment's workdir has it finished")
    ap.add_argument("--module", default="gui_jax.main", help=argparse.SUPPRESS)  # a fake job in tests
    a = ap.parse_args(argv)
    try:
        exp = load_spec(a.spec)
    except SweepError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    workdir = a.workdir or os.path.join("runs", "experiments", exp.name)
    foreign = foreign_report(exp.name, a.results_dir) if a.point is None and not a.commands_only else None
    if foreign:
        print(f"error: {foreign} was not written by this runner; keep it: pass --results_dir or rename the spec",
              file=sys.stderr)
        return 2
    points = plan(exp)
    stale = stale_points(exp, workdir)
    if stale:
        print(f"error: point(s) {', '.join(p.key for p in stale)} in {workdir} finished with other settings than "
              "the spec's; use another --workdir or delete those points", file=sys.stderr)
        return 2
    if not (a.report_only or a.commands_only or a.no_reuse):
        scope = points
        if a.point is not None:  # a cluster line: its point and its sources only (other lines run elsewhere)
            scope = [q for q in points if q.key == a.point or any(
                q == src for r in points if r.key == a.point for src in sources_of(exp, r))]
        reuse_finished(exp, workdir, scope)
    todo = [p for p in points if not gs.point_dir_done(point_dir(workdir, p))]
    print(f"experiment {exp.name}: {len(points)} points ({len(points) // len(exp.seeds)} arms with jobs × "
          f"{len(exp.seeds)} seeds), {len(points) - len(todo)} finished, {len(todo)} to run, workdir {workdir}")
    os.makedirs(workdir, exist_ok=True)
    if a.commands_only:
        print(f"wrote {len(todo)} commands to {write_commands(exp, workdir, a.spec, todo)}")
        return 0
    if a.point is not None:
        match = [p for p in points if p.key == a.point]
        if not match:
            print(f"error: no point {a.point!r}; points: {', '.join(p.key for p in points)}", file=sys.stderr)
            return 2
        waiting = [Point(i["arm"], match[0].seed).key + (f" (stage {i['ready']})" if i.get("ready") else "")
                   for i in exp.arms[match[0].arm].inits if not source_ready(exp, workdir, match[0], i)]
        if match[0] in todo and waiting:
            print(f"error: point {a.point} starts from {', '.join(waiting)}, which has not finished",
                  file=sys.stderr)
            return 2
        todo = [p for p in match if p in todo]
    failed = []
    if not a.report_only:
        jobs = {p: (lambda p=p: run_one(exp, workdir, p, a.module)) for p in todo}
        after = {p: source_deps(exp, workdir, p) for p in todo if sources_of(exp, p)}
        failed = gs.run_points(jobs, a.parallel, after, desc="experiment points")
    for p in failed:
        bad = [src.key for src in sources_of(exp, p) if src in failed]
        why = (f"not run, its source {', '.join(bad)} failed" if bad else
               f"see {os.path.join(point_dir(workdir, p), 'sweep_log.txt')}")
        print(f"point {p.key} failed: {why}", file=sys.stderr)
    if a.point is None:  # one cluster point does not write the shared report; --report_only does at the end
        record = record_path(a.results_dir, exp.name)
        try:
            points = collect_outcomes(exp, workdir, load_record(record))
            report = build_report(exp, workdir, points, record)
        except (SweepError, RecordError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if points:  # the record keeps what finished here even when the report below is refused
            write_record(record, {k: {f: v[f] for f in ("settings", "time", "stages", "tables")
                                  if f in v} for k, v in points.items()})
        shrinks = fewer_points_than_committed(report, a.results_dir)
        if shrinks and not a.replace_report:
            print(f"error: {shrinks}; the outcome record {record} was updated; re-run the missing points, or pass "
                  "--replace_report to write the smaller report anyway", file=sys.stderr)
            return 2
        if any(r["pooled"]["n"] for r in report["arms"].values()):
            # the command that makes these results: the same without --report_only (which only re-reads them)
            report["command"] = shlex.join(["python", "-m", "gui_jax.experiment"]
                                           + [x for x in argv if x not in ("--report_only", "--replace_report")])
            report["outcome_record"] = record
            print(write_report(report, a.results_dir))
        else:
            print("no finished points to report yet")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
