"""Must-be-true #6 of the online-RL issue: online GRPO and AdaGRPO against their SFT start on PhoneSim.

    nice -n 10 python experiments/online_vs_sft.py --out experiments/results/online_vs_sft.json [--workdir runs/online_vs_sft]

Runs the `online_rl` job twice (configs/grpo_online.py, configs/adagrpo.py) from one shared SFT start
(the GRPO run's SFT checkpoint is reused by the AdaGRPO run through init.checkpoint_dir) and evaluates
greedy online success on the same ≥ 100 held-out tasks: SR with Wilson 95 % intervals and the exact
McNemar p of each RL stage against the start. Writes one JSON with both tables and the commands.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "experiments/results/online_vs_sft.json"))
    ap.add_argument("--workdir", default="runs/online_vs_sft")
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--test_tasks", type=int, default=120)
    ap.add_argument("--init_checkpoint_dir", default="",
                    help="an SFT stage's checkpoints folder both runs start from ('' = the GRPO run's own SFT)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="config override for both runs (python literal), e.g. data.difficulties=('easy',)")
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    from gui_jax.jobs import literal_overrides, load_config
    from gui_jax.main import run_job
    out = {"command": " ".join(["python"] + sys.argv), "runs": {}}
    grpo_dir = os.path.join(args.workdir, "grpo")
    for name, recipe in (("grpo", "configs/grpo_online.py"), ("adagrpo", "configs/adagrpo.py")):
        over = {"online.iterations": args.iterations, "data.num_test_episodes": args.test_tasks}
        over.update(literal_overrides(args.set))
        if args.init_checkpoint_dir:
            over["init.checkpoint_dir"] = os.path.abspath(args.init_checkpoint_dir)
        elif name == "adagrpo":
            over["init.checkpoint_dir"] = os.path.join(grpo_dir, "sft", "checkpoints")
        config = load_config(os.path.join(ROOT, recipe), **over)
        workdir = os.path.join(args.workdir, name)
        run_job(config, workdir)
        with open(os.path.join(workdir, "results.json")) as f:
            res = json.load(f)
        from gui_jax.eval.metrics import mcnemar_exact, paired_counts
        # per-task outcomes {task_id: 0/1}, paired on the tasks both evaluations completed
        first, last = res["start"]["online_success"], res[name]["online_success"]
        tasks = sorted(set(first) & set(last))
        start, end = [bool(first[t]) for t in tasks], [bool(last[t]) for t in tasks]
        lost, gained = paired_counts(start, end)
        out.setdefault("paired_vs_start", {})[name] = {"lost": lost, "gained": gained,
                                                       "mcnemar_p": mcnemar_exact(start, end)}
        out["runs"][name] = {"recipe": recipe, "overrides": over,
                             "stages": {k: {kk: v[kk] for kk in ("online_SR", "online_SR_ci95", "n", "rollout_report")}
                                        for k, v in res.items()}}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
