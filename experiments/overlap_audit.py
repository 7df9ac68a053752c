"""Re-reads paired before/after results on held-out tasks without the tasks the SFT start trained on.

    python experiments/overlap_audit.py [--out experiments/results/held_out_overlap_audit]

The online-RL, self-improvement and large-pool experiments evaluated on test seeds 1000-1134 while their
SFT starts came from the quickstart's split (train seeds 0-399, test seeds 1000-1044). That split removes
from training only the instances its own test seeds draw, so later test seeds draw goals the start was
trained on. For each comparison below this script rebuilds the start's training split (the quickstart
config as it is now), drops the held-out tasks that share an instance with it, and recomputes the paired
counts and the exact sign test (= McNemar for one greedy trial). The per-task successes of both arms are
copied into the JSON so the numbers can be checked without the runs/ folders.
"""
import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "experiments", "results")


def _stages(path, a, b):
    d = json.load(open(path))["stages"]
    return d[a]["online_success"], d[b]["online_success"]


def _run(path, a, b):
    d = json.load(open(path))
    return d[a]["online_success"], d[b]["online_success"]


def _rounds(workdir, a, b):
    def ev(r):
        e = json.load(open(os.path.join(workdir, f"round_{r}", "eval.json")))
        return dict(zip(e["task_ids"], map(bool, e["success"])))
    return ev(a), ev(b)


# (name, the results file it corrects, loader, arguments)
COMPARISONS = [
    ("GRPO 48 it (older SFT start)", "online_vs_sft_500tasks.md", _stages,
     (os.path.join(RESULTS, "online_vs_sft_500tasks.json"), "sft", "grpo")),
    ("AdaGRPO 48 it (older SFT start)", "online_vs_sft_500tasks.md", _stages,
     (os.path.join(RESULTS, "online_vs_sft_500tasks.json"), "sft", "adagrpo")),
    ("GRPO 48 it (default SFT start)", "grpo_replication.md", _run,
     (os.path.join(ROOT, "runs", "grpo48", "results.json"), "start", "grpo")),
    ("AdaGRPO 96 it", "adagrpo_long.md", _run, (os.path.join(ROOT, "runs", "adagrpo96", "results.json"), "start", "adagrpo")),
    ("AdaGRPO 192 it", "adagrpo_long.md", _run, (os.path.join(ROOT, "runs", "adagrpo192", "results.json"), "start", "adagrpo")),
    ("self-improvement round 0 -> 1", "self_improve_500.md", _rounds, (os.path.join(ROOT, "runs", "si500"), 0, 1)),
    ("self-improvement round 0 -> 2", "self_improve_500.md", _rounds, (os.path.join(ROOT, "runs", "si500"), 0, 2)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(RESULTS, "held_out_overlap_audit"))
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    from gui_jax.eval.metrics import sign_test
    from gui_jax.jobs import load_config
    from gui_jax.jobs.common import prepare
    from gui_jax.tasks.registry import make_task
    from gui_jax.tasks.splits import instance_key

    start_train, _, _, _ = prepare(load_config(os.path.join(ROOT, "configs", "quickstart.py")), tempfile.mkdtemp(),
                                   sides=())
    seen = {instance_key(t) for t in start_train}

    def trained_on(task_id):
        name, seed = task_id.rsplit("#", 1)
        return instance_key(make_task(name, int(seed))) in seen

    rows, out = [], {"start_split": "configs/quickstart.py (train seeds 0-399, test seeds 1000-1044)", "comparisons": {}}
    for name, source, load, load_args in COMPARISONS:
        before, after = load(*load_args)
        ids = [t for t in before if t in after]
        clean = [t for t in ids if not trained_on(t)]
        r = {"source": source, "tasks": len(ids), "before": sum(before[t] for t in ids),
             "after": sum(after[t] for t in ids), "clean_tasks": len(clean),
             "clean_before": sum(before[t] for t in clean), "clean_after": sum(after[t] for t in clean)}
        test = sign_test([float(before[t]) for t in clean], [float(after[t]) for t in clean])
        r.update({"clean_gained": test["gained"], "clean_lost": test["lost"], "clean_sign_p": test["p"],
                  "before_success": {t: bool(before[t]) for t in ids}, "after_success": {t: bool(after[t]) for t in ids}})
        out["comparisons"][name] = r
        rows.append(f"| {name} | {source} | {r['before']} → {r['after']} of {r['tasks']} | {r['clean_tasks']} | "
                    f"{r['clean_before']} → {r['clean_after']} | {r['clean_gained']} / {r['clean_lost']} | "
                    f"{r['clean_sign_p']:.2g} |")
    with open(args.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
    print("\n".join(["| comparison | file | all tasks | tasks not trained on | before → after on them | "
                     "gained / lost | sign-test p |", "|---|---|---|---|---|---|---|"] + rows))


if __name__ == "__main__":
    main()
