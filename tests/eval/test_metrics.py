import math
from itertools import combinations

import numpy as np
import pytest

from gui_jax.eval import metrics as M


def test_sop_hand_values():
    out = M.sop_metrics([2, 3, 0, 5], [4, 3, 2, 5])
    pg = (0.5 + 1 + 0 + 1) / 4
    tsr = 0.5
    assert out["PG"] == pytest.approx(pg) and out["TSR"] == pytest.approx(tsr)
    assert out["Score"] == pytest.approx((pg + tsr) / 2)
    with pytest.raises(ValueError, match="episode 1 has s=4"):
        M.sop_metrics([1, 4], [2, 3])


def test_step_metrics():
    tm = [1, 1, 0, 1, 1]
    em = [1, 0, 0, 1, 0]
    grounding = [1, 1, 1, 0, 0]
    out = M.step_metrics(tm, em, grounding)
    assert out["TM"] == pytest.approx(0.8) and out["SR"] == pytest.approx(0.4)
    assert out["GR"] == pytest.approx(1 / 3)
    assert math.isnan(M.step_metrics(tm, em)["GR"])
    with pytest.raises(ValueError, match="exact_match without type_match"):
        M.step_metrics([0], [1])


def test_pass_at_k_unbiased_matches_enumeration():
    for n, c, k in [(5, 2, 1), (5, 2, 3), (8, 1, 4), (4, 0, 2), (6, 5, 2), (3, 3, 3)]:
        trials = [1] * c + [0] * (n - c)
        subsets = list(combinations(range(n), k))
        want = sum(any(trials[i] for i in s) for s in subsets) / len(subsets)
        assert M.pass_at_k_unbiased(n, c, k) == pytest.approx(want, abs=1e-12)
    assert M.pass_at_k_unbiased(5, 2, 1) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="exceeds"):
        M.pass_at_k_unbiased(2, 1, 3)


def test_pass_at_k_over_tasks():
    s = np.array([[0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], bool)
    assert M.pass_at_k(s, 1, unbiased=False) == pytest.approx(1 / 3)
    assert M.pass_at_k(s, 3, unbiased=False) == pytest.approx(2 / 3)
    assert M.pass_at_k(s, 1) == pytest.approx((0.25 + 0.25 + 0) / 3)
    assert M.pass_at_k(s, 4) == pytest.approx(2 / 3)


def test_online_buckets_and_steps():
    out = M.success_by_bucket([1, 0, 1, 1], ["easy", "hard", "easy", "hard"])
    assert out == {"easy": 1.0, "hard": 0.5, "all": 0.75}
    assert M.mean_steps_to_success([1, 0, 1], [4, 20, 6]) == pytest.approx(5.0)
    assert math.isnan(M.mean_steps_to_success([0], [3]))


def test_androidlab_metrics():
    out = M.androidlab_metrics(success=[1, 0], subgoals_done=[2, 1], subgoals_total=[2, 4], expert_steps=[3, 5],
                               agent_steps=[4, 10], reasonable_ops=[4, 6])
    assert out == {"SR": 0.5, "SubSR": 0.5, "RRR": 0.75, "ROR": 10 / 14}


def test_reward_model_f1_hand_values_and_buckets():
    scores = [0.9, 0.8, 0.3, 0.6, 0.2, 0.7]
    labels = [1, 0, 1, 1, 0, 0]
    lengths = [3, 3, 7, 10, 12, 12]
    out = M.reward_model_f1(scores, labels, lengths, thresholds=0.5)
    # threshold .5: pred [1,1,0,1,0,1]; tp=2, fp=2, fn=1 -> P=.5, R=2/3, F1=4/7
    a = out["all"]
    assert a["precision"] == pytest.approx(0.5) and a["recall"] == pytest.approx(2 / 3)
    assert a["f1"] == pytest.approx(4 / 7) and a["accuracy"] == pytest.approx(0.5)
    # negatives: pred neg [2,4], true neg [1,4,5] -> tp=1, P=.5, R=1/3 -> F1=0.4
    assert a["f1_neg"] == pytest.approx(0.4)
    assert out["<5"]["precision"] == pytest.approx(0.5) and out["<5"]["recall"] == pytest.approx(1.0)
    assert out["5-10"]["f1"] == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert out[">10"]["f1"] == 0.0 and math.isnan(out[">10"]["recall"])
    multi = M.reward_model_f1(scores, labels, thresholds=[0.5, 0.85])
    assert multi[0.85]["all"]["precision"] == 1.0 and multi[0.85]["all"]["recall"] == pytest.approx(1 / 3)
    assert [M.length_bucket(n) for n in (4, 5, 10, 11)] == ["<5", "5-10", "5-10", ">10"]
