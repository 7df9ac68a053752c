"""The written report of an experiment (gui_jax/experiment.py builds it): the markdown tables (arms with their
definitions, seeds and times; the paired comparisons; successes by template) and the SR plot. Counts only: the
statistics come with the report from gui_jax.eval."""
from __future__ import annotations

import os

from gui_jax.eval.suite import counts_table, template_counts
from gui_jax.experiment_spec import init_entries


def by_template(pooled: dict) -> dict:
    """{template: {arm: [successes, tasks]}} of pooled per-task outcomes ({arm: {(seed, task id): 0/1}}) whose task
    ids read 'template#seed' (PhoneSim's); {} when any does not (another backend's ids)."""
    ids = {t for outcomes in pooled.values() for _, t in outcomes}
    if not ids or not all("#" in str(t) for t in ids):
        return {}
    return template_counts({arm: ([t for _, t in o], list(o.values())) for arm, o in pooled.items() if o})


def _ci(r) -> str:
    return f"{r['SR']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]" if r["n"] else "—"


def _time(t: dict | None) -> str:
    if not t:
        return "not recorded"
    if t["source"] == "profile":
        return f"{t['wall_s'] / 60:.1f} min (its stages; cores and load not recorded)"
    load = ("load not recorded" if t.get("load_before") is None else
            f"{t['load_before']:.1f} → {t['load_after']:.1f}")
    return f"{t['wall_s'] / 60:.1f} min ({t['cpus']} core{'s' if t['cpus'] != 1 else ''}, {load})"


def markdown(report: dict) -> str:
    lines = [f"# Experiment `{report['name']}`", ""]
    if report["description"]:
        lines += [report["description"], ""]
    bases = sorted({a.get("base") or "none (random weights or a folder)" for a in report["arms"].values()})
    lines += [f"Command: `{report['command']}`", "",
              f"Base weights (`builtin:<name>@<sha256 of the weights>`): {'; '.join(bases)}.", "",
              f"Workdir `{report['workdir']}`, seeds {report['seeds']}; per-task successes `{report['metric']}` "
              f"on the held-out tasks, pooled over seeds; [lo, hi] = Wilson 95 % interval. Every point's per-task "
              f"outcomes are kept in `{os.path.basename(report.get('outcome_record', ''))}`, so the report can be "
              "rebuilt (and new seeds pooled) where the workdirs are gone.", "",
              "| arm | definition | stage | seeds done | SR pooled [95 %] | successes / tasks | per seed: SR [95 %] "
              "| per seed: wall time (CPU cores, load average before → after) |",
              "|---|---|---|---|---|---|---|---|"]
    for name, a in report["arms"].items():
        if a["results_of"]:
            how = f"stage of `{a['results_of']}`'s runs"
        else:
            how = f"`{a['recipe']}`" + "".join(f" {k}={v!r}" for k, v in a["overrides"].items())
            for init in init_entries(a["init_from"]):
                how += f"; {init['flag']} ← {init['arm']}/{init['path']}"
        per = "; ".join(f"{s}: {_ci(r)}" for s, r in a["per_seed"].items())
        p = a["pooled"]
        times = "; ".join(f"{s}: {_time(t)}" for s, t in a.get("time_per_seed", {}).items()) or "(in its source's)"
        stages = ", ".join(a["stages"]) if a.get("report", True) else "(an input of other arms, not scored)"
        done = f"{len(a['seeds_done'])}/{len(report['seeds'])}" + (
            f" (seed {', '.join(map(str, a['seeds_from_record']))} from the outcome record)"
            if a.get("seeds_from_record") else "")
        lines.append(f"| {name} | {how} | {stages} | {done} "
                     f"| {_ci(p)} | {p['successes']}/{p['n']} | {per} | {times} |")
    if report["comparisons"]:
        test = report["comparisons"][0]["test"]
        how = "exact McNemar" if test == "mcnemar" else "paired bootstrap"
        lines += ["", f"b against a, paired by (seed, task id): p = {how} (gui_jax.eval.suite.paired_test), "
                  "Δ = SR b − SR a with its paired-bootstrap 95 % interval.", "",
                  "| a → b | pairs | SR a | SR b | Δ SR [95 %] | gained / lost | p | per seed: Δ (p) |",
                  "|---|---|---|---|---|---|---|---|"]
        for c in report["comparisons"]:
            if not c["pairs"]:
                lines.append(f"| {c['a']} → {c['b']} | 0 | | | | | | |")
                continue
            per = "; ".join(f"{s}: {r['diff']:+.3f} ({r['p']:.2g})" for s, r in c["per_seed"].items())
            pairs = f"{c['pairs']}" + (f" ({c['unpaired']} unpaired)" if c["unpaired"] else "")
            lines.append(f"| {c['a']} → {c['b']} | {pairs} | {c['SR_a']:.3f} | {c['SR_b']:.3f} | {c['diff']:+.3f} "
                         f"[{c['diff_ci95'][0]:+.3f}, {c['diff_ci95'][1]:+.3f}] | {c['gained']} / {c['lost']} | "
                         f"{c['p']:.3g} | {per} |")
    table = report.get("by_template") or {}
    cols = [a for a in report["arms"] if any(a in row for row in table.values())]
    if cols:
        lines += ["", "Successes / tasks by template, pooled over seeds:", "", counts_table(table, cols)]
    for t in report.get("job_tables", []):  # what a point's job reports beside SR (its results.json's report_tables)
        lines += ["", f"### {t['arm']}, seed {t['seed']}: {t['title']}", "", t["markdown"]]
    if report.get("plot"):
        lines += ["", f"![SR per arm]({os.path.basename(report['plot'])})"]
    return "\n".join(lines) + "\n"


def plot(report: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    arms = [(n, a) for n, a in report["arms"].items() if a["pooled"]["n"]]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(arms) + 2), 4))
    sr = [a["pooled"]["SR"] for _, a in arms]
    err = [[s - a["pooled"]["ci95"][0] for s, (_, a) in zip(sr, arms)],
           [a["pooled"]["ci95"][1] - s for s, (_, a) in zip(sr, arms)]]
    ax.errorbar(range(len(arms)), sr, yerr=err, fmt="o", capsize=5, label="pooled over seeds (95 % Wilson)")
    for i, (_, a) in enumerate(arms):  # each seed's SR beside the pooled point shows the spread
        ys = [r["SR"] for r in a["per_seed"].values() if r["n"]]
        ax.plot([i + 0.15] * len(ys), ys, "x", color="gray", ms=5, label="one seed" if i == 0 else None)
    ax.set_xticks(range(len(arms)), [n for n, _ in arms], rotation=20, ha="right")
    ax.set_xlim(-0.5, len(arms) - 0.5)
    ax.set_ylabel(f"SR ({report['metric']})")
    ax.set_title(report["name"])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
