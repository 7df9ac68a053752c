"""AdaGRPO ablation (MobileRL Table 4 style): the full method against one component switched off at a
time (SPA advantages, AdaPR replay, FCF failure curriculum), all from one SFT start, on the same held-out
PhoneSim tasks.

    nice -n 10 python experiments/adagrpo_ablation.py --init_checkpoint_dir runs/qs_a/sft/checkpoints \
        --iterations 48 --out experiments/results/adagrpo_ablation [--variants full,no_spa,no_adapr,no_fcf]

Each variant is one `online_rl` job (configs/adagrpo.py with the quickstart's six templates, easy tasks and
216 held-out tasks unless --set says otherwise) in WORKDIR/<variant>. Reported per variant: greedy online SR
with a Wilson 95 % interval, and paired on the same tasks (exact McNemar, paired bootstrap 95 % interval of
the SR difference) against the SFT start and against the full method. Writes OUT.json and OUT.md.
A finished variant (its results.json present) is not re-run.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = {"full": {}, "no_spa": {"online.spa": False}, "no_adapr": {"online.adapr": False},
            "no_fcf": {"online.fcf": False}}
QUICKSTART_DATA = {
    "data.templates": ("messages.open_thread", "music.play", "tasks.complete", "clock.alarm_toggle",
                       "expenses.amount", "settings.storage_answer"),
    "data.difficulties": ("easy",), "data.test_seed_range": (1000, 1045), "data.num_test_episodes": 216,
}


def paired(a: dict, b: dict, seed: int = 0) -> dict:
    """b against a on the tasks both completed ({task_id: 0/1} each)."""
    from gui_jax.eval.metrics import mcnemar_exact, paired_bootstrap, paired_counts
    tasks = sorted(set(a) & set(b))
    x, y = [bool(a[t]) for t in tasks], [bool(b[t]) for t in tasks]
    lost, gained = paired_counts(x, y)
    boot = paired_bootstrap([float(v) for v in x], [float(v) for v in y], seed=seed)
    return {"n": len(tasks), "lost": lost, "gained": gained, "mcnemar_p": mcnemar_exact(x, y),
            "diff": boot["diff"], "diff_ci95": [boot["lo"], boot["hi"]]}


def table(out: dict) -> str:
    rows = ["| variant | online SR | 95 % CI | n | vs SFT start: diff [95 % CI], p | vs full: diff [95 % CI], p |",
            "|---|---|---|---|---|---|"]
    fmt = lambda d: f"{d['diff']:+.3f} [{d['diff_ci95'][0]:+.3f}, {d['diff_ci95'][1]:+.3f}], p = {d['mcnemar_p']:.3g}"
    start = out.get("start")
    if start:
        rows.append(f"| SFT start | {start['SR']:.3f} | [{start['ci95'][0]:.3f}, {start['ci95'][1]:.3f}] | {start['n']} | | |")
    for name, v in out["variants"].items():
        vs_full = fmt(v["vs_full"]) if "vs_full" in v else ""
        rows.append(f"| {name} | {v['SR']:.3f} | [{v['ci95'][0]:.3f}, {v['ci95'][1]:.3f}] | {v['n']} | "
                    f"{fmt(v['vs_start'])} | {vs_full} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init_checkpoint_dir", required=True, help="the SFT checkpoints folder every variant starts from")
    ap.add_argument("--iterations", type=int, default=48)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--workdir", default="runs/adagrpo_ablation")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override for every variant")
    ap.add_argument("--out", default=os.path.join(ROOT, "experiments/results/adagrpo_ablation"))
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    from gui_jax.eval.metrics import wilson_interval
    from gui_jax.jobs import literal_overrides, load_config
    from gui_jax.main import run_job
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"--variants: unknown {unknown}; known: {', '.join(VARIANTS)}")
    common = {**QUICKSTART_DATA, "online.iterations": args.iterations,
              "init.checkpoint_dir": os.path.abspath(args.init_checkpoint_dir)}
    common.update(literal_overrides(args.set))
    out = {"command": " ".join(["python"] + sys.argv), "overrides": {k: list(v) if isinstance(v, tuple) else v
                                                                       for k, v in common.items()},
           "variants": {}}
    finals, start = {}, None
    for name in names:
        workdir = os.path.join(args.workdir, name)
        res_path = os.path.join(workdir, "results.json")
        if not os.path.exists(res_path):
            run_job(load_config(os.path.join(ROOT, "configs/adagrpo.py"), **common, **VARIANTS[name]), workdir)
        with open(res_path) as f:
            res = json.load(f)
        stage = next(k for k in res if k != "start" and isinstance(res[k], dict) and "online_success" in res[k])
        finals[name] = res[stage]["online_success"]
        start = start or res["start"]["online_success"]
        k, n = sum(finals[name].values()), len(finals[name])
        out["variants"][name] = {"switches": VARIANTS[name], "SR": k / n, "ci95": list(wilson_interval(k, n)), "n": n,
                                 "vs_start": paired(start, finals[name]),
                                 "rollout_report": res[stage].get("rollout_report")}
    k, n = sum(start.values()), len(start)
    out["start"] = {"SR": k / n, "ci95": list(wilson_interval(k, n)), "n": n}
    if "full" in finals:
        for name in names:
            if name != "full":
                out["variants"][name]["vs_full"] = paired(finals["full"], finals[name])
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(f"# AdaGRPO ablation\n\n`{out['command']}`\n\n{table(out)}\n\n"
                "greedy online SR on the held-out tasks; p = exact McNemar, diff CI = paired bootstrap, both paired by task.\n")
    print(table(out))


if __name__ == "__main__":
    main()
