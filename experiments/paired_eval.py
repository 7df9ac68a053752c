"""Several trained checkpoints on the same held-out tasks: online SR with 95 % intervals, and each
stage against the first paired by task (exact sign test, = McNemar for one greedy trial; paired
bootstrap 95 % interval of the SR difference). Use it to re-test a gain on more held-out tasks
without retraining. Greedy by default; `--temperature T --trials K` samples K episodes per task
(per-task success rates, intervals by bootstrap over tasks).

    python experiments/paired_eval.py --config configs/grpo_online.py \
        --stage sft=runs/qs_a/sft/checkpoints --stage grpo=runs/online_vs_sft48/grpo/online/checkpoints \
        [--set data.test_seed_range=(1000,1135) --set data.num_test_episodes=648] \
        [--temperature 1.0 --trials 4] --out experiments/results/online_vs_sft_648tasks

Each --stage NAME=DIR is a training stage's checkpoints folder (its latest step is used). The config
gives the prompt, model, env and eval settings and the held-out split; --set overrides fields
(python literals). Writes OUT.json and OUT.md.
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_pairs(items, what):
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise SystemExit(f"{what} {item!r}: expected NAME=VALUE")
        out.append((name, value))
    return out


def evaluate_stages(config, stages, workdir, *, temperature: float = 0.0, trials: int = 1):
    """Online SR of each (name, checkpoints folder) on the config's held-out tasks, and each stage
    after the first against the first, paired by task. Returns (results, tests, n_tasks)."""
    from gui_jax.eval.metrics import paired_bootstrap, sign_test
    from gui_jax.jobs.common import load_stage_params, prepare, report_checkpoint_overlap, set_agent_params
    from gui_jax.jobs.online_rl import evaluate_online_pool
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig

    for name, ckpt in stages:  # every folder checked before any work
        if not os.path.isdir(ckpt):
            raise SystemExit(f"--stage {name}={ckpt}: no such checkpoints folder")
    _, test_tasks, _, _ = prepare(config, workdir, sides=())
    agent = Agent(config, seed=config.seed)
    pcfg = PromptConfig(**config.prompt.to_dict())
    results = {}
    for name, ckpt in stages:
        params, step = load_stage_params(ckpt, field=f"--stage {name}")
        set_agent_params(agent, params, ckpt)
        t0 = time.time()
        r = evaluate_online_pool(agent, test_tasks, pcfg, config, seed=config.seed, temperature=temperature,
                                 trials=trials)
        r.update({"checkpoint": ckpt, "step": int(step), "eval_wall_s": round(time.time() - t0, 1),
                  "held_out_vs_checkpoint": report_checkpoint_overlap(ckpt, test_tasks, f"stage {name}")})
        results[name] = r
        print(f"{name}: SR {r['online_SR']:.3f} [{r['online_SR_ci95'][0]:.3f}, {r['online_SR_ci95'][1]:.3f}] "
              f"n={r['n']}", flush=True)
    first = stages[0][0]
    tests = {}
    for name, _ in stages[1:]:
        a, b = results[first]["online_success"], results[name]["online_success"]
        common = sorted(set(a) & set(b))
        xa, xb = [float(a[t]) for t in common], [float(b[t]) for t in common]
        sign = sign_test(xa, xb)
        boot = paired_bootstrap(xa, xb, seed=0)
        tests[f"{name} vs {first}"] = {"tasks": len(common), "gained": sign["gained"], "lost": sign["lost"],
                                       "sign_p": sign["p"], "diff": boot["diff"],
                                       "bootstrap_ci95": [boot["lo"], boot["hi"]]}
    return results, tests, len(test_tasks)


def table_rows(results, tests) -> list:
    """Markdown rows: SR [CI], n, and the paired comparison against the first stage."""
    first = next(iter(results))
    rows = []
    for name, r in results.items():
        t = tests.get(f"{name} vs {first}")
        cmp = (f"{t['gained']} / {t['lost']} | {t['diff']:+.3f} [{t['bootstrap_ci95'][0]:+.3f}, "
               f"{t['bootstrap_ci95'][1]:+.3f}] | {t['sign_p']:.3g}") if t else " | | "
        rows.append(f"| {name} | {r['online_SR']:.3f} [{r['online_SR_ci95'][0]:.3f}, {r['online_SR_ci95'][1]:.3f}] "
                    f"| {r['n']} | {cmp} |")
    return rows


TABLE_HEADER = ["| stage | online SR [95 % CI] | episodes | vs first: tasks gained / lost | Δ SR [95 % bootstrap] | "
                "sign-test p |",
                "|---|---|---|---|---|---|"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--stage", action="append", required=True, metavar="NAME=CHECKPOINT_DIR")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    ap.add_argument("--trials", type=int, default=1, help="episodes per task (needs a temperature > 0 when > 1)")
    ap.add_argument("--workdir", default="runs/paired_eval", help="where held-out task lists are written")
    ap.add_argument("--out", required=True, help="output path without extension (.json and .md are written)")
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    from gui_jax.jobs import literal_overrides, load_config
    from gui_jax.jobs.common import overlap_line

    stages = parse_pairs(args.stage, "--stage")
    over = literal_overrides(args.set)
    config = load_config(os.path.join(ROOT, args.config) if not os.path.isabs(args.config) else args.config, **over)
    if args.trials < 1 or (args.trials > 1 and args.temperature <= 0):
        raise SystemExit(f"--trials {args.trials} --temperature {args.temperature}: trials must be >= 1, "
                         "and several trials need a temperature > 0")
    results, tests, n_tasks = evaluate_stages(config, stages, args.workdir, temperature=args.temperature,
                                              trials=args.trials)
    command = " ".join(["python"] + [os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    out = {"command": command, "held_out_tasks": n_tasks, "load_avg": os.getloadavg(),
           "temperature": args.temperature, "trials": args.trials,
           "stages": {k: {kk: v[kk] for kk in ("online_SR", "online_SR_ci95", "n", "checkpoint", "step",
                                                "eval_wall_s", "online_success", "held_out_vs_checkpoint")}
                  for k, v in results.items()},
           "paired_vs_first": tests}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
    how = ("greedy, Wilson 95 % intervals" if args.trials == 1 else
           f"{args.trials} episodes per task at temperature {args.temperature}, 95 % intervals by bootstrap over tasks")
    lines = [f"Command: `{command}`", "", f"Online SR on {n_tasks} held-out tasks ({how}); each stage "
             "against the first, paired by task (a task gained or lost = its success rate rose or fell).", ""]
    lines += TABLE_HEADER + table_rows(results, tests)
    lines += [""] + [overlap_line(r["held_out_vs_checkpoint"], f"stage {k}") for k, r in results.items()]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
