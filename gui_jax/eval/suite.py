"""The evaluation suite of a policy on held-out episodes and tasks: SOP, step metrics, online SR,
and the results table with 95 % Wilson intervals and paired stage-vs-stage tests."""
from __future__ import annotations

import contextlib
import time
from typing import Mapping, Optional, Sequence

import numpy as np

from gui_jax.eval.greedy_memo import GreedyMemo
from gui_jax.eval.metrics import mcnemar_exact, paired_bootstrap, wilson_interval
from gui_jax.eval.offline import evaluate_sop, evaluate_steps
from gui_jax.eval.online_success import online_metrics, run_online_episodes

# Keys of an evaluate_agent result that are wall-clock timings (not part of the reproducible result).
TIMING_KEYS = ("eval_seconds", "seconds_sop", "seconds_steps", "seconds_online")


def evaluate_agent(agent, test_eps, test_tasks, pcfg, config) -> dict:
    """`agent` is anything with a `.policy`; `config` supplies `eval` and `data.resolution` (and `env`, when it has
    one: online episodes then run on `env.backend`; SOP and step metrics stay on `test_eps`).

    Besides the rates, the result keeps the per-task greedy online outcomes (`online_success`,
    0/1 in task order, with `online_task_ids`) so stages can be compared pairwise, and the counts
    behind each rate (`SOP_episodes`, `step_count`) for the Wilson intervals.
    """
    ecfg = config.eval
    bucketing = getattr(agent.policy, "batch_bucketing", None)  # JaxPolicy: eval.sample_batch_buckets ('' = as is)
    with bucketing(ecfg.get("sample_batch_buckets", "")) if bucketing else contextlib.nullcontext():
        return _evaluate(agent, test_eps, test_tasks, pcfg, config)


def _evaluate(agent, test_eps, test_tasks, pcfg, config) -> dict:
    ecfg = config.eval
    seed = int(config.get("seed", 0))
    policy = GreedyMemo(agent.policy)  # SOP, step metrics and the greedy trial share many prompts
    t0 = time.time()
    out = {f"SOP_{k}": v for k, v in evaluate_sop(policy, test_eps, pcfg, seed=seed).items()}
    t1 = time.time()
    if ecfg.step_metrics:
        out.update(evaluate_steps(policy, test_eps, pcfg, seed=seed))
        out["step_count"] = out.pop("steps")
    t2 = time.time()
    kw = dict(resolution=tuple(config.data.resolution), max_steps=ecfg.max_steps, seed=seed,
              env_cfg=config.get("env"))
    greedy = run_online_episodes(policy, test_tasks, pcfg, trials=1, temperature=0.0, **kw)
    online = online_metrics(greedy)
    if ecfg.online_trials > 1:  # pass@k from sampled trials; SR stays the greedy trial
        sampled = run_online_episodes(agent.policy, test_tasks, pcfg, trials=ecfg.online_trials,
                                      temperature=ecfg.online_temperature, **kw)
        online.update({k: v for k, v in online_metrics(sampled).items() if k.startswith("pass@")})
    out.update({f"online_{k}": v for k, v in online.items()})
    out["online_success"] = [int(r["success"]) for r in greedy]
    out["online_task_ids"] = [r["task_id"] for r in greedy]
    out["greedy_decoded"], out["greedy_reused"] = policy.misses, policy.hits
    t3 = time.time()
    out.update({"seconds_sop": t1 - t0, "seconds_steps": t2 - t1, "seconds_online": t3 - t2,
                "eval_seconds": t3 - t0})
    return out


def split_timings(result: dict) -> tuple[dict, dict]:
    """(result without timings, timings) — the first part is what must repeat exactly."""
    return ({k: v for k, v in result.items() if k not in TIMING_KEYS},
            {k: v for k, v in result.items() if k in TIMING_KEYS})


# rate column -> how to find its count of trials: a key holding n, or the per-task outcome list
_RATE_COUNTS = {"SOP_TSR": "SOP_episodes", "SR": "step_count", "online_SR": "online_success"}


def _nan(v) -> bool:
    return isinstance(v, float) and v != v


def rate_interval(result: Mapping, column: str) -> Optional[tuple[int, int, float, float]]:
    """(successes, n, lo, hi) of a rate column with its Wilson 95 % interval, or None if the
    result does not carry the count behind that rate."""
    source = _RATE_COUNTS.get(column)
    if source is None or source not in result or column not in result:
        return None
    if isinstance(result[source], (list, tuple)):
        n, k = len(result[source]), int(sum(result[source]))
    else:
        n = int(result[source])
        k = int(round(float(result[column]) * n))
    lo, hi = wilson_interval(k, n)
    return k, n, lo, hi


def paired_test(before: Mapping, after: Mapping, *, method: str = "mcnemar", seed: int = 0) -> float:
    """Two-sided p-value of online success between two stages evaluated on the same tasks:
    exact McNemar (default) or a paired bootstrap of the SR difference."""
    if before.get("online_task_ids") != after.get("online_task_ids"):
        raise ValueError("paired test needs both stages evaluated on the same online tasks in the same order")
    a, b = before["online_success"], after["online_success"]
    if method == "mcnemar":
        return mcnemar_exact(a, b)
    if method == "bootstrap":
        return paired_bootstrap(a, b, seed=seed)["p"]
    raise ValueError(f"unknown paired test {method!r}; known: mcnemar, bootstrap")


def format_table(results: dict, columns=("SOP_PG", "SOP_TSR", "SOP_Score", "TM", "GR", "SR", "online_SR",
                                        "online_SubSR", "online_RRR", "online_ROR"),
                 *, compare_to: Optional[Mapping[str, str]] = None, method: str = "mcnemar") -> str:
    """Markdown table, one row per stage (in dict order). Rates with a known count print as
    `0.512 [0.443, 0.580]` (Wilson 95 %). The last column is the paired p-value of online success
    against `compare_to[stage]` (default: the previous stage), with the SR difference."""
    stages = [(s, r) for s, r in results.items() if isinstance(r, Mapping)]
    # a column is shown when some stage has a value for it (AndroidLab's SubSR only where tasks carry sub-goals)
    cols = [c for c in columns if any(c in r and not _nan(r[c]) for _, r in stages)]
    paired = any("online_success" in r for _, r in stages) and len(stages) > 1
    head = cols + (["Δ online_SR (p, paired)"] if paired else [])
    lines = ["| stage | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for i, (stage, r) in enumerate(stages):
        cells = []
        for c in cols:
            v = float(r.get(c, float("nan")))
            ci = rate_interval(r, c)
            cells.append(f"{v:.3f}" + (f" [{ci[2]:.3f}, {ci[3]:.3f}]" if ci else ""))
        if paired:
            ref = (compare_to or {}).get(stage) or (stages[i - 1][0] if i else None)
            if ref and ref in results and "online_success" in r and "online_success" in results[ref]:
                base = results[ref]
                diff = float(np.mean(r["online_success"])) - float(np.mean(base["online_success"]))
                p = paired_test(base, r, method=method)
                cells.append(f"{diff:+.3f} vs {ref} (p={p:.2g})")
            else:
                cells.append("")
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def template_counts(columns: Mapping[str, tuple[Sequence, Sequence]]) -> dict[str, dict[str, list[int]]]:
    """{template: {column: [successes, tasks]}}, templates sorted, from {column: (task ids, 0/1 outcomes)}; a task's
    template is the part of its id before '#'."""
    counts: dict[str, dict[str, list[int]]] = {}
    for col, (ids, outcomes) in columns.items():
        for tid, ok in zip(ids, outcomes):
            kn = counts.setdefault(str(tid).split("#")[0], {}).setdefault(col, [0, 0])
            kn[0] += int(ok)
            kn[1] += 1
    return dict(sorted(counts.items()))


def counts_table(counts: Mapping[str, Mapping[str, Sequence[int]]], columns: Sequence[str]) -> str:
    """Markdown table of `template_counts`-shaped counts, one `k/n` column per name in `columns` ('' where absent)."""
    lines = ["| template | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    lines += [f"| {tpl} | " + " | ".join("{}/{}".format(*row[c]) if c in row else "" for c in columns) + " |"
              for tpl, row in counts.items()]
    return "\n".join(lines)


def template_table(results: dict) -> str:
    """Markdown table of greedy online successes per task template (the part of `task_id` before '#'), one
    column per stage: `k/n`. Shows where a stage's SR comes from; '' when no stage has per-task outcomes."""
    stages = {s: (r["online_task_ids"], r["online_success"]) for s, r in results.items()
              if isinstance(r, Mapping) and "online_success" in r}
    return counts_table(template_counts(stages), list(stages)) if stages else ""
