"""Where the tiny quickstart setting stops: held-out grounding and online success against SFT steps,
gathered from the committed curves, plus the largest RL gains measured on top of SFT.

    python experiments/quickstart_limit.py --continuation experiments/results/sft_continuation_800.jsonl \
        experiments/results/sft_continuation_1200.jsonl --out experiments/results/quickstart_limit

Inputs (all committed under experiments/results/ except --continuation, an sft_curve.py log):
- sft_grounding_curve.json: SFT to 2,400 steps on the older 136-episode mix (H100, same algorithm);
- sft_text_target.json: the current 903-episode mix at 400 steps (element target) and the
  label-target variant to 800 steps;
- --continuation: the current mix's quickstart SFT continued past 400 steps (sft_curve.py init_from),
  one JSON-lines log per continuation;
- compare_sft_offline_semi.json, quickstart_sft800.json, online_vs_sft_500tasks.json: the RL gains.
Writes OUT.md, OUT.json and OUT.png (held-out GR and online SR against SFT steps).
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "experiments", "results")


def _load(name):
    with open(os.path.join(RESULTS, name)) as f:
        return json.load(f)


def curves(continuation: list) -> dict:
    """{curve name: [(steps, held-out GR, greedy online SR, held-out tasks, train GR or None)]}."""
    out = {}
    grounding = _load("sft_grounding_curve.json")
    for name, pts in grounding["variants_gpu"].items():
        out[f"136-episode mix, {name} (H100)"] = [(p["steps"], p["test_GR"], p["online_SR"], p["n_test"], p.get("train_GR"))
                                                        for p in pts]
    text = _load("sft_text_target.json")
    base = text["element_baseline"]
    current = [(base["steps"], base["test_GR"], base["online_SR"], 216, None)]
    for path in continuation:
        with open(path) as f:
            current += [(r["steps"], r["test_GR"], r["online_SR"], r["n_test"], r["train_GR"]) for r in map(json.loads, f)]
    out["903-episode mix, element target (quickstart data, 2 CPU cores)"] = sorted(current)
    out["903-episode mix, label target (2 CPU cores)"] = [
        (p["steps"], p["test_GR"], p["online_SR"], 216, p.get("train_GR_60eps")) for p in text["text_target"]]
    return out


def rl_gains() -> list:
    """[(comparison, Δ online SR, exact McNemar p)]."""
    rows = []
    t = _load("compare_sft_offline_semi.json")["paired_tests"]["semi_online_rl vs sft"]
    for seed, r in sorted(t["per_seed"].items()):
        rows.append((f"semi-online RL vs SFT, quickstart seed {seed} (216 paired tasks)", r["diff"], r["mcnemar_p"]))
    rows.append((f"semi-online RL vs SFT, 3 seeds pooled ({t['pooled_tasks']} paired tasks)", t["pooled_diff"],
                 t["pooled_mcnemar_p"]))
    q = _load("quickstart_sft800.json")["paired_semi_online_rl_vs_sft"]
    rows.append((f"semi-online RL vs SFT from 800 SFT steps ({q['tasks']} paired tasks)", q["diff"], q["mcnemar_p"]))
    o = _load("online_vs_sft_500tasks.json")
    for k, r in o["paired_vs_first"].items():
        rows.append((f"online {k} ({r['tasks']} paired tasks)", r["diff"], r["mcnemar_p"]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--continuation", nargs="*", default=[], help="sft_curve.py logs (JSON lines)")
    ap.add_argument("--out", default=os.path.join(RESULTS, "quickstart_limit"))
    args = ap.parse_args()
    cs, gains = curves(args.continuation), rl_gains()
    lines = ["# Where the tiny quickstart setting stops", "",
             "Training grounding (on 60 training episodes where measured), held-out grounding (GR: the right "
             "element on click steps, expert history, greedy) and greedy online success against SFT steps, "
             "for the 1.65 M-parameter model. The dashed line in the plot is the issue's target online SR "
             "of 0.5.", "",
             "| curve | SFT steps | train GR | held-out GR | online SR | held-out tasks |", "|---|---|---|---|---|---|"]
    for name, pts in cs.items():
        for s, gr, sr, n, tr in pts:
            train = "" if tr is None else f"{tr:.3f}"
            lines.append(f"| {name} | {s} | {train} | {gr:.3f} | {sr:.3f} | {n} |")
    lines += ["", "Largest RL gains over SFT measured (Δ online SR, exact McNemar p):", "",
              "| comparison | Δ SR | p |", "|---|---|---|"]
    for name, d, p in gains:
        lines.append(f"| {name} | {d:+.3f} | {p:.2g} |")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(args.out + ".json", "w") as f:
        json.dump({"curves": cs, "rl_gains": gains, "command": " ".join(["python"] + sys.argv)}, f, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.5))
    for name, pts in cs.items():
        xs = [p[0] for p in pts]
        axes[0].plot(xs, [p[1] for p in pts], marker="o", label=name)
        axes[1].plot(xs, [p[2] for p in pts], marker="o", label=name)
    axes[0].set(xlabel="SFT steps", ylabel="held-out grounding GR", ylim=(0, 1))
    axes[1].set(xlabel="SFT steps", ylabel="greedy online SR", ylim=(0, 1))
    axes[1].axhline(0.5, color="grey", ls="--", lw=1, label="target online SR 0.5")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", fontsize=7, ncol=1, frameon=False)
    fig.tight_layout(rect=(0, 0.3, 1, 1))
    fig.savefig(args.out + ".png", dpi=120)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
