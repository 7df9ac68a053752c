"""Reward-model evaluation (docs/algorithms.md §11): step and outcome precision / recall / F1 of the positive
class, overall, by trajectory length bucket (<5, 5–10, >10 steps) and by task difficulty; and, per record
source and label (expert / rule / truncation / substitution / …), how often the RM scores it positive, which
says which kind of negative fools it.

Trajectory length of a record = the number of steps of the episode its first step comes from (the task's
length, as the papers bucket it); difficulty = that episode's `difficulty` field ("" → "unknown").
"""
from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import numpy as np

from gui_jax.core.types import Episode
from gui_jax.eval.metrics import LENGTH_BUCKETS, binary_prf, reward_model_f1, roc_auc
from gui_jax.rewards.data_engine import RewardRecord

KINDS = ("step", "outcome")


def record_length(record: RewardRecord, episodes: Mapping[str, Episode]) -> int:
    ep = episodes.get(record.steps[0].episode_id) if record.steps else None
    return len(ep.actions) if ep is not None else len(record.steps)


def record_difficulty(record: RewardRecord, episodes: Mapping[str, Episode]) -> str:
    ep = episodes.get(record.steps[0].episode_id) if record.steps else None
    return (ep.difficulty if ep is not None and ep.difficulty else "unknown")


def source_breakdown(scores: np.ndarray, labels: np.ndarray, sources: np.ndarray, threshold: float = 0.5) -> dict:
    """{'<source>/pos'|'<source>/neg': {n, mean_score, scored_positive}} over records [E] of one kind;
    scored_positive = fraction with score ≥ threshold (the error rate of a negative group)."""
    out = {}
    for src in sorted(set(sources.tolist())):
        for lab, name in ((True, "pos"), (False, "neg")):
            sel = (sources == src) & (labels == lab)
            if sel.any():
                out[f"{src}/{name}"] = {"n": int(sel.sum()), "mean_score": float(scores[sel].mean()),
                                        "scored_positive": float((scores[sel] >= threshold).mean())}
    return out


def reward_metrics(scores: Sequence[float], labels: Sequence[bool], kinds: Sequence[str], lengths: Sequence[int],
                   difficulties: Optional[Sequence[str]] = None, threshold: float = 0.5,
                   sources: Optional[Sequence[str]] = None) -> dict:
    """{kind: {'all': prf, '<5'|'5-10'|'>10': prf, 'difficulty': {name: prf}, 'by_source': …}} per step/outcome.

    All inputs per record [E]; prf = binary_prf's dict (precision, recall, f1, f1_neg, accuracy, count);
    'by_source' (when sources are given) = source_breakdown."""
    sc, y = np.asarray(scores, np.float64), np.asarray(labels, bool)
    kd, ln = np.asarray(kinds), np.asarray(lengths, np.int64)
    if not (sc.size == y.size == kd.size == ln.size):
        raise ValueError(f"reward_metrics: {sc.size} scores, {y.size} labels, {kd.size} kinds, {ln.size} lengths")
    df = None if difficulties is None else np.asarray(difficulties)
    src = None if sources is None else np.asarray(sources)
    if src is not None and src.size != sc.size:
        raise ValueError(f"reward_metrics: {sc.size} scores but {src.size} sources")
    out = {}
    for kind in KINDS:
        sel = kd == kind
        if not sel.any():
            continue
        res = reward_model_f1(sc[sel], y[sel], ln[sel], threshold)
        # threshold-free diagnostics: ranking quality, and whether the scores vary at all
        res["auc"], res["score_std"] = roc_auc(sc[sel], y[sel]), float(sc[sel].std())
        if df is not None:
            res["difficulty"] = {d: binary_prf(sc[sel & (df == d)], y[sel & (df == d)], threshold)
                                 for d in sorted(set(df[sel].tolist()))}
        if src is not None:
            res["by_source"] = source_breakdown(sc[sel], y[sel], src[sel], threshold)
        out[kind] = res
    return out


def evaluate_records(scores: Sequence[float], records: Sequence[RewardRecord], episodes: Mapping[str, Episode],
                     threshold: float = 0.5) -> dict:
    """reward_metrics of scored records (lengths and difficulties read from their episodes)."""
    records = list(records)
    if len(records) != len(scores):
        raise ValueError(f"evaluate_records: {len(records)} records but {len(scores)} scores")
    return reward_metrics(scores, [r.label for r in records], [r.kind for r in records],
                          [record_length(r, episodes) for r in records],
                          [record_difficulty(r, episodes) for r in records], threshold,
                          [r.source for r in records])


def _fmt(x: float) -> str:
    return "—" if isinstance(x, float) and math.isnan(x) else f"{x:.3f}"


COLLAPSED_STD = 1e-3  # scores this flat carry no information: the RM answers the same for every input


def collapse_warnings(metrics: dict) -> list[str]:
    """A line per kind whose held-out scores barely vary (a reward model collapsed to a constant)."""
    return [f"{kind} scores are constant (std {m['score_std']:.1e} < {COLLAPSED_STD:g}): the reward model gives "
            f"every record the same score; lower rm.train.learning_rate or check the training curve"
            for kind, m in metrics.items() if m.get("score_std", 1.0) < COLLAPSED_STD]


def format_reward_table(metrics: dict) -> str:
    """Markdown: one row per (kind, slice) with P, R, F1, F1(−), accuracy and count; then AUC per kind."""
    lines = ["| reward | slice | precision | recall | F1 | F1 (neg) | accuracy | n |",
             "|---|---|---|---|---|---|---|---|"]
    for kind in KINDS:
        if kind not in metrics:
            continue
        m = metrics[kind]
        rows = [("all", m["all"])] + [(f"length {b}", m[b]) for b in LENGTH_BUCKETS if b in m]
        rows += [(f"difficulty {d}", v) for d, v in m.get("difficulty", {}).items()]
        for name, v in rows:
            lines.append(f"| {kind} | {name} | {_fmt(v['precision'])} | {_fmt(v['recall'])} | {_fmt(v['f1'])} | "
                         f"{_fmt(v['f1_neg'])} | {_fmt(v['accuracy'])} | {int(v['count'])} |")
    aucs = [f"{k} {_fmt(metrics[k]['auc'])} (score std {metrics[k]['score_std']:.3g})" for k in KINDS
            if k in metrics and "auc" in metrics[k]]
    if aucs:
        lines += ["", "ROC AUC (threshold-free): " + "; ".join(aucs)]
    groups = [(k, g, v) for k in KINDS if k in metrics for g, v in metrics[k].get("by_source", {}).items()]
    if groups:
        lines += ["", "By record source and label (scored positive = score ≥ threshold; for a negative group, "
                      "the fraction the RM gets wrong):", "",
                  "| reward | source / label | n | mean score | scored positive |", "|---|---|---|---|---|"]
        lines += [f"| {k} | {g} | {v['n']} | {v['mean_score']:.3f} | {v['scored_positive']:.3f} |"
                  for k, g, v in groups]
    lines += [f"WARNING: {w}" for w in collapse_warnings(metrics)]
    return "\n".join(lines)
