"""Ablation sweeps over config flags: each point runs as a normal job in its own workdir.

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/ui_s1_gamma.py \
        [--workdir runs/sweeps/ui_s1_gamma] [--parallel 2] [--commands_only] [--dry_run]

A sweep file defines `get_sweep()` returning a dict:
    name      str, the sweep's name (default workdir runs/sweeps/<name>)
    grid      {flag: [values]}: the cross product of these
    zip       {flag: [values]}: lists of equal length, walked together (crossed with the grid)
    seeds     [ints]: every point runs once per seed (written to `seed_fields`)
    seed_fields [flags] set to the seed (default ["seed"])
    overrides {flag: value}: fixed for every point (e.g. a shortened schedule)
    metrics   [names] to summarise, read from the job's results.json (last stage unless `stage` is set)
    stage     which results.json stage to summarise (default: the last one)
Flags are dotted config paths (`rl.gamma`); every key and flag is checked against the recipe before
anything runs. A point is finished when its workdir holds `sweep_point.json` with status "done";
re-running the same command skips finished points and resumes the others (jobs resume from their
checkpoints). `--commands_only` writes one command per point to <workdir>/commands.sh for a cluster
scheduler instead of running them. The summary (summary.md, summary.csv, summary.png) gives each
point's mean ± std across seeds and a 95 % t-interval.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import itertools
import json
import math
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

SWEEP_KEYS = {"name", "grid", "zip", "seeds", "seed_fields", "overrides", "metrics", "stage"}
# two-sided 97.5 % quantiles of Student's t for n-1 = 1..30 degrees of freedom (then ≈ normal)
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
         2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
         2.052, 2.048, 2.045, 2.042]


class SweepError(ValueError):
    """A malformed sweep file or a flag the recipe does not have."""


@dataclass(frozen=True)
class SweepPoint:
    flags: tuple          # ((flag, value), ...) varied by the sweep, seed excluded
    seed: int | None

    @property
    def label(self) -> str:
        return ",".join(f"{k}={_fmt(v)}" for k, v in self.flags) or "base"

    @property
    def dirname(self) -> str:
        seed = f"seed={self.seed}" if self.seed is not None else ""
        name = ",".join(p for p in (self.label if self.flags else "", seed) if p) or "base"
        return "".join(c if c.isalnum() or c in "=,.-_" else "_" for c in name)


@dataclass
class Sweep:
    name: str
    points: list
    overrides: dict
    seed_fields: list
    metrics: list
    stage: str | None = None
    extra: dict = field(default_factory=dict)


def _fmt(v) -> str:
    if isinstance(v, (list, tuple)):
        return "(" + ",".join(_fmt(x) for x in v) + ")"
    return str(v)


def _load_module_fn(path: str, fn: str):
    from gui_jax.core.recipe_files import load_python_file
    if not os.path.isfile(path):
        raise SweepError(f"file not found: {path}")
    mod = load_python_file(path)
    if not hasattr(mod, fn):
        raise SweepError(f"{path} defines no {fn}()")
    return getattr(mod, fn)()


def _check_flag(config, flag: str, where: str) -> None:
    node = config
    for i, part in enumerate(flag.split(".")):
        keys = list(node.keys()) if hasattr(node, "keys") else []
        if part not in keys:
            import difflib
            close = difflib.get_close_matches(part, keys, n=3)
            hint = f"; did you mean {', '.join('.'.join(flag.split('.')[:i] + [c]) for c in close)}?" if close else ""
            raise SweepError(f"{where}: the recipe has no field {flag!r}{hint}")
        node = node[part]


def parse_sweep(spec: dict, config, extra_overrides: dict | None = None) -> Sweep:
    """Validates a sweep dict against the recipe's config and expands it into points. extra_overrides
    (flag → value, the CLI's --set): fixed for every point on top of the sweep's own `overrides`."""
    if not isinstance(spec, dict):
        raise SweepError(f"get_sweep() must return a dict, got {type(spec).__name__}")
    if extra_overrides:
        spec = {**spec, "overrides": {**(spec.get("overrides") or {}), **extra_overrides}}
    unknown = sorted(set(spec) - SWEEP_KEYS)
    if unknown:
        raise SweepError(f"unknown sweep key(s) {unknown}; accepted: {sorted(SWEEP_KEYS)}")
    grid = spec.get("grid", {}) or {}
    zipped = spec.get("zip", {}) or {}
    overrides = spec.get("overrides", {}) or {}
    for key, block in (("grid", grid), ("zip", zipped), ("overrides", overrides)):
        if not isinstance(block, dict):
            raise SweepError(f"sweep key {key!r} must be a dict of flag → values")
    for key, block in (("grid", grid), ("zip", zipped)):
        for flag, values in block.items():
            if not isinstance(values, (list, tuple)) or not values:
                raise SweepError(f"{key}[{flag!r}] must be a non-empty list of values")
    lens = {len(v) for v in zipped.values()}
    if len(lens) > 1:
        raise SweepError(f"zip lists must have equal lengths, got {dict((k, len(v)) for k, v in zipped.items())}")
    seeds = spec.get("seeds")
    if seeds is not None and (not isinstance(seeds, (list, tuple)) or not all(isinstance(s, int) for s in seeds)):
        raise SweepError(f"sweep key 'seeds' must be a list of ints, got {seeds!r}")
    seed_fields = list(spec.get("seed_fields", ["seed"]))
    metrics = list(spec.get("metrics", []))
    if not metrics:
        raise SweepError("sweep key 'metrics' must name at least one results.json metric, e.g. ['online_SR']")
    dup = set(grid) & set(zipped) | (set(grid) | set(zipped)) & set(overrides)
    if dup:
        raise SweepError(f"flag(s) {sorted(dup)} appear in more than one of grid / zip / overrides")
    for key, flags in (("grid", grid), ("zip", zipped), ("overrides", overrides), ("seed_fields", seed_fields)):
        for flag in flags:
            _check_flag(config, flag, f"sweep {key}")
    grid_items = [[(k, v) for v in vals] for k, vals in grid.items()]
    zip_rows = [tuple(zip(zipped, row)) for row in zip(*zipped.values())] if zipped else [()]
    points = []
    for g in itertools.product(*grid_items):
        for z in zip_rows:
            for s in (seeds if seeds else [None]):
                points.append(SweepPoint(tuple(g) + tuple(z), s))
    sweep = Sweep(name=str(spec.get("name") or "sweep"), points=points, overrides=dict(overrides),
                  seed_fields=seed_fields, metrics=metrics, stage=spec.get("stage"))
    _check_points(sweep, config)
    return sweep


def _literal(text: str):
    """A --set value as Python literal where it is one ('0.5', 'True', '(1, 2)'), else the string itself."""
    import ast
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _check_points(sweep: Sweep, config) -> None:
    """Every point's full config passes the recipe checks (fields and cross-field rules) before any point runs."""
    import contextlib
    import copy

    from gui_jax.config_check import ConfigError, check_config
    if "job" not in config:  # a bare block dict (tests): nothing to check beyond the flags
        return
    for point in sweep.points:
        cfg = copy.deepcopy(config)
        with cfg.unlocked() if hasattr(cfg, "unlocked") else contextlib.nullcontext():
            for flag, value in list(sweep.overrides.items()) + list(point.flags):
                *path, leaf = flag.split(".")
                node = cfg
                for part in path:
                    node = node[part]
                try:
                    node[leaf] = value
                except TypeError:  # a value of another type: the job's own flag parsing reports it
                    pass
        try:
            check_config(cfg)
        except ConfigError as e:
            raise SweepError(f"point {point.label}: {e}") from None


def _flag_arg(flag: str, value: Any) -> str:
    if isinstance(value, (list, tuple)):
        value = "(" + ",".join(repr(v) if isinstance(v, str) else str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return f"--config.{flag}={value}"


def point_command(sweep: Sweep, point: SweepPoint, config_path: str, workdir: str,
                  module: str = "gui_jax.main") -> list:
    args = [sys.executable, "-m", module, f"--config={config_path}"]
    args += [_flag_arg(k, v) for k, v in sweep.overrides.items()]
    args += [_flag_arg(k, v) for k, v in point.flags]
    if point.seed is not None:
        args += [_flag_arg(f, point.seed) for f in sweep.seed_fields]
    args.append(f"--workdir={os.path.join(workdir, point.dirname)}")
    return args


# ---------------------------------------------------------------- the engine (shared with gui_jax/experiment.py)
# A point is one job command run in its own directory; it is finished when that directory's
# sweep_point.json says "done". Nothing else is known about points here, so any runner of job
# commands (sweeps, experiments) resumes the same way.

def point_status(point_dir: str) -> dict:
    """The point's sweep_point.json ({} when it has not finished a run yet)."""
    try:
        with open(os.path.join(point_dir, "sweep_point.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def point_dir_done(point_dir: str) -> bool:
    return point_status(point_dir).get("status") == "done"


def _call(cmd: list, log) -> int:
    """Runs one job command (the only place a point's job starts; tests swap in a fake job)."""
    return subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)


def run_command(cmd: list, point_dir: str, info: dict | None = None) -> int:
    """Runs `cmd` with its output appended to point_dir/sweep_log.txt, then records the outcome in
    point_dir/sweep_point.json (written atomically, so a kill never leaves a half-written "done"), with what
    a reader needs to judge its time: wall seconds, the CPU cores it could use, the 1-minute load average
    before and after (a time measured beside other jobs is not the job's own)."""
    os.makedirs(point_dir, exist_ok=True)
    load_before, started = os.getloadavg()[0], time.monotonic()
    with open(os.path.join(point_dir, "sweep_log.txt"), "a") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        rc = _call(cmd, log)
    timing = {"wall_s": round(time.monotonic() - started, 1), "cpus": len(os.sched_getaffinity(0)),
              "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}
    status = {"status": "done" if rc == 0 else "failed", "returncode": rc, **(info or {}), **timing,
              "command": shlex.join(cmd)}
    path = os.path.join(point_dir, "sweep_point.json")
    with open(path + ".tmp", "w") as f:
        json.dump(status, f, indent=1)
    os.replace(path + ".tmp", path)
    return rc


SOURCE_FAILED = -1000  # the return code of a point skipped because the point it starts from failed


READY_POLL_S = 5.0  # how often a dependant waiting for a stage of a running source looks again


def run_points(jobs: dict, parallel: int = 1, after: dict | None = None, desc: str = "points") -> list:
    """Runs jobs {key: fn() -> return code} `parallel` at a time; a key in `after` ({key: source, or a list of
    them}) starts once its sources have finished and is skipped if one failed. A source is a key, or (key, ready)
    with ready() -> bool: then the dependant starts as soon as ready() holds (the source's stage it needs is
    written) while the rest of the source still runs, and is skipped if the source fails before that. Whenever a
    slot is free, the first job in the dict's order whose sources allow it starts: a dependant still waiting holds
    no slot, so independent chains share the slots (sources must come before their dependants in `jobs`).
    Returns the keys that failed. A job that raises (or Ctrl-C) stops the run like a kill: no job starts after
    it, and the exception propagates."""
    from gui_jax.core.progress import progress
    after = after or {}
    codes: dict = {}      # key -> return code of a finished (or skipped) job
    running: dict = {}    # future -> key
    pending = list(jobs)

    def source_state(src) -> str:
        key, ready = src if isinstance(src, tuple) else (src, None)
        if key not in jobs:
            return "ok"
        if key in codes:
            return "ok" if codes[key] == 0 or (ready is not None and ready()) else "failed"
        if ready is not None and key in running.values() and ready():
            return "ok"
        return "wait"

    def startable(key) -> str:
        srcs = after.get(key)
        states = [source_state(s) for s in (srcs if isinstance(srcs, list) else [srcs] if srcs else [])]
        return "failed" if "failed" in states else "wait" if "wait" in states else "ok"

    bar = progress(total=len(jobs), desc=desc, unit="pt")
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallel))
    try:
        while pending or running:
            for key in list(pending):
                state = startable(key)
                if state == "failed":
                    pending.remove(key)
                    codes[key] = SOURCE_FAILED
                    bar.update(1)
                elif state == "ok" and len(running) < max(1, parallel):
                    pending.remove(key)
                    running[pool.submit(jobs[key])] = key
            if not running:
                if pending and all(startable(k) == "wait" for k in pending):
                    raise RuntimeError(f"run_points: {pending} wait on each other (a source after its dependant?)")
                continue  # skips above: look again
            done, _ = concurrent.futures.wait(running, timeout=READY_POLL_S,
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                key = running.pop(fut)
                codes[key] = fut.result()  # a job that raised stops the run here
                bar.update(1)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)  # like a kill: points not started stay to do
        raise
    finally:
        bar.close()
    pool.shutdown(wait=True)
    return [k for k in jobs if codes.get(k, 0) != 0]


def is_done(workdir: str, point: SweepPoint) -> bool:
    return point_dir_done(os.path.join(workdir, point.dirname))


def run_point(sweep: Sweep, point: SweepPoint, config_path: str, workdir: str, module: str) -> int:
    return run_command(point_command(sweep, point, config_path, workdir, module), os.path.join(workdir, point.dirname),
                       {"flags": [list(f) for f in point.flags], "seed": point.seed})


def t_interval(values: list) -> tuple[float, float, float]:
    """(mean, std with ddof 1, half-width of the 95 % t-interval); std and half-width are 0 for n = 1."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0, 0.0
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    t = _T975[n - 2] if n - 2 < len(_T975) else 1.96
    return mean, std, t * std / math.sqrt(n)


def summarise(sweep: Sweep, workdir: str) -> list[dict]:
    """One row per point (seeds pooled): mean, std, CI half-width and n for every metric."""
    by_label: dict = {}
    for p in sweep.points:
        path = os.path.join(workdir, p.dirname, "results.json")
        if not (is_done(workdir, p) and os.path.exists(path)):
            continue
        with open(path) as f:
            results = json.load(f)
        results = results.get("stages", results)  # training jobs write {"stages": {...}, "profile": {...}}
        stage = sweep.stage or (list(results)[-1] if results else None)
        if stage not in results:
            raise SweepError(f"{path}: no stage {stage!r} (stages: {list(results)})")
        by_label.setdefault(p.label, []).append(results[stage])
    rows = []
    for label, recs in by_label.items():
        row = {"point": label, "n": len(recs)}
        for m in sweep.metrics:
            vals = [float(r[m]) for r in recs if m in r]
            if vals:
                row[m], row[f"{m}_std"], row[f"{m}_ci95"] = t_interval(vals)
        rows.append(row)
    return rows


def write_summary(sweep: Sweep, rows: list[dict], workdir: str) -> None:
    cols = ["point", "n"] + [c for m in sweep.metrics for c in (m, f"{m}_std", f"{m}_ci95")]
    with open(os.path.join(workdir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    lines = ["| point | n | " + " | ".join(sweep.metrics) + " |", "|---|---|" + "---|" * len(sweep.metrics)]
    for r in rows:
        cells = [f"{r[m]:.3f} ± {r[m + '_std']:.3f} (±{r[m + '_ci95']:.3f})" if m in r else "–" for m in sweep.metrics]
        lines.append(f"| {r['point']} | {r['n']} | " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n\nmean ± std across seeds (± half-width of the 95 % t-interval)\n"
    with open(os.path.join(workdir, "summary.md"), "w") as f:
        f.write(table)
    print(table)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(sweep.metrics), figsize=(max(4, 1.2 * len(rows) + 2) * len(sweep.metrics), 4),
                             squeeze=False)
    for ax, m in zip(axes[0], sweep.metrics):
        pts = [r for r in rows if m in r]
        ax.errorbar(range(len(pts)), [r[m] for r in pts], yerr=[r[m + "_ci95"] for r in pts], fmt="o", capsize=4)
        ax.set_xticks(range(len(pts)), [r["point"] for r in pts], rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{m} (mean, 95 % CI over seeds)")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(workdir, "summary.png"), dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gui_jax.sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="the recipe, e.g. configs/quickstart.py")
    ap.add_argument("--sweep", required=True, help="the sweep file, e.g. configs/sweeps/ui_s1_gamma.py")
    ap.add_argument("--workdir", default=None, help="default runs/sweeps/<name>")
    ap.add_argument("--parallel", type=int, default=1, help="points run at once (default 1)")
    ap.add_argument("--commands_only", action="store_true", help="write commands.sh, run nothing")
    ap.add_argument("--dry_run", action="store_true", help="print the points and exit")
    ap.add_argument("--point", default=None, help="run only the point with this directory name")
    ap.add_argument("--summary_only", action="store_true", help="summarise finished points, run nothing")
    ap.add_argument("--set", action="append", default=[], metavar="FLAG=VALUE",
                    help="fix a config field for every point (repeatable), e.g. rl.patch_aux_checkpoint=DIR")
    ap.add_argument("--module", default="gui_jax.main", help=argparse.SUPPRESS)  # tests swap in a fast job
    a = ap.parse_args(argv)
    try:
        extra = {}
        for item in a.set:
            flag, eq, value = item.partition("=")
            if not eq or not flag:
                raise SweepError(f"--set {item!r}: write FLAG=VALUE, e.g. --set rl.patch_aux_checkpoint=/models/aux")
            extra[flag.removeprefix("--config.")] = _literal(value)
        config = _load_module_fn(a.config, "get_config")
        sweep = parse_sweep(_load_module_fn(a.sweep, "get_sweep"), config, extra)
    except SweepError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    workdir = a.workdir or os.path.join("runs", "sweeps", sweep.name)
    os.makedirs(workdir, exist_ok=True)
    todo = [p for p in sweep.points if not is_done(workdir, p)]
    print(f"sweep {sweep.name}: {len(sweep.points)} points, {len(sweep.points) - len(todo)} finished, "
          f"{len(todo)} to run, workdir {workdir}")
    if a.dry_run:
        for p in sweep.points:
            print(("done  " if is_done(workdir, p) else "todo  ") + shlex.join(point_command(sweep, p, a.config, workdir, a.module)))
        return 0
    if a.commands_only:
        path = os.path.join(workdir, "commands.sh")
        base = [sys.executable, "-m", "gui_jax.sweep", f"--config={a.config}", f"--sweep={a.sweep}",
                f"--workdir={workdir}", *[f"--set={item}" for item in a.set]]
        with open(path, "w") as f:
            f.write("#!/usr/bin/env bash\n# one point per line (any order, any machine sharing the workdir);\n"
                    f"# then: {shlex.join(base + ['--summary_only'])}\n")
            for p in todo:
                f.write(shlex.join(base + [f"--point={p.dirname}"]) + "\n")
        print(f"wrote {len(todo)} commands to {path}")
        return 0
    if a.point is not None:
        match = [p for p in sweep.points if p.dirname == a.point]
        if not match:
            print(f"error: no point {a.point!r}; points: {[p.dirname for p in sweep.points]}", file=sys.stderr)
            return 2
        todo = [p for p in match if not is_done(workdir, p)]
        a.summary_only = not todo
    if a.summary_only:
        todo = []
    jobs = {p: (lambda p=p: run_point(sweep, p, a.config, workdir, a.module)) for p in todo}
    failed = run_points(jobs, a.parallel, desc="sweep points")
    rows = summarise(sweep, workdir)
    if rows:
        write_summary(sweep, rows, workdir)
    for p in failed:
        print(f"point {p.dirname} failed: see {os.path.join(workdir, p.dirname, 'sweep_log.txt')}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
