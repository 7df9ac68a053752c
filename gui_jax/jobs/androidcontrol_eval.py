"""Job: offline evaluation on AndroidControl's published TFRecords (UI-S1's AC-High / AC-Low protocol).

    python -m gui_jax.main --config configs/androidcontrol_eval.py \
        --config.androidcontrol.paths='("/data/android_control/android_control-*",)' \
        --config.androidcontrol.split_file=/data/android_control/splits.json --config.model.checkpoint=DIR

Step metrics with the expert history (type match TM, grounding GR over click/long-press steps, step
success SR) for the high-level instruction (AC-High: the episode goal at every step) and the low-level one
(AC-Low: each step's own instruction), and SOP (the policy's own history, stop at the first mismatch) on
the goal. Writes androidcontrol_eval.json and prints a table; SR carries its 95 % Wilson interval.
"""
from __future__ import annotations

import glob
import json
import os
from gui_jax.config_check import RunError


def load_episodes(acfg) -> list:
    from gui_jax.data.androidcontrol import load_androidcontrol_splits, read_androidcontrol
    paths = sorted(p for pattern in acfg.paths for p in glob.glob(pattern))
    if not paths:
        raise RunError(f"androidcontrol.paths {list(acfg.paths)} match no file")
    ids = None
    if acfg.split_file:
        splits = load_androidcontrol_splits(acfg.split_file)
        if acfg.split not in splits:
            raise RunError(f"{acfg.split_file} has no split {acfg.split!r}; splits: {sorted(splits)}")
        ids = set(int(i) for i in splits[acfg.split])
    eps = list(read_androidcontrol(paths, episode_ids=ids, parse_ui_trees=acfg.ui_trees))
    if acfg.max_episodes:
        eps = eps[: int(acfg.max_episodes)]
    if not eps:
        raise RunError(f"no AndroidControl episodes read from {len(paths)} file(s) (split {acfg.split!r})")
    return eps


def evaluate_androidcontrol(policy, episodes, pcfg, levels=("high", "low"), sop: bool = True,
                            reward_preset: str = "paper") -> dict:
    """{"AC-High": {TM, GR, SR, ...}, "AC-Low": {...}, "SOP": {PG, TSR, Score}} for the given levels."""
    from gui_jax.eval.metrics import wilson_interval
    from gui_jax.eval.offline import evaluate_sop, evaluate_steps
    out = {}
    for level in levels:
        if level not in ("high", "low"):
            raise RunError(f"androidcontrol.levels: {level!r} is not 'high' or 'low'")
        m = evaluate_steps(policy, episodes, pcfg, reward_preset=reward_preset,
                           instruction="goal" if level == "high" else "step")
        n = int(m["steps"])
        m["SR_ci95"] = list(wilson_interval(round(m["SR"] * n), n))
        out[f"AC-{level.capitalize()}"] = m
    if sop:
        out["SOP"] = {k: v for k, v in evaluate_sop(policy, episodes, pcfg, reward_preset=reward_preset).items()}
    return out


def format_table(results: dict) -> str:
    lines = ["| protocol | TM | GR | SR [95 % CI] | steps |", "|---|---|---|---|---|"]
    for name, m in results.items():
        if name.startswith("AC-"):
            lo, hi = m["SR_ci95"]
            lines.append(f"| {name} | {m['TM']:.3f} | {m['GR']:.3f} | {m['SR']:.3f} [{lo:.3f}, {hi:.3f}] | "
                         f"{int(m['steps'])} |")
    if "SOP" in results:
        s = results["SOP"]
        lines.append(f"\nSOP: PG {s['PG']:.3f}, TSR {s['TSR']:.3f}, Score {s['Score']:.3f}")
    return "\n".join(lines)


def run(config, workdir: str) -> None:
    from gui_jax.jobs.common import eval_agent, require_weights
    acfg = config.androidcontrol
    require_weights(config, "androidcontrol_eval")
    episodes = load_episodes(acfg)
    agent, pcfg = eval_agent(config)
    results = evaluate_androidcontrol(agent.policy, episodes, pcfg, tuple(acfg.levels), bool(acfg.sop))
    results["episodes"] = len(episodes)
    with open(os.path.join(workdir, "androidcontrol_eval.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(format_table(results))
