"""Wilson intervals, exact McNemar and the paired bootstrap against hand-computed values."""
import math

import numpy as np
import pytest

from gui_jax.eval import metrics as M


def test_wilson_hand_values():
    # 5/10: z² = 3.841459, denom = 1.3841459, centre = 0.5,
    # half = 1.959964/1.3841459 · √(0.025 + 3.841459/400) = 1.416002 · 0.186020 = 0.263405
    lo, hi = M.wilson_interval(5, 10)
    assert lo == pytest.approx(0.236593, abs=1e-6) and hi == pytest.approx(0.763407, abs=1e-6)
    # 0/10: centre = 0.192073/1.384146 = 0.138766 = half → [0, 0.277533]
    lo, hi = M.wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.277533, abs=1e-6)
    # 10/10 mirrors 0/10
    lo, hi = M.wilson_interval(10, 10)
    assert hi == pytest.approx(1.0) and lo == pytest.approx(1 - 0.277533, abs=1e-6)
    # 120/200: p = 0.6, z²/n = 0.019207, denom = 1.019207, centre = (0.6 + 0.009604)/1.019207 = 0.598116,
    # half = 1.959964/1.019207 · √(0.0012 + 0.000024) = 1.923031 · 0.034986 = 0.067279
    lo, hi = M.wilson_interval(120, 200)
    assert lo == pytest.approx(0.530837, abs=2e-6) and hi == pytest.approx(0.665395, abs=2e-6)
    assert all(math.isnan(v) for v in M.wilson_interval(0, 0))
    with pytest.raises(ValueError, match="successes=11, n=10"):
        M.wilson_interval(11, 10)


def _pairs(b, c, same_success=3, same_fail=4):
    """before/after per task with b (1,0) pairs, c (0,1) pairs and some concordant ones."""
    before = [1] * b + [0] * c + [1] * same_success + [0] * same_fail
    after = [0] * b + [1] * c + [1] * same_success + [0] * same_fail
    return before, after


@pytest.mark.parametrize("b,c,p", [
    (0, 5, 2 / 32),                     # 2 · C(5,0)/2⁵
    (1, 9, 2 * (1 + 10) / 1024),        # 2 · (C(10,0) + C(10,1))/2¹⁰ = 0.021484375
    (8, 2, 2 * (1 + 10 + 45) / 1024),   # symmetric in b, c: 0.109375
    (3, 3, 1.0),                        # 2 · 42/64 > 1 → 1
    (0, 0, 1.0),                        # no discordant pair
    (0, 1, 1.0),                        # 2 · 1/2
])
def test_mcnemar_exact_hand_values(b, c, p):
    before, after = _pairs(b, c)
    assert M.paired_counts(before, after) == (b, c)
    assert M.mcnemar_exact(before, after) == pytest.approx(p, rel=1e-12)


def test_mcnemar_needs_pairs():
    with pytest.raises(ValueError, match="3 vs 2"):
        M.mcnemar_exact([1, 0, 1], [1, 0])


def test_paired_bootstrap_deterministic_and_exact_diff():
    before, after = _pairs(2, 9, 40, 30)
    a = M.paired_bootstrap(before, after, num_samples=2000, seed=7)
    b = M.paired_bootstrap(before, after, num_samples=2000, seed=7)
    assert a == b
    assert a["diff"] == pytest.approx(7 / 81)
    assert a["lo"] < a["diff"] < a["hi"] and 0 <= a["p"] < 0.05
    c = M.paired_bootstrap(before, after, num_samples=2000, seed=8)
    assert c["diff"] == a["diff"] and (c["lo"], c["hi"], c["p"]) != (a["lo"], a["hi"], a["p"])
    # all differences zero → interval [0, 0], p = 1; all positive → p = 0
    z = M.paired_bootstrap([1, 0, 1], [1, 0, 1], num_samples=100)
    assert (z["diff"], z["lo"], z["hi"], z["p"]) == (0.0, 0.0, 0.0, 1.0)
    assert M.paired_bootstrap([0, 0], [1, 1], num_samples=100)["p"] == 0.0
    # seeded resampling equals a hand replay with the same generator
    d = np.asarray(after, float) - np.asarray(before, float)
    idx = np.random.default_rng(3).integers(0, d.size, size=(50, d.size))
    boot = d[idx].mean(axis=1)
    r = M.paired_bootstrap(before, after, num_samples=50, seed=3)
    assert r["lo"] == pytest.approx(np.quantile(boot, 0.025)) and r["hi"] == pytest.approx(np.quantile(boot, 0.975))


def _stage(successes, **extra):
    return {"online_SR": float(np.mean(successes)), "online_success": list(successes),
            "online_task_ids": [f"t{i}" for i in range(len(successes))], **extra}


def test_format_table_intervals_and_paired_p():
    from gui_jax.eval.suite import format_table, paired_test, rate_interval
    before = [0] * 10                     # 0/10
    after = [1] * 5 + [0] * 5             # 5/10: five (0, 1) pairs → McNemar p = 2/32
    results = {"sft": _stage(before, SR=0.5, step_count=20), "rl": _stage(after, SR=0.75, step_count=20)}
    assert rate_interval(results["rl"], "online_SR")[:2] == (5, 10)
    assert rate_interval(results["rl"], "SR")[:2] == (15, 20)
    assert paired_test(results["sft"], results["rl"]) == pytest.approx(0.0625)
    table = format_table(results, columns=("SR", "online_SR"))
    rows = table.splitlines()
    assert rows[2].startswith("| sft | 0.500 [0.299, 0.701] | 0.000 [0.000, 0.278] |")
    assert rows[3] == "| rl | 0.750 [0.531, 0.888] | 0.500 [0.237, 0.763] | +0.500 vs sft (p=0.062) |"
    # compare_to picks the reference stage; different task lists cannot be paired
    three = dict(results, off=_stage([1] * 10))
    assert "vs sft" in format_table(three, compare_to={"off": "sft"}).splitlines()[-1]
    with pytest.raises(ValueError, match="same online tasks"):
        paired_test(results["sft"], {"online_success": [1], "online_task_ids": ["x"]})


def test_template_table_counts_per_template_and_stage():
    from gui_jax.eval.suite import template_table
    ids = ["music.play#1000", "music.play#1001", "clock.alarm_toggle#1000"]
    results = {"sft": {"online_success": [1, 0, 0], "online_task_ids": ids},
               "rl": {"online_success": [1, 1, 0], "online_task_ids": ids}, "note": "not a stage"}
    assert template_table(results).splitlines() == [
        "| template | sft | rl |", "|---|---|---|",
        "| clock.alarm_toggle | 0/1 | 0/1 |", "| music.play | 1/2 | 2/2 |"]
    assert template_table({"sft": {"SR": 0.5}}) == ""


def test_split_timings():
    from gui_jax.eval.suite import split_timings
    kept, timings = split_timings({"online_SR": 0.5, "eval_seconds": 3.0, "seconds_sop": 1.0})
    assert kept == {"online_SR": 0.5} and timings == {"eval_seconds": 3.0, "seconds_sop": 1.0}


def test_sign_test_equals_mcnemar_on_binary_and_counts_rates():
    for b, c in [(0, 5), (1, 9), (8, 2), (3, 3), (0, 0)]:
        before, after = _pairs(b, c)
        s = M.sign_test(before, after)
        assert (s["lost"], s["gained"]) == (b, c) and s["p"] == M.mcnemar_exact(before, after)
    # rates over 4 trials: 0.25 → 0.5 gained, 0.75 → 0.5 lost, ties dropped; 5 gained 1 lost
    before = [0.25, 0.0, 0.5, 0.75, 0.0, 0.25, 1.0, 0.5]
    after = [0.5, 0.25, 0.75, 0.5, 0.25, 0.5, 1.0, 0.5]
    s = M.sign_test(before, after)
    assert (s["lost"], s["gained"]) == (1, 5)
    assert s["p"] == pytest.approx(2 * (1 + 6) / 64)   # 2 · (C(6,0) + C(6,1))/2⁶
    with pytest.raises(ValueError, match="3 vs 2"):
        M.sign_test([0.5, 0, 1], [1, 0])


def test_bootstrap_mean_interval_replays_by_hand():
    x = np.array([0.0, 0.25, 1.0, 0.5, 0.75, 0.0, 0.25])
    lo, hi = M.bootstrap_mean_interval(x, num_samples=300, seed=5)
    boot = x[np.random.default_rng(5).integers(0, x.size, size=(300, x.size))].mean(axis=1)
    assert (lo, hi) == (pytest.approx(np.quantile(boot, 0.025)), pytest.approx(np.quantile(boot, 0.975)))
    assert lo < x.mean() < hi
    assert M.bootstrap_mean_interval([0.5] * 9) == (0.5, 0.5)
    assert all(math.isnan(v) for v in M.bootstrap_mean_interval([]))


def test_paired_f1_bootstrap_resamples_clusters_and_equals_a_hand_replay():
    # 4 episodes (clusters) of 2 records each; b fixes a missed positive (ep1) and a false positive (ep2)
    labels = [1, 0, 1, 0, 1, 1, 0, 0]
    clusters = ["e0", "e0", "e1", "e1", "e2", "e2", "e3", "e3"]
    a = [0.9, 0.1, 0.2, 0.3, 0.8, 0.7, 0.6, 0.1]   # tp 3 (e0, e2 x2), fn 1 (e1), fp 1 (e3): F1 = 6/8
    b = [0.9, 0.1, 0.7, 0.3, 0.8, 0.7, 0.2, 0.1]   # tp 4, fp 0, fn 0: F1 = 1
    r = M.paired_f1_bootstrap(a, b, labels, clusters, num_samples=500, seed=4)
    assert (r["f1_a"], r["f1_b"], r["diff"]) == (pytest.approx(0.75), 1.0, pytest.approx(0.25))
    assert r["f1_a"] == pytest.approx(M.binary_prf(a, labels)["f1"])
    # the replay: clusters drawn with replacement, F1 from the drawn clusters' summed counts
    idx = np.random.default_rng(4).integers(0, 4, size=(500, 4))
    per = {"a": np.array([[1, 0, 0], [0, 0, 1], [2, 0, 0], [0, 1, 0]]),       # tp, fp, fn per cluster
           "b": np.array([[1, 0, 0], [1, 0, 0], [2, 0, 0], [0, 0, 0]])}
    f1 = {k: (lambda c: np.where(2 * c[..., 0] + c[..., 1] + c[..., 2] > 0, 2 * c[..., 0] /
                                 np.maximum(2 * c[..., 0] + c[..., 1] + c[..., 2], 1), 0.0))(v[idx].sum(1))
          for k, v in per.items()}
    boot = f1["b"] - f1["a"]
    assert r["lo"] == pytest.approx(np.quantile(boot, 0.025)) and r["hi"] == pytest.approx(np.quantile(boot, 0.975))
    assert r["p"] == pytest.approx(min(1.0, 2 * min(np.mean(boot <= 0), np.mean(boot >= 0))))
    assert M.paired_f1_bootstrap(a, b, labels, clusters, num_samples=500, seed=4) == r
    same = M.paired_f1_bootstrap(a, a, labels, clusters, num_samples=100)
    assert (same["diff"], same["lo"], same["hi"], same["p"]) == (0.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="equal, non-empty scores, labels and clusters"):
        M.paired_f1_bootstrap(a, b, labels, clusters[:-1])
