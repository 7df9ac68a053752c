"""PRM-PPO against ORM-PPO on PhoneSim (GUI-Shepherd, docs/algorithms.md §8–§9): same SFT start, same RM.

    nice -n 10 python experiments/prm_ppo.py --init_checkpoint_dir runs/online_vs_sft/grpo/sft/checkpoints \
        --rm_checkpoint_dir runs/reward_model/rm/checkpoints --iterations 12 --n_test 120 --seed 0 \
        --json experiments/results/prm_ppo.json [--workdir runs/prm_ppo]

Runs the `online_rl` job (configs/ppo.py) twice from `--init_checkpoint_dir`:
  orm_ppo  the outcome-reward baseline: the env's rule check on the last step + w_f·[response parsed] per step,
           critic from the policy;
  prm_ppo  GUI-Shepherd: r_t = w_p·P(+ | step t) of the reward model + w_f·[response parsed], no outcome term,
           critic initialised from the reward model (`online.critic_init = rm`).
Both evaluate greedy online success on the same `--n_test` held-out tasks. Reports, per arm, SR with its Wilson
95 % interval and the exact McNemar p against the shared start, and PRM against ORM: discordant pairs and the
exact McNemar p on the tasks both completed. Writes one JSON (with the command) to --json.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ARMS = {
    "orm_ppo": {"online.step_reward": "none", "online.outcome_reward": 1.0, "online.critic_init": ""},
    "prm_ppo": {"online.step_reward": "prm", "online.outcome_reward": 0.0, "online.critic_init": "rm"},
}


def paired(first: dict, second: dict) -> dict:
    """Discordant pairs (lost = 1→0, gained = 0→1 from `first` to `second`) and the exact McNemar p over the
    tasks both evaluations completed ({task_id: 0/1} each)."""
    from gui_jax.eval.metrics import mcnemar_exact, paired_counts
    tasks = sorted(set(first) & set(second))
    a, b = [bool(first[t]) for t in tasks], [bool(second[t]) for t in tasks]
    lost, gained = paired_counts(a, b)
    return {"tasks": len(tasks), "lost": lost, "gained": gained, "mcnemar_p": mcnemar_exact(a, b)}


def training_curves(workdir: str, keys=("reward_rule_mean", "prm_p_mean", "dense_reward_mean", "value_mean",
                                         "critic_loss")) -> dict:
    """{key: [value per iteration]} of the PPO stage's logged metrics (metrics.jsonl of the job)."""
    out: dict = {}
    path = os.path.join(workdir, "metrics.jsonl")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            prefix, _, key = rec.get("name", "").partition("/")
            if prefix == "ppo" and key in keys:
                out.setdefault(key, []).append(float(rec["value"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init_checkpoint_dir", required=True,
                    help="the SFT stage's checkpoints folder both arms start from")
    ap.add_argument("--rm_checkpoint_dir", required=True, help="the reward_model job's rm/checkpoints")
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--n_test", type=int, default=120, help="held-out tasks (≥ 100 for the CI claims)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prm_weight", type=float, default=1.0)
    ap.add_argument("--format_weight", type=float, default=0.1)
    ap.add_argument("--json", default=os.path.join(ROOT, "experiments/results/prm_ppo.json"))
    ap.add_argument("--workdir", default="runs/prm_ppo")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="config override for both arms (python literal), e.g. online.episodes_per_iteration=4")
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    from gui_jax.jobs import literal_overrides, load_config
    from gui_jax.jobs.online_rl import paired_p
    from gui_jax.main import run_job
    out = {"command": " ".join(["python"] + sys.argv), "arms": {}}
    results = {}
    for name, arm in ARMS.items():
        over = {"seed": args.seed, "online.seed": args.seed, "online.iterations": args.iterations,
                "data.num_test_episodes": args.n_test, "init.checkpoint_dir": os.path.abspath(args.init_checkpoint_dir),
                "online.rm_checkpoint_dir": os.path.abspath(args.rm_checkpoint_dir),
                "online.prm_weight": args.prm_weight, "online.format_weight": args.format_weight, **arm}
        over.update(literal_overrides(args.set))
        config = load_config(os.path.join(ROOT, "configs/ppo.py"), **over)
        workdir = os.path.join(args.workdir, name)
        run_job(config, workdir)
        with open(os.path.join(workdir, "results.json")) as f:
            res = json.load(f)
        results[name] = res
        end = res["ppo"]
        k = sum(end["online_success"].values())
        out["arms"][name] = {
            "overrides": over, "online_SR": end["online_SR"], "online_SR_ci95": end["online_SR_ci95"], "n": end["n"],
            "successes": int(k),
            "start_SR": res["start"]["online_SR"], "start_SR_ci95": res["start"]["online_SR_ci95"],
            "mcnemar_p_vs_start": paired_p(res["start"], end), "vs_start": paired(res["start"]["online_success"],
                                                                                 end["online_success"]),
            "rollout_report": end["rollout_report"], "train_rollout_report": end.get("train_rollout_report"),
            "training": training_curves(workdir)}
    orm, prm = results["orm_ppo"], results["prm_ppo"]
    out["start_identical"] = orm["start"]["online_success"] == prm["start"]["online_success"]
    out["prm_vs_orm"] = paired(orm["ppo"]["online_success"], prm["ppo"]["online_success"])
    out["prm_vs_orm"]["delta_SR"] = prm["ppo"]["online_SR"] - orm["ppo"]["online_SR"]
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    lines = ["| arm | online SR [95 % Wilson] | n | p vs start |", "|---|---|---|---|"]
    for name, r in out["arms"].items():
        lo, hi = r["online_SR_ci95"]
        lines.append(f"| {name} | {r['online_SR']:.3f} [{lo:.3f}, {hi:.3f}] | {r['n']} | "
                     f"{r['mcnemar_p_vs_start']:.3g} |")
    c = out["prm_vs_orm"]
    print("\n".join(lines) + f"\nPRM − ORM: {c['delta_SR']:+.3f} (lost {c['lost']}, gained {c['gained']}, "
          f"exact McNemar p = {c['mcnemar_p']:.3g}, {c['tasks']} paired tasks)")


if __name__ == "__main__":
    main()
