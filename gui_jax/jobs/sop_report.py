"""Job: fit SOP Score against online SR across the evaluated checkpoints of one or more runs.

    python -m gui_jax.main --config configs/sop_report.py --config.report.runs='("runs/quickstart","runs/sweeps/*/*")'

Every run directory that holds `results.json` (a stage → metrics table written by the training jobs) or
`eval.json` (the evaluate job) contributes one point per evaluated checkpoint that has both metrics.
Writes sop_vs_online.json (points, R², slope, intercept, n) and sop_vs_online.png to the workdir.
"""
from __future__ import annotations

import glob
import json
import os

from gui_jax.eval.correlation import linear_fit
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


def run(config, workdir: str) -> None:
    rcfg = config.report
    points = collect_points(tuple(rcfg.runs), rcfg.x_metric, rcfg.y_metric, tuple(rcfg.skip_stages))
    if len(points) < 3:
        raise RunError(f"found {len(points)} evaluated checkpoints with both {rcfg.x_metric} and "
                         f"{rcfg.y_metric} under {list(rcfg.runs)}; a fit needs at least 3")
    fit = linear_fit([p["x"] for p in points], [p["y"] for p in points])
    out = {"x_metric": rcfg.x_metric, "y_metric": rcfg.y_metric, **fit, "points": points}
    with open(os.path.join(workdir, "sop_vs_online.json"), "w") as f:
        json.dump(out, f, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 4))
    xs, ys = [p["x"] for p in points], [p["y"] for p in points]
    ax.scatter(xs, ys)
    if fit["slope"] == fit["slope"]:  # not NaN
        lo, hi = min(xs), max(xs)
        ax.plot([lo, hi], [fit["slope"] * lo + fit["intercept"], fit["slope"] * hi + fit["intercept"]], "r-")
    ax.set_xlabel(rcfg.x_metric)
    ax.set_ylabel(rcfg.y_metric)
    ax.set_title(f"R² = {fit['r2']:.3f}, slope {fit['slope']:.2f}, n = {fit['n']}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(workdir, "sop_vs_online.png"), dpi=100)
    plt.close(fig)
    print(f"{rcfg.y_metric} vs {rcfg.x_metric}: R² = {fit['r2']:.3f}, slope = {fit['slope']:.3f}, "
          f"intercept = {fit['intercept']:.3f}, Pearson r = {fit['pearson_r']:.3f}, n = {fit['n']} checkpoints")
