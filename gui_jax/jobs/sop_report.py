"""Job: fit SOP Score against online SR across evaluated checkpoints (UI-S1 Fig. 4).

    python -m gui_jax.main --config configs/sop_report.py --config.report.runs='("runs/quickstart","runs/sweeps/*/*")'
    python -m gui_jax.main --config configs/sop_report.py --config.report.runs='()' \
        --config.report.checkpoints='("runs/sop/sft/checkpoints","runs/sop/rl/checkpoints")'

Points come from two places. Every run directory matching `report.runs` that holds `results.json` (a stage →
metrics table written by the training jobs) or `eval.json` (the evaluate job) gives one point per evaluated
stage with both metrics. Every step kept in a stage checkpoints folder matching `report.checkpoints` is
evaluated here with the config's held-out split and eval settings (SOP and online SR, as the evaluate job) and
cached in <workdir>/points/<folder>-<step>/eval.json, so a stopped report resumes where it was.
Writes sop_vs_online.json (points, R², its bootstrap interval over points, slope, intercept, n),
sop_vs_online.md and sop_vs_online.png to the workdir.
"""
from __future__ import annotations

import glob
import json
import os

from gui_jax.eval.correlation import linear_fit, r2_bootstrap_interval
from gui_jax.config_check import RunError


def collect_points(patterns, x_metric: str = "SOP_Score", y_metric: str = "online_SR",
                   skip_stages=("untrained",)) -> list[dict]:
    """(run, stage, x, y) for every evaluated checkpoint with both metrics, in a stable order."""
    points, seen = [], set()
    for pattern in patterns:
        matches = sorted(glob.glob(pattern))
        if not matches:
            raise RunError(f"report.runs: {pattern!r} matches no directory")
        for run in matches:
            for name in ("results.json", "eval.json"):
                path = os.path.join(run, name)
                if not os.path.isfile(path) or path in seen:
                    continue
                seen.add(path)
                with open(path) as f:
                    table = json.load(f)
                if name == "eval.json":
                    table = {"evaluated": table}
                else:  # training jobs write {"stages": {stage: metrics}, "profile": {...}}
                    table = table.get("stages", table)
                for stage, metrics in table.items():
                    if stage in skip_stages or not isinstance(metrics, dict):
                        continue
                    if x_metric in metrics and y_metric in metrics:
                        points.append({"run": run, "stage": stage, "x": float(metrics[x_metric]),
                                       "y": float(metrics[y_metric])})
    return points


def _slug(folder: str) -> str:
    """A points-folder name for a checkpoints folder: its path without the trailing 'checkpoints'."""
    parts = [p for p in os.path.normpath(folder).split(os.sep) if p not in ("", ".", "..")]
    if parts and parts[-1] == "checkpoints":
        parts = parts[:-1]
    return "_".join(parts) or "checkpoints"


def evaluate_checkpoints(config, workdir: str, patterns) -> list[str]:
    """Evaluates every kept step of each checkpoints folder matching `patterns` (a pattern naming a step folder,
    <stage>/checkpoints/<step>, takes that step alone) with SOP, step metrics and online SR on the config's held-out
    split; returns the point folders, each with its eval.json (ones already written are reused)."""
    from gui_jax.config_check import checkpoint_steps
    from gui_jax.core.progress import progress
    from gui_jax.eval.suite import evaluate_agent
    from gui_jax.jobs import common
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    todo = []
    for pattern in patterns:
        folders = sorted(glob.glob(pattern))
        if not folders:
            raise RunError(f"report.checkpoints: {pattern!r} matches no directory")
        for folder in folders:
            base, name = os.path.split(os.path.normpath(folder))
            if name.isdigit() and int(name) in checkpoint_steps(base):   # one step of a folder
                folder, steps = base, [int(name)]
            else:
                steps = checkpoint_steps(folder)
            if not steps:
                raise RunError(f"report.checkpoints: {folder!r} holds no checkpoint step")
            todo += [(folder, s, os.path.join(workdir, "points", f"{_slug(folder)}-{s}")) for s in steps]
    missing = [t for t in todo if not os.path.isfile(os.path.join(t[2], "eval.json"))]
    if missing:
        _, test_tasks, _, test_eps = common.prepare(config, workdir, sides=("test",))
        online_tasks = common.backend_or_split_tasks(config, test_tasks)
        agent = Agent(config, seed=config.seed)
        pcfg = PromptConfig(**config.prompt.to_dict())
        for folder, step, point in progress(missing, desc="checkpoints"):
            params, _ = common.load_stage_params(folder, field="report.checkpoints", step=step)
            common.set_agent_params(agent, params, folder)
            result = evaluate_agent(agent, test_eps, online_tasks, pcfg, config)
            os.makedirs(point, exist_ok=True)
            with open(os.path.join(point, "eval.json.tmp"), "w") as f:
                json.dump({**result, "weights": {"kind": "orbax", "path": os.path.abspath(folder), "step": step}},
                          f, indent=1)
            os.replace(os.path.join(point, "eval.json.tmp"), os.path.join(point, "eval.json"))
    return [t[2] for t in todo]


def _markdown(out: dict) -> str:
    lines = [f"# {out['y_metric']} against {out['x_metric']} over {out['n']} evaluated checkpoints", "",
             f"R² = {out['r2']:.3f} (bootstrap 95 % over checkpoints [{out['r2_ci95'][0]:.3f}, "
             f"{out['r2_ci95'][1]:.3f}]), slope {out['slope']:.3f}, intercept {out['intercept']:.3f}, "
             f"Pearson r {out['pearson_r']:.3f}", "",
             f"| run | stage | {out['x_metric']} | {out['y_metric']} |", "|---|---|---|---|"]
    lines += [f"| {p['run']} | {p['stage']} | {p['x']:.3f} | {p['y']:.3f} |" for p in out["points"]]
    return "\n".join(lines) + "\n"


def run(config, workdir: str) -> None:
    rcfg = config.report
    patterns = list(rcfg.runs) + evaluate_checkpoints(config, workdir, tuple(rcfg.get("checkpoints", ())))
    points = collect_points(patterns, rcfg.x_metric, rcfg.y_metric, tuple(rcfg.skip_stages))
    if len(points) < 3:
        raise RunError(f"found {len(points)} evaluated checkpoints with both {rcfg.x_metric} and "
                         f"{rcfg.y_metric} under {patterns}; a fit needs at least 3")
    xs, ys = [p["x"] for p in points], [p["y"] for p in points]
    fit = linear_fit(xs, ys)
    ci = r2_bootstrap_interval(xs, ys, n_boot=int(rcfg.get("bootstrap", 2000)), seed=int(config.get("seed", 0)))
    out = {"x_metric": rcfg.x_metric, "y_metric": rcfg.y_metric, **fit, "r2_ci95": list(ci), "points": points}
    with open(os.path.join(workdir, "sop_vs_online.json"), "w") as f:
        json.dump(out, f, indent=1)
    with open(os.path.join(workdir, "sop_vs_online.md"), "w") as f:
        f.write(_markdown(out))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(xs, ys)
    if fit["slope"] == fit["slope"]:  # not NaN
        lo, hi = min(xs), max(xs)
        ax.plot([lo, hi], [fit["slope"] * lo + fit["intercept"], fit["slope"] * hi + fit["intercept"]], "r-")
    ax.set_xlabel(rcfg.x_metric)
    ax.set_ylabel(rcfg.y_metric)
    ax.set_title(f"R² = {fit['r2']:.3f} [{ci[0]:.2f}, {ci[1]:.2f}], slope {fit['slope']:.2f}, n = {fit['n']}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(workdir, "sop_vs_online.png"), dpi=100)
    plt.close(fig)
    print(f"{rcfg.y_metric} vs {rcfg.x_metric}: R² = {fit['r2']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}], "
          f"slope = {fit['slope']:.3f}, intercept = {fit['intercept']:.3f}, Pearson r = {fit['pearson_r']:.3f}, "
          f"n = {fit['n']} checkpoints")
