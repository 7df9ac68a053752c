"""CMDP generalisation on PhoneSim (AndroidWorld-Generalization §3.2): how far does what SFT and
online RL learn on six templates carry? One set of policies, three held-out distances:

- instance: unseen seeds of the six trained templates (same apps, same templates);
- template: unseen easy templates of the same six apps;
- app: easy templates of apps the policies never saw.

    python experiments/cmdp_generalisation.py \
        --stage sft=runs/qs_a/sft/checkpoints \
        --stage grpo=runs/online_vs_sft48/grpo/online/checkpoints \
        --stage adagrpo=runs/online_vs_sft48/adagrpo/online/checkpoints \
        --out experiments/results/cmdp_generalisation

Every level gets greedy online SR with Wilson 95 % intervals per stage, and each stage against the
first (the SFT start) paired by task: exact McNemar and a paired bootstrap interval. Writes OUT.json
and OUT.md. The trained set and the held-out seeds come from configs/quickstart.py, the prompt,
model and evaluation settings from --config.
"""
import argparse
import ast
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from paired_eval import TABLE_HEADER, evaluate_stages, parse_pairs, table_rows  # noqa: E402


def level_templates(trained: tuple, difficulty: str = "easy") -> dict:
    """{level: templates}: the trained ones, the other `difficulty` templates of their apps, and the
    `difficulty` templates of apps none of them touches."""
    from gui_jax.tasks.registry import get_template, list_templates
    trained_apps = {a for n in trained for a in get_template(n).apps}
    pool = [n for n in list_templates() if get_template(n).difficulty == difficulty and n not in trained]
    same_app = [n for n in pool if set(get_template(n).apps) <= trained_apps]
    new_app = [n for n in pool if not set(get_template(n).apps) & trained_apps]
    return {"instance": list(trained), "template": same_app, "app": new_app}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/grpo_online.py")
    ap.add_argument("--stage", action="append", required=True, metavar="NAME=CHECKPOINT_DIR")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--levels", default="instance,template,app")
    ap.add_argument("--workdir", default="runs/cmdp_generalisation")
    ap.add_argument("--out", required=True, help="output path without extension (.json and .md are written)")
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    from gui_jax.jobs import load_config

    qs = load_config(os.path.join(ROOT, "configs/quickstart.py"))
    levels = level_templates(tuple(qs.data.templates))
    stages = parse_pairs(args.stage, "--stage")
    base = {"data.difficulties": ("easy",), "data.max_optimal_steps": int(qs.data.max_optimal_steps),
            "data.test_seed_range": tuple(qs.data.test_seed_range),
            "data.num_test_episodes": int(qs.data.num_test_episodes)}
    base.update({k: ast.literal_eval(v) for k, v in parse_pairs(args.set, "--set")})
    command = " ".join(["python"] + [os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    out = {"command": command, "trained_templates": levels["instance"], "levels": {}}
    if os.path.exists(args.out + ".json"):  # a cut run resumes: levels already measured are kept
        with open(args.out + ".json") as f:
            prev = json.load(f)
        if prev.get("trained_templates") == levels["instance"]:
            out["levels"] = prev["levels"]
    for level in args.levels.split(","):
        if level in out["levels"]:
            print(f"{level}: kept from {args.out}.json")
            continue
        config = load_config(os.path.join(ROOT, args.config), **{**base, "data.templates": tuple(levels[level])})
        results, tests, n_tasks = evaluate_stages(config, stages, os.path.join(args.workdir, level))
        out["levels"][level] = {
            "command": command, "templates": levels[level], "held_out_tasks": n_tasks, "load_avg": os.getloadavg(),
            "stages": {k: {kk: v[kk] for kk in ("online_SR", "online_SR_ci95", "n", "checkpoint", "step",
                                                 "eval_wall_s", "online_success")} for k, v in results.items()},
            "paired_vs_first": tests}
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".json", "w") as f:  # written after every level: a cut run keeps its levels
            json.dump(out, f, indent=1)
    lines = [f"Command: `{command}`", "",
             f"Policies trained on {len(levels['instance'])} easy templates "
             f"({', '.join(levels['instance'])}); greedy online SR on held-out tasks at three distances "
             "(Wilson 95 % intervals); each stage against the first, paired by task.", ""]
    for level, r in out["levels"].items():
        lines += [f"### {level}: {r['held_out_tasks']} tasks of {len(r['templates'])} templates", "",
                  f"Templates: {', '.join(r['templates'])}", ""]
        lines += TABLE_HEADER + table_rows(r["stages"], r["paired_vs_first"]) + [""]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
