"""Evaluation metrics (docs/algorithms.md §11): SOP, AndroidControl step metrics, online success and pass@k,
AndroidLab ratios, reward-model F1, Wilson intervals and paired tests (exact McNemar, bootstrap).
Host-side numpy; every function takes plain sequences/arrays and returns floats (or dicts of
floats). Rates are fractions in [0, 1]; NaN where a quantity is undefined (no episodes in a bucket,
no successful episode, no predicted positive)."""
from __future__ import annotations

import math
from typing import Hashable, Optional, Sequence, Union

import numpy as np

LENGTH_BUCKETS = ("<5", "5-10", ">10")


def _arr(x, dtype=np.float64) -> np.ndarray:
    return np.asarray(x, dtype=dtype).reshape(-1)


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if x.size else float("nan")


# --------------------------------------------------------------------------- SOP (UI-S1 A.5)
def sop_metrics(successful_steps: Sequence[int], total_steps: Sequence[int]) -> dict[str, float]:
    """PG = mean s_i/t_i, TSR = mean 1[s_i = t_i], Score = (PG + TSR)/2 over N episodes."""
    s, t = _arr(successful_steps), _arr(total_steps)
    if s.shape != t.shape:
        raise ValueError(f"sop_metrics: {s.size} successful_steps vs {t.size} total_steps")
    if np.any(t <= 0) or np.any(s < 0) or np.any(s > t):
        bad = int(np.nonzero((t <= 0) | (s < 0) | (s > t))[0][0])
        raise ValueError(f"sop_metrics: episode {bad} has s={s[bad]}, t={t[bad]}; need 0 ≤ s ≤ t, t ≥ 1")
    pg = _mean(s / t)
    tsr = _mean((s == t).astype(np.float64))
    return {"PG": pg, "TSR": tsr, "Score": (pg + tsr) / 2}


# --------------------------------------------------------------------------- step metrics (AndroidControl)
def step_metrics(type_match: Sequence[bool], exact_match: Sequence[bool],
                 is_grounding: Optional[Sequence[bool]] = None) -> dict[str, float]:
    """TM = mean type match; SR = mean step success (exact match); GR = exact-match accuracy over the
    grounding steps (expert action targets a point: click / long_press), NaN if none given.

    All inputs are per step [S]; is_grounding marks the steps that count for GR.
    """
    tm, em = _arr(type_match, bool), _arr(exact_match, bool)
    if tm.shape != em.shape:
        raise ValueError(f"step_metrics: {tm.size} type_match vs {em.size} exact_match")
    if np.any(em & ~tm):
        raise ValueError("step_metrics: a step has exact_match without type_match")
    out = {"TM": _mean(tm.astype(np.float64)), "SR": _mean(em.astype(np.float64))}
    if is_grounding is not None:
        g = _arr(is_grounding, bool)
        if g.shape != tm.shape:
            raise ValueError(f"step_metrics: {g.size} is_grounding vs {tm.size} steps")
        out["GR"] = _mean(em[g].astype(np.float64))
    else:
        out["GR"] = float("nan")
    return out


# --------------------------------------------------------------------------- online success
def pass_at_k_unbiased(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n trials with c successes: 1 − C(n−c, k)/C(n, k) (Chen et al. 2021)."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"pass_at_k_unbiased: need 0 ≤ c ≤ n and k ≥ 1 (n={n}, c={c}, k={k})")
    if k > n:
        raise ValueError(f"pass_at_k_unbiased: k={k} exceeds the number of trials n={n}")
    if n - c < k:
        return 1.0
    # product form avoids huge binomials: C(n−c, k)/C(n, k) = Π_{i=n−c+1}^{n} (1 − k/i)
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k(successes: Union[Sequence[Sequence[bool]], np.ndarray], k: int, unbiased: bool = True) -> float:
    """Mean pass@k over tasks; successes [tasks, n trials] (bool).

    unbiased=True uses the unbiased estimator on all n trials; False uses "any success among the
    first k trials".
    """
    s = np.asarray(successes, dtype=bool)
    if s.ndim != 2:
        raise ValueError(f"pass_at_k: successes must be [tasks, trials], got shape {s.shape}")
    n = s.shape[1]
    if k < 1 or k > n:
        raise ValueError(f"pass_at_k: k={k} must be in [1, {n}]")
    if unbiased:
        return _mean(np.array([pass_at_k_unbiased(n, int(c), k) for c in s.sum(axis=1)]))
    return _mean(s[:, :k].any(axis=1).astype(np.float64))


def success_by_bucket(success: Sequence[bool], buckets: Sequence[Hashable]) -> dict[Hashable, float]:
    """Success rate per difficulty/complexity bucket plus 'all'; inputs per episode [E]."""
    s = _arr(success, bool)
    b = list(buckets)
    if len(b) != s.size:
        raise ValueError(f"success_by_bucket: {s.size} episodes vs {len(b)} bucket labels")
    out: dict[Hashable, float] = {}
    for key in sorted(set(b), key=repr):
        sel = np.array([x == key for x in b])
        out[key] = _mean(s[sel].astype(np.float64))
    out["all"] = _mean(s.astype(np.float64))
    return out


def mean_steps_to_success(success: Sequence[bool], steps: Sequence[int]) -> float:
    """Mean number of steps over the successful episodes (NaN if none succeeded)."""
    s, t = _arr(success, bool), _arr(steps)
    if s.shape != t.shape:
        raise ValueError(f"mean_steps_to_success: {s.size} success flags vs {t.size} step counts")
    return _mean(t[s])


# --------------------------------------------------------------------------- AndroidLab
def androidlab_metrics(success: Sequence[bool], subgoals_done: Sequence[int], subgoals_total: Sequence[int],
                       expert_steps: Sequence[int], agent_steps: Sequence[int],
                       reasonable_ops: Sequence[int]) -> dict[str, float]:
    """AndroidLab: SR; Sub-goal SR = Σ done / Σ total sub-goals; Reversed Redundancy Ratio
    RRR = Σ expert steps / Σ agent steps over successful episodes; Reasonable Operation Ratio
    ROR = Σ reasonable operations (the screen changed) / Σ agent steps. All per episode [E]."""
    s = _arr(success, bool)
    done, tot = _arr(subgoals_done), _arr(subgoals_total)
    exp_, agent, ok_ops = _arr(expert_steps), _arr(agent_steps), _arr(reasonable_ops)
    if not (s.size == done.size == tot.size == exp_.size == agent.size == ok_ops.size):
        raise ValueError("androidlab_metrics: all inputs must have one entry per episode")
    rrr_den = agent[s].sum()
    return {"SR": _mean(s.astype(np.float64)),
            "SubSR": float(done.sum() / tot.sum()) if tot.sum() > 0 else float("nan"),
            "RRR": float(exp_[s].sum() / rrr_den) if rrr_den > 0 else float("nan"),
            "ROR": float(ok_ops.sum() / agent.sum()) if agent.sum() > 0 else float("nan")}


# --------------------------------------------------------------------------- reward models
def length_bucket(num_steps: int) -> str:
    """'<5', '5-10' (inclusive) or '>10' by trajectory length in steps."""
    if num_steps < 5:
        return "<5"
    return "5-10" if num_steps <= 10 else ">10"


def binary_prf(scores: Sequence[float], labels: Sequence[bool], threshold: float = 0.5) -> dict[str, float]:
    """Precision, recall, F1 of the positive class (score ≥ threshold = predicted positive), accuracy,
    and F1 of the negative class; NaN where a ratio has a zero denominator (F1 is 0 when P = R = 0)."""
    sc, y = _arr(scores), _arr(labels, bool)
    if sc.shape != y.shape:
        raise ValueError(f"binary_prf: {sc.size} scores vs {y.size} labels")
    pred = sc >= threshold

    def prf(p, t):
        tp = float(np.sum(p & t))
        npred, npos = float(np.sum(p)), float(np.sum(t))
        prec = tp / npred if npred else float("nan")
        rec = tp / npos if npos else float("nan")
        if math.isnan(prec) or math.isnan(rec):
            f1 = float("nan") if (npred == 0 and npos == 0) else 0.0
        else:
            f1 = 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
        return prec, rec, f1

    p, r, f = prf(pred, y)
    _, _, fneg = prf(~pred, ~y)
    return {"precision": p, "recall": r, "f1": f, "f1_neg": fneg, "accuracy": _mean((pred == y).astype(np.float64)),
            "count": float(y.size)}


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """P(score of a random positive > score of a random negative), ties counting ½ (Mann–Whitney U / n₊n₋).

    scores, labels per example [E]; NaN without both classes. Threshold-free: 0.5 = no ranking signal."""
    sc, y = _arr(scores), _arr(labels, bool)
    if sc.shape != y.shape:
        raise ValueError(f"roc_auc: {sc.size} scores vs {y.size} labels")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(sc, kind="stable")
    ranks = np.empty(sc.size, np.float64)
    sorted_sc = sc[order]
    i = 0
    while i < sc.size:  # average ranks over ties
        j = i
        while j + 1 < sc.size and sorted_sc[j + 1] == sorted_sc[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def judge_agreement(scores: Sequence[float], truth: Sequence[bool], threshold: float = 0.5) -> dict[str, float]:
    """A success judge against the rule check: scores [E] (P(success)), truth [E] (the check's verdicts).

    Agreement (with its Wilson 95 % interval), precision / recall / F1 of "success", Cohen's κ (agreement beyond
    what the two marginals give by chance; NaN when both say one class throughout), AUROC, the judged and the
    true success rates, and the confusion counts."""
    sc, y = _arr(scores), _arr(truth, bool)
    if sc.shape != y.shape:
        raise ValueError(f"judge_agreement: {sc.size} scores vs {y.size} verdicts")
    pred = sc >= threshold
    n = int(y.size)
    tp, fp = int(np.sum(pred & y)), int(np.sum(pred & ~y))
    fn, tn = int(np.sum(~pred & y)), int(np.sum(~pred & ~y))
    prf = binary_prf(sc, y, threshold)
    agree = tp + tn
    lo, hi = wilson_interval(agree, n)
    po = agree / n if n else float("nan")
    pe = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / n ** 2 if n else float("nan")
    kappa = (po - pe) / (1 - pe) if n and pe < 1 else float("nan")
    return {"n": n, "agreement": po, "agreement_ci95": [lo, hi], "precision": prf["precision"],
            "recall": prf["recall"], "f1": prf["f1"], "kappa": kappa, "auroc": roc_auc(sc, y),
            "judged_rate": (tp + fp) / n if n else float("nan"), "true_rate": (tp + fn) / n if n else float("nan"),
            "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def reward_model_f1(scores: Sequence[float], labels: Sequence[bool], lengths: Optional[Sequence[int]] = None,
                    thresholds: Union[float, Sequence[float]] = 0.5) -> dict:
    """Reward-model classification metrics overall and by trajectory length bucket (<5, 5–10, >10).

    scores/labels/lengths per example [E] (lengths = steps of the trajectory the example comes from).
    One threshold → {'all': prf, '<5': prf, ...}; several → {threshold: that dict}.
    """
    if not isinstance(thresholds, (int, float)):
        return {float(t): reward_model_f1(scores, labels, lengths, float(t)) for t in thresholds}
    sc, y = _arr(scores), _arr(labels, bool)
    out = {"all": binary_prf(sc, y, thresholds)}
    if lengths is not None:
        ln = _arr(lengths, np.int64)
        if ln.size != sc.size:
            raise ValueError(f"reward_model_f1: {ln.size} lengths vs {sc.size} scores")
        names = np.array([length_bucket(int(x)) for x in ln])
        for bucket in LENGTH_BUCKETS:
            sel = names == bucket
            if sel.any():
                out[bucket] = binary_prf(sc[sel], y[sel], thresholds)
    return out


# --------------------------------------------------------------------------- statistics (SR intervals, paired tests)
Z_95 = 1.959963984540054  # two-sided 95 % standard-normal quantile


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion k/n: centre (p̂ + z²/2n)/(1 + z²/n),
    half-width z/(1 + z²/n)·√(p̂(1−p̂)/n + z²/4n²). (NaN, NaN) when n = 0."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson_interval: need 0 ≤ successes ≤ n (successes={successes}, n={n})")
    if n == 0:
        return float("nan"), float("nan")
    p, z2 = successes / n, z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_counts(before: Sequence[bool], after: Sequence[bool]) -> tuple[int, int]:
    """Discordant pairs of two paired binary outcomes per task [T]: (b, c) with
    b = #(before succeeded, after failed) and c = #(before failed, after succeeded)."""
    x, y = _arr(before, bool), _arr(after, bool)
    if x.shape != y.shape:
        raise ValueError(f"paired outcomes need one entry per task each: {x.size} vs {y.size}")
    return int(np.sum(x & ~y)), int(np.sum(~x & y))


def _two_sided_binomial_half(b: int, c: int) -> float:
    """p = min(1, 2·P(X ≤ min(b, c))) for X ~ Binomial(b + c, 1/2); 1.0 when b + c = 0."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def mcnemar_exact(before: Sequence[bool], after: Sequence[bool]) -> float:
    """Two-sided exact McNemar p-value on the same tasks [T]: under H0 the discordant pairs split
    Binomial(b + c, 1/2); p = min(1, 2·P(X ≤ min(b, c))). 1.0 when there is no discordant pair."""
    return _two_sided_binomial_half(*paired_counts(before, after))


def sign_test(before: Sequence[float], after: Sequence[float]) -> dict[str, float]:
    """Exact two-sided sign test on per-task outcomes [T] (e.g. success rates over k trials): tasks
    that got worse (lost) and better (gained), ties dropped; p as in `mcnemar_exact`, which it equals
    on 0/1 outcomes."""
    x, y = _arr(before), _arr(after)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"sign_test: need equal, non-empty per-task outcomes ({x.size} vs {y.size})")
    lost, gained = int(np.sum(y < x)), int(np.sum(y > x))
    return {"lost": lost, "gained": gained, "p": _two_sided_binomial_half(lost, gained)}


def bootstrap_mean_interval(values: Sequence[float], *, num_samples: int = 10000, seed: int = 0,
                            confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of per-task values [T], resampling tasks (the unit
    that repeats when each task is tried k times: trials of one task are not independent)."""
    x = _arr(values)
    if x.size == 0:
        return float("nan"), float("nan")
    boot = x[np.random.default_rng(seed).integers(0, x.size, size=(num_samples, x.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    return float(np.quantile(boot, alpha)), float(np.quantile(boot, 1 - alpha))


def paired_bootstrap(before: Sequence[float], after: Sequence[float], *, num_samples: int = 10000,
                     seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """Paired bootstrap of mean(after) − mean(before) over tasks [T], resampling tasks with
    replacement (numpy PCG64 from `seed`: same inputs and seed, same output).
    Returns diff, the percentile interval lo/hi, and a two-sided p = min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0)))."""
    x, y = _arr(before), _arr(after)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"paired_bootstrap: need equal, non-empty per-task outcomes ({x.size} vs {y.size})")
    d = y - x
    idx = np.random.default_rng(seed).integers(0, d.size, size=(num_samples, d.size))
    boot = d[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    p = min(1.0, 2.0 * min(float(np.mean(boot <= 0)), float(np.mean(boot >= 0))))
    return {"diff": float(d.mean()), "lo": float(np.quantile(boot, alpha)),
            "hi": float(np.quantile(boot, 1 - alpha)), "p": p}


def _f1_of_counts(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """F1 of the positive class from summed counts (any shape); 0 where 2tp + fp + fn = 0."""
    den = 2 * tp + fp + fn
    return np.where(den > 0, 2 * tp / np.maximum(den, 1), 0.0)


def paired_f1_bootstrap(scores_a: Sequence[float], scores_b: Sequence[float], labels: Sequence[bool],
                        clusters: Sequence[Hashable], *, threshold: float = 0.5, num_samples: int = 2000,
                        seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """F1(b) − F1(a) of two classifiers' scores [N] on the same records (labels [N]), with a paired bootstrap
    that resamples clusters [N] (records of one held-out episode share a cluster: they are not independent) with
    replacement (numpy PCG64 from `seed`). Returns f1_a, f1_b, diff, the percentile interval lo/hi and a
    two-sided p = min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0))), as `paired_bootstrap`."""
    a, b, y = _arr(scores_a), _arr(scores_b), _arr(labels, bool)
    if not (a.shape == b.shape == y.shape) or a.size == 0 or len(clusters) != a.size:
        raise ValueError(f"paired_f1_bootstrap: need equal, non-empty scores, labels and clusters "
                         f"({a.size}, {b.size}, {y.size}, {len(clusters)})")
    _, cid = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    ncl = int(cid.max()) + 1

    def counts(s):  # [3, C]: tp, fp, fn per cluster
        p = s >= threshold
        return np.stack([np.bincount(cid, w, ncl) for w in (p & y, p & ~y, ~p & y)]).astype(np.float64)
    ca, cb = counts(a), counts(b)
    idx = np.random.default_rng(seed).integers(0, ncl, size=(num_samples, ncl))
    boot = _f1_of_counts(*cb[:, idx].sum(-1)) - _f1_of_counts(*ca[:, idx].sum(-1))
    f1_a, f1_b = float(_f1_of_counts(*ca.sum(-1))), float(_f1_of_counts(*cb.sum(-1)))
    alpha = (1.0 - confidence) / 2
    p = min(1.0, 2.0 * min(float(np.mean(boot <= 0)), float(np.mean(boot >= 0))))
    return {"f1_a": f1_a, "f1_b": f1_b, "diff": f1_b - f1_a, "lo": float(np.quantile(boot, alpha)),
            "hi": float(np.quantile(boot, 1 - alpha)), "p": p}
