"""Control arm for the self-improvement rounds: the same round-0 policy fine-tuned round by round with the same
per-round SFT settings on the expert episodes alone (no synthesised trajectories), evaluated on the same held-out
tasks. Tells a gain from synthesised data apart from a gain from more SFT steps.

    python experiments/self_improve_control.py --policy_checkpoint_dir runs/qs_a/sft/checkpoints \
        --compare runs/self_improve24/results.json --out experiments/results/self_improve_control [--rounds 2] \
        [--set data.num_test_episodes=648 ...]  # the self_improve run's data overrides: the same held-out tasks
"""
import argparse
import json
import os
import sys

import ml_collections

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--policy_checkpoint_dir", required=True)
    ap.add_argument("--compare", required=True, help="the self_improve run's results.json (same held-out tasks)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workdir", default="runs/self_improve_control")
    ap.add_argument("--out", default=os.path.join(ROOT, "experiments/results/self_improve_control"))
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="config override (python literal), as given to the self_improve run, e.g. "
                         "data.num_test_episodes=648")
    args = ap.parse_args()
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.compare))):
        ap.error(f"--compare {args.compare!r}: no such run folder")
    sys.path.insert(0, ROOT)
    from gui_jax.eval.metrics import mcnemar_exact, paired_counts, wilson_interval
    from gui_jax.eval.online_success import run_online_episodes
    from gui_jax.jobs import common, literal_overrides, load_config
    from gui_jax.jobs.reward_model import rm_configs
    from gui_jax.jobs.verifier_eval import load_policy
    from gui_jax.train.sft import train_sft
    config = load_config(os.path.join(ROOT, "configs/self_improve.py"), **literal_overrides(args.set))
    si = config.self_improve
    _, test_tasks, train_eps, _ = common.prepare(config, args.workdir, sides=("train",))
    pcfg, _ = rm_configs(config)
    agent, _ = load_policy(config, args.policy_checkpoint_dir, "--policy_checkpoint_dir")
    rows, outcomes = [], []
    for r in range(args.rounds + 1):
        recs = run_online_episodes(agent.policy, test_tasks, pcfg, trials=1, temperature=0.0,
                                   resolution=tuple(config.data.resolution), max_steps=si.max_steps,
                                   seed=int(config.seed), progress=False)
        ok = [int(x["success"]) for x in recs]
        outcomes.append(ok)
        k, n = sum(ok), len(ok)
        row = {"round": r, "SR": k / n, "ci95": list(wilson_interval(k, n)), "successes": k, "n": n}
        if r:
            lost, gained = paired_counts([bool(v) for v in outcomes[0]], [bool(v) for v in ok])
            row.update(lost=lost, gained=gained, mcnemar_p=mcnemar_exact([bool(v) for v in outcomes[0]],
                                                                          [bool(v) for v in ok]))
        rows.append(row)
        print(row, flush=True)
        if r == args.rounds:
            break
        sft_cfg = ml_collections.ConfigDict(si.sft.to_dict())
        sft_cfg.seed = int(si.sft.seed) + r
        train_sft(agent, list(train_eps), pcfg, sft_cfg, workdir=os.path.join(args.workdir, f"round_{r}", "sft"),
                  logger=None)
    synth = {}
    if os.path.exists(args.compare):  # read at the end: the compared run may finish while this one runs
        with open(args.compare) as f:
            synth = json.load(f)
    else:
        print(f"--compare {args.compare!r} does not exist (yet): same_tasks_as_compare is left null", flush=True)
    task_ids = [t.task_id for t in test_tasks]
    out = {"command": " ".join(["python"] + sys.argv), "control_rounds": rows, "task_ids": task_ids,
           "same_tasks_as_compare": (synth.get("task_ids") == task_ids) if synth else None}
    with open(args.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
    lines = ["| round | control: online SR [95 %] | vs round 0: lost / gained, p |", "|---|---|---|"]
    for row in rows:
        extra = f"{row['lost']} / {row['gained']}, p = {row['mcnemar_p']:.3g}" if row["round"] else ""
        lines.append(f"| {row['round']} | {row['SR']:.3f} [{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}] | {extra} |")
    with open(args.out + ".md", "w") as f:
        f.write(f"# Self-improvement control: expert episodes only\n\n`{out['command']}`\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
