"""SFT vs offline RL vs semi-online RL (UI-S1 Table 3 in miniature) on PhoneSim, over several seeds.

Each seed runs the quickstart pipeline with the offline-RL baseline switched on (both RL methods
start from the same SFT weights, use the same rollout budget and iterations, and are evaluated on
the same held-out tasks). Then per stage: mean ± std over seeds of online SR, SOP and step metrics;
per seed and pooled over seeds: exact McNemar p-values of the paired online outcomes (RL vs SFT,
semi-online vs offline) and a paired bootstrap of the SR difference.
Finished stages in a seed's workdir are reused.

    python experiments/compare_sft_offline_semi.py [--seeds 0,1,2] [--parallel 3] \
        [--workdir runs/compare_sft_offline_semi] [--out experiments/results/compare_sft_offline_semi] \
        [-- --config.rl.iterations=20 ...]

--parallel N runs N seeds at once, each pinned to its own share of the CPU cores (a 16-core
machine runs 3 seeds side by side comfortably). Needs only the repository and its environment.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
STAGES = ("untrained", "sft", "offline_rl", "semi_online_rl")
METRICS = ("online_SR", "SOP_Score", "SOP_TSR", "SR", "GR", "TM")
COMPARISONS = (("semi_online_rl", "sft"), ("offline_rl", "sft"), ("semi_online_rl", "offline_rl"))


def seed_command(seed: int, workdir: str, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "gui_jax.main", "--config", os.path.join(REPO, "configs", "quickstart.py"),
            "--config.offline_rl_baseline=True", f"--config.seed={seed}", f"--config.sft.seed={seed}",
            f"--config.rl.seed={seed}", f"--workdir={os.path.join(workdir, f'seed_{seed}')}", *extra]


def core_groups(n: int) -> list[set]:
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if n <= 1 or len(cores) < n:
        return [set(cores)] * max(n, 1)
    size = len(cores) // n
    return [set(cores[i * size:(i + 1) * size]) for i in range(n)]


def run_seeds(seeds, workdir, extra, parallel) -> None:
    groups = core_groups(parallel)
    os.makedirs(workdir, exist_ok=True)

    def one(i_seed):
        i, seed = i_seed
        cores = groups[i % len(groups)]
        log = open(os.path.join(workdir, f"seed_{seed}.log"), "w")
        pre = (lambda: os.sched_setaffinity(0, cores)) if parallel > 1 and cores else None
        t0 = time.time()
        rc = subprocess.call(seed_command(seed, workdir, extra), cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                             preexec_fn=pre)
        print(f"seed {seed}: exit {rc} after {(time.time() - t0) / 60:.1f} min (log {log.name})", flush=True)
        if rc != 0:
            raise RuntimeError(f"seed {seed} failed with exit code {rc}; see {log.name}")

    with ThreadPoolExecutor(max_workers=max(parallel, 1)) as pool:
        list(pool.map(one, enumerate(seeds)))


def summarize(seeds, workdir) -> dict:
    from gui_jax.eval.metrics import mcnemar_exact, paired_bootstrap
    per_seed = {}
    for s in seeds:
        with open(os.path.join(workdir, f"seed_{s}", "results.json")) as f:
            per_seed[s] = json.load(f)["stages"]
    stages = [st for st in STAGES if all(st in per_seed[s] for s in seeds)]
    table = {}
    for st in stages:
        table[st] = {}
        for m in METRICS:
            vals = [float(per_seed[s][st][m]) for s in seeds if m in per_seed[s][st]]
            if vals:
                table[st][m] = {"mean": float(np.mean(vals)), "std": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
                                "values": vals}
    tests = {}
    for a, b in COMPARISONS:
        if a not in stages or b not in stages:
            continue
        per = {}
        pooled_a, pooled_b = [], []
        for s in seeds:
            xa, xb = per_seed[s][a]["online_success"], per_seed[s][b]["online_success"]
            per[str(s)] = {"diff": float(np.mean(xa) - np.mean(xb)), "mcnemar_p": mcnemar_exact(xb, xa)}
            pooled_a += xa
            pooled_b += xb
        boot = paired_bootstrap(pooled_b, pooled_a, seed=0)
        tests[f"{a} vs {b}"] = {"per_seed": per, "pooled_tasks": len(pooled_a),
                                "pooled_diff": boot["diff"], "pooled_mcnemar_p": mcnemar_exact(pooled_b, pooled_a),
                                "pooled_bootstrap": boot}
    n_tasks = {s: len(per_seed[s]["sft"]["online_success"]) for s in seeds if "sft" in per_seed[s]}
    return {"seeds": list(seeds), "held_out_tasks_per_seed": n_tasks, "stages": table, "paired_tests": tests}


def markdown(summary: dict, command: str) -> str:
    lines = [f"Command: `{command}`", "",
             f"Seeds {summary['seeds']}; held-out online tasks per seed: {summary['held_out_tasks_per_seed']}. "
             "Mean ± std over seeds (std with ddof 1).", "",
             "| stage | " + " | ".join(METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    for st, row in summary["stages"].items():
        lines.append(f"| {st} | " + " | ".join(f"{row[m]['mean']:.3f} ± {row[m]['std']:.3f}" if m in row else "—"
                                              for m in METRICS) + " |")
    lines += ["", "Paired online success (same tasks): exact McNemar per seed and pooled over seeds; "
              "paired bootstrap 95 % interval of the pooled SR difference.", "",
              "| comparison | per-seed Δ SR (p) | pooled Δ SR [95 % CI] | pooled McNemar p |", "|---|---|---|---|"]
    for name, t in summary["paired_tests"].items():
        per = ", ".join(f"{v['diff']:+.3f} ({v['mcnemar_p']:.2g})" for v in t["per_seed"].values())
        b = t["pooled_bootstrap"]
        lines.append(f"| {name} | {per} | {t['pooled_diff']:+.3f} [{b['lo']:+.3f}, {b['hi']:+.3f}] | "
                     f"{t['pooled_mcnemar_p']:.2g} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--parallel", type=int, default=1, help="seeds run at once (each on its share of the cores)")
    ap.add_argument("--workdir", default="runs/compare_sft_offline_semi")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "compare_sft_offline_semi"),
                    help="writes OUT.json and OUT.md")
    ap.add_argument("--summarize_only", action="store_true", help="only aggregate finished seed workdirs")
    args, extra = ap.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    workdir = os.path.abspath(args.workdir)
    if not args.summarize_only:
        run_seeds(seeds, workdir, extra, args.parallel)
    summary = summarize(seeds, workdir)
    command = "python experiments/compare_sft_offline_semi.py " + shlex.join((argv if argv is not None else sys.argv[1:]))
    summary["command"] = command
    summary["per_seed_command"] = shlex.join(seed_command(seeds[0], args.workdir, extra)[1:]).replace(
        sys.executable, "python")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(summary, f, indent=1)
    md = markdown(summary, command)
    with open(args.out + ".md", "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
