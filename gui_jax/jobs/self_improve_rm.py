"""The reward model's side of the self_improve job (UI-Genie's co-evolution): the data every round starts from,
the data it grows by, and each round's RM judged on the same held-out records.

Every round's RM is scored once on the held-out records (round_<r>/rm_eval/: results.json, test_scores.npy).
Beside the record's own score (the RM's P(+) of that step or of terminate(success) there), each record is
also judged by its prefix minimum (likelihood.prefix_min_scores: its score lowered to the least step score of
its earlier steps, Math-Shepherd's rule for a trajectory; metrics_prefix_min, test_scores_prefix_min.npy).
rm_rounds.json compares each round's F1 with the round before and with round 0, both ways of scoring, by a
paired bootstrap over held-out episodes (eval/metrics.paired_f1_bootstrap): "RM F1 rising across rounds" is a
difference with its interval, not two numbers side by side.
"""
from __future__ import annotations

import json
import os
from typing import Callable, Optional

import ml_collections
import numpy as np

RM_DATA_KEY = "rm_data.json"
ROUNDS_KEY = "rm_rounds.json"
SCORINGS = {"own": ("metrics", "test_scores.npy"), "prefix_min": ("metrics_prefix_min", "test_scores_prefix_min.npy")}


def read_json(path: str):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def core_rm_data(config):
    """rm.data without the parts that need another model or rollouts (hard negatives, potential labels): the
    engine's core records, the RM data every round starts from."""
    d = ml_collections.ConfigDict(config.rm.data.to_dict())
    for name, off in (("hard_negative_checkpoint", ""), ("potential_labels", False)):
        if name in d:
            d[name] = off
    return d


def grown_rm_data(base_records, base_episodes: dict, rounds_synth) -> tuple[list, dict, list]:
    """(records, episodes by id, records produced per round): the base records, then each round's
    data_engine.synthesis_records of its (successes, failures), appended in round order."""
    from gui_jax.rewards.data_engine import check_label_conflicts, synthesis_records
    records, lookup, produced = list(base_records), dict(base_episodes), []
    for ok, failed in rounds_synth:
        lookup.update({str(e.episode_id): e for e in list(ok) + list(failed)})
        produced.append(synthesis_records(ok, failed))
        records += produced[-1]
    check_label_conflicts(records, lookup)
    return records, lookup, produced


def rm_round_eval(rm, test_data, pcfg, rcfg, folder: str) -> dict:
    """The round's RM on the held-out records (reward_model.evaluate_rm into `folder`), once."""
    from gui_jax.jobs.reward_model import evaluate_rm
    path = os.path.join(folder, "results.json")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        evaluate_rm(rm, test_data.records, list(test_data.episodes.values()), pcfg, rcfg, folder)
    return read_json(path)["metrics"]


def f1_of(metrics: Optional[dict], kind: str) -> float:
    return float((metrics or {}).get(kind, {}).get("all", {}).get("f1", float("nan")))


def record_clusters(records) -> list[str]:
    """The held-out episode each record comes from (its first step's episode): the bootstrap's unit."""
    return [str(r.steps[0].episode_id) if r.steps else f"#{i}" for i, r in enumerate(records)]


def add_prefix_min(folder: str, test_data, score_missing: Callable[[list], np.ndarray]) -> dict:
    """Adds the prefix-minimum scores and metrics to a round's rm_eval folder (from its test_scores.npy; the
    prefixes no held-out record covers are scored by score_missing), once; returns those metrics."""
    from gui_jax.eval.rm_metrics import evaluate_records
    from gui_jax.rewards.likelihood import prefix_min_scores
    path = os.path.join(folder, "results.json")
    res = read_json(path)
    if res is None:
        raise FileNotFoundError(f"{path}: the round's RM evaluation is missing")
    if "metrics_prefix_min" not in res:
        scores = np.load(os.path.join(folder, "test_scores.npy"))
        low = prefix_min_scores(test_data.records, test_data.episodes, scores, score_missing)
        np.save(os.path.join(folder, SCORINGS["prefix_min"][1]), low)
        res["metrics_prefix_min"] = evaluate_records(low, test_data.records, test_data.episodes)
        with open(path, "w") as f:
            json.dump(res, f, indent=1, default=float)
    return res["metrics_prefix_min"]


def compare_rounds(workdir: str, rounds: int, test_data, *, num_samples: int = 2000) -> dict:
    """rm_rounds.json: per scoring (own, prefix_min) and kind (step, outcome), each round's held-out F1 and the
    paired bootstrap of its difference with the round before and with round 0 (clusters: held-out episodes)."""
    from gui_jax.eval.metrics import binary_prf, paired_f1_bootstrap
    labels = np.array([bool(r.label) for r in test_data.records])
    kinds = np.array([r.kind for r in test_data.records])
    clusters = np.array(record_clusters(test_data.records))
    out: dict = {"records": int(labels.size), "clusters": int(len(set(clusters.tolist()))),
                 "num_samples": int(num_samples), "scorings": {}}
    for name, (_, npy) in SCORINGS.items():
        paths = [os.path.join(workdir, f"round_{r}", "rm_eval", npy) for r in range(rounds + 1)]
        if not all(os.path.exists(p) for p in paths):
            continue
        scores = [np.load(p) for p in paths]
        per_kind = {}
        for kind in ("step", "outcome"):
            sel = kinds == kind
            if not sel.any():
                continue
            rows = []
            for r in range(rounds + 1):
                row = {"round": r}
                for ref, key in ((r - 1, "vs_previous"), (0, "vs_round_0")):
                    if 0 <= ref < r and not (key == "vs_round_0" and ref == r - 1):
                        row[key] = paired_f1_bootstrap(scores[ref][sel], scores[r][sel], labels[sel], clusters[sel],
                                                       num_samples=num_samples, seed=r)
                row["f1"] = binary_prf(scores[r][sel], labels[sel])["f1"]
                rows.append(row)
            per_kind[kind] = rows
        out["scorings"][name] = per_kind
    with open(os.path.join(workdir, ROUNDS_KEY), "w") as f:
        json.dump(out, f, indent=1)
    return out


def rising(rows: list) -> bool:
    """Every round's F1 above the round before's, each difference's 95 % interval above 0."""
    return len(rows) > 1 and all(x["vs_previous"]["lo"] > 0 for x in rows[1:])


def format_rm_rounds(cmp: dict) -> str:
    """The rm_rounds.json table: a row per scoring and kind, a column per round (F1, Δ vs the round before)."""
    scorings = cmp.get("scorings", {})
    if not scorings:
        return ""
    n = max(len(rows) for per in scorings.values() for rows in per.values())
    floor = 1.0 / cmp.get("num_samples", 2000)

    def p_text(p: float) -> str:  # a bootstrap p of 0 only says: below one resample in num_samples
        return f"p<{floor:.0e}" if p < floor else f"p={p:.3g}"
    lines = ["| RM scoring | kind | " + " | ".join(f"round {r}: F1 (Δ vs round {r - 1} [95 %], p)" if r else
                                                  "round 0: F1" for r in range(n)) + " | rising every round |",
             "|---|---|" + "---|" * n + "---|"]
    for name, per in scorings.items():
        for kind, rows in per.items():
            cells = [f"{rows[0]['f1']:.3f}"] + [
                f"{x['f1']:.3f} ({x['vs_previous']['diff']:+.3f} [{x['vs_previous']['lo']:+.3f}, "
                f"{x['vs_previous']['hi']:+.3f}], {p_text(x['vs_previous']['p'])})" for x in rows[1:]]
            lines.append(f"| {name} | {kind} | " + " | ".join(cells) + f" | {'yes' if rising(rows) else 'no'} |")
    return "\n".join(lines) + (
        f"\n\nHeld-out records: {cmp['records']} from {cmp['clusters']} episodes; own = the record's own score, "
        "prefix_min = lowered to its earlier steps' least step score; F1 at 0.5; Δ = paired bootstrap over "
        f"episodes ({cmp.get('num_samples', 2000):,} resamples), p two-sided; rising = every Δ's interval above 0.")
