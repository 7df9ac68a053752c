"""Runs already evaluated, paired by held-out task without evaluating again: each arm's online SR (its seeds
pooled) with the Wilson interval, each arm after the first against the first (exact McNemar, paired-bootstrap Δ),
overall, seed by seed and template by template. Use it to judge a candidate base (or any change) from the
quickstarts it already ran beside the shipped base's.

    python -m gui_jax.jobs.paired_results \
        --arm shipped=runs/qs_base_s0,runs/qs_base_s1,runs/qs_base_s2 \
        --arm candidate=runs/qs_cand_s0,runs/qs_cand_s1,runs/qs_cand_s2 \
        [--stage semi_online_rl] --out experiments/results/NAME

Each --arm NAME=RUN[@STAGE][,RUN[@STAGE]...] lists one arm's runs: a run folder holding results.json, or the file.
The k-th run of each arm is paired with the k-th run of the first (seed by seed: list every arm's seeds in the
same order), so a pooled task is `<k>:<task id>`. STAGE names a stage of results.json's `stages`; without it
--stage, else each run's last stage. Writes OUT.json (every per-task outcome) and OUT.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

from gui_jax.jobs.paired_checkpoints import paired_against_first, row_cells, write_report


def parse_arms(items, default_stage: str | None = None) -> list:
    """[(arm name, [(results.json path, stage or None)])] from NAME=RUN[@STAGE][,...]; names unique, every arm
    with as many runs as the first."""
    arms = []
    for item in items:
        name, sep, runs = item.partition("=")
        if not sep or not name or not runs:
            raise ValueError(f"--arm {item!r}: expected NAME=RUN[@STAGE][,RUN[@STAGE]...]")
        if name in {n for n, _ in arms}:
            raise ValueError(f"--arm {name}: given twice")
        entries = []
        for run in runs.split(","):
            head, at, stage = run.rpartition("@")
            path, stage = (head, stage) if at and "/" not in stage else (run, default_stage)
            if os.path.isdir(path):
                path = os.path.join(path, "results.json")
            entries.append((path, stage or None))
        if arms and len(entries) != len(arms[0][1]):
            raise ValueError(f"--arm {name}: {len(entries)} runs, the first arm ({arms[0][0]}) has "
                             f"{len(arms[0][1])}: runs pair seed by seed")
        arms.append((name, entries))
    return arms


def stage_outcomes(path: str, stage: str | None) -> tuple[str, dict]:
    """(stage name, {task id: 0/1 or a success rate}) of one stage of a run's results.json."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such results file (a run folder must hold results.json)")
    with open(path) as f:
        stages = json.load(f).get("stages") or {}
    if not stages:
        raise ValueError(f"{path}: no 'stages' in it")
    stage = stage or list(stages)[-1]
    if stage not in stages:
        raise ValueError(f"{path}: no stage {stage!r} (it has {', '.join(stages)})")
    r = stages[stage]
    success = r.get("online_success")
    if isinstance(success, dict):
        return stage, dict(success)
    ids = r.get("online_task_ids")
    if success is None or ids is None or len(ids) != len(success):
        raise ValueError(f"{path}: stage {stage!r} has no per-task outcomes (online_task_ids / online_success)")
    return stage, dict(zip(ids, success))


def pooled_outcomes(arms) -> tuple[dict, dict]:
    """({arm: {"<k>:<task>": outcome}}, {arm: [stage of each run]}): each arm's runs pooled, the k-th run's tasks
    prefixed with k."""
    outcomes, stages = {}, {}
    for name, entries in arms:
        pooled, names = {}, []
        for k, (path, stage) in enumerate(entries):
            stage_name, per_task = stage_outcomes(path, stage)
            names.append(stage_name)
            pooled.update({f"{k}:{t}": v for t, v in per_task.items()})
        outcomes[name], stages[name] = pooled, names
    return outcomes, stages


def template_of(task: str) -> str:
    """'1:tasks.priority#1003' -> 'tasks.priority' (the pooled task's template)."""
    return task.partition(":")[2].split("#")[0]


def summarise(outcomes: dict) -> dict:
    """{arm: online SR, its Wilson 95 % interval (0/1 outcomes; otherwise the bootstrap over tasks), n}."""
    from gui_jax.eval.metrics import bootstrap_mean_interval, wilson_interval
    out = {}
    for name, per_task in outcomes.items():
        values = [float(v) for v in per_task.values()]
        n = len(values)
        if all(v in (0.0, 1.0) for v in values):
            lo, hi = wilson_interval(int(sum(values)), n)
        else:
            lo, hi = bootstrap_mean_interval(values)
        out[name] = {"online_SR": sum(values) / n if n else float("nan"), "online_SR_ci95": [lo, hi], "n": n}
    return out


def split_by(outcomes: dict, key) -> dict:
    """{group: {arm: outcomes of the tasks key(task) puts in group}}, groups sorted."""
    groups: dict = {}
    for name, per_task in outcomes.items():
        for task, v in per_task.items():
            groups.setdefault(key(task), {}).setdefault(name, {})[task] = v
    return {g: groups[g] for g in sorted(groups)}


def compare(arms, *, test: str = "mcnemar") -> dict:
    """The report: arms' summaries, each arm against the first overall, per seed (run index) and per template."""
    outcomes, stages = pooled_outcomes(arms)
    names = list(outcomes)

    def paired(groups):
        return {g: {"arms": summarise(o), "paired_vs_first": paired_against_first(o, test=test)}
                for g, o in groups.items() if all(n in o for n in names)}
    return {"arms": summarise(outcomes), "stages": stages,
            "runs": {name: [p for p, _ in entries] for name, entries in arms},
            "paired_vs_first": paired_against_first(outcomes, test=test),
            "by_seed": paired(split_by(outcomes, lambda t: int(t.partition(":")[0]))),
            "by_template": paired(split_by(outcomes, template_of)), "outcomes": outcomes}


def _rows(label: str, block: dict, first: str) -> list:
    return [f"| {label} | {name} |" + row_cells(s, block["paired_vs_first"].get(f"{name} vs {first}"),
                                                first=name == first)
            for name, s in block["arms"].items()]


def markdown(report: dict) -> str:
    """The report as markdown: one table, rows for all seeds pooled, then each seed, then each template."""
    first = next(iter(report["arms"]))
    lines = [f"Command: `{report['command']}`", "",
             "Online SR from the runs' own evaluations (no new episodes), each arm against the first paired by "
             "task, the k-th run of an arm with the k-th of the first; gained / lost: tasks whose success rose / "
             "fell; Δ SR with its paired-bootstrap 95 % interval.", ""]
    lines += [f"- {name}: " + ", ".join(f"{p} ({s})" for p, s in zip(report["runs"][name], stages))
              for name, stages in report["stages"].items()]
    lines += ["", "| tasks | arm | online SR [95 % CI] | n | vs first: gained / lost | Δ SR [95 % bootstrap] | p |",
              "|---|---|---|---|---|---|---|"]
    lines += _rows("all", report, first)
    for k, block in report["by_seed"].items():
        lines += _rows(f"run {k}", block, first)
    for template, block in report["by_template"].items():
        lines += _rows(template, block, first)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m gui_jax.jobs.paired_results", description=__doc__.split("\n\n")[0])
    ap.add_argument("--arm", action="append", required=True, metavar="NAME=RUN[@STAGE][,RUN[@STAGE]...]")
    ap.add_argument("--stage", default=None, help="the stage of every run given without @STAGE (default: its last)")
    ap.add_argument("--test", choices=("mcnemar", "bootstrap"), default="mcnemar")
    ap.add_argument("--out", required=True, help="output path without extension (.json and .md are written)")
    a = ap.parse_args(argv)
    try:
        arms = parse_arms(a.arm, a.stage)
        if len(arms) < 2:
            raise ValueError("give at least two --arm NAME=RUN,...: each is compared with the first")
        report = {"command": shlex.join(["python", "-m", "gui_jax.jobs.paired_results"] + argv),
                  **compare(arms, test=a.test)}
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    write_report(a.out, report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
