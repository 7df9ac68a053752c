"""Reward-model metrics against hand-computed precision / recall / F1 by kind, length bucket and difficulty."""
import math

import numpy as np
import pytest

from gui_jax.core.types import Action, Episode, Observation
from gui_jax.eval.rm_metrics import evaluate_records, format_reward_table, reward_metrics
from gui_jax.rewards.data_engine import RewardRecord, StepRef


def test_hand_computed_prf_by_bucket_and_difficulty():
    #            step records (length 3, 3, 3, 3, 7, 7, 12)          outcome (3, 7)
    scores = [0.9, 0.8, 0.2, 0.6, 0.7, 0.1, 0.4, 0.9, 0.3]
    labels = [True, False, True, False, True, False, True, True, True]
    kinds = ["step"] * 7 + ["outcome"] * 2
    lengths = [3, 3, 3, 3, 7, 7, 12, 3, 7]
    diffs = ["easy", "easy", "easy", "hard", "hard", "hard", "hard", "easy", "hard"]
    m = reward_metrics(scores, labels, kinds, lengths, diffs)
    s = m["step"]
    # all steps: predicted + = {0, 1, 3, 4}; true + = {0, 2, 4, 6}: TP 2 → P 2/4, R 2/4, F1 0.5
    assert (s["all"]["precision"], s["all"]["recall"], s["all"]["f1"]) == (0.5, 0.5, 0.5)
    # <5 (0..3): pred + {0,1,3}, true + {0,2}: TP 1 → P 1/3, R 1/2, F1 0.4
    assert s["<5"]["precision"] == pytest.approx(1 / 3) and s["<5"]["recall"] == 0.5
    assert s["<5"]["f1"] == pytest.approx(0.4)
    # 5-10 (4, 5): perfect; >10 (6): one positive missed → P undefined, R 0, F1 0
    assert s["5-10"]["f1"] == 1.0 and s["5-10"]["count"] == 2
    assert math.isnan(s[">10"]["precision"]) and s[">10"]["recall"] == 0.0 and s[">10"]["f1"] == 0.0
    # easy steps (0,1,2): pred + {0,1}, true + {0,2} → P 1/2, R 1/2; hard (3..6): pred + {3,4}, true + {4,6}
    assert s["difficulty"]["easy"]["f1"] == 0.5 and s["difficulty"]["hard"]["precision"] == 0.5
    assert s["difficulty"]["hard"]["recall"] == 0.5
    o = m["outcome"]
    assert o["all"]["precision"] == 1.0 and o["all"]["recall"] == 0.5 and o["all"]["f1"] == pytest.approx(2 / 3)
    assert o["<5"]["f1"] == 1.0 and o["5-10"]["f1"] == 0.0 and ">10" not in o
    table = format_reward_table(m)
    assert "| step | length <5 | 0.333 | 0.500 | 0.400 |" in table and "| outcome | all | 1.000 | 0.500 | 0.667 |" in table


def test_evaluate_records_reads_lengths_and_difficulty_from_episodes():
    obs = Observation(screenshot=np.zeros((4, 4, 3), np.uint8), screen_size=(4, 4))
    ep = Episode("e", "g", [obs] * 6, [Action("wait", time=1.0)] * 6, difficulty="medium")
    recs = [RewardRecord("step", "g", (StepRef("e", 0),), True, "expert"),
            RewardRecord("outcome", "g", tuple(StepRef("e", t) for t in range(3)), False, "truncation")]
    m = evaluate_records([0.7, 0.6], recs, {"e": ep})
    assert m["step"]["5-10"]["f1"] == 1.0 and m["outcome"]["difficulty"]["medium"]["precision"] == 0.0
    with pytest.raises(ValueError, match="2 records but 1 scores"):
        evaluate_records([0.5], recs, {"e": ep})


def test_roc_auc_hand_values_and_the_collapse_warning():
    from gui_jax.eval.metrics import roc_auc
    from gui_jax.eval.rm_metrics import collapse_warnings
    # positives 0.9, 0.4; negatives 0.5, 0.1: pairs (0.9>0.5, 0.9>0.1, 0.4<0.5, 0.4>0.1) → 3/4
    assert roc_auc([0.9, 0.4, 0.5, 0.1], [True, True, False, False]) == 0.75
    assert roc_auc([0.3, 0.3, 0.3], [True, False, False]) == 0.5           # ties count one half
    assert roc_auc([0.2, 0.7, 0.7], [False, True, False]) == 0.75          # 0.7 vs (0.2, 0.7): 1 + 1/2
    assert math.isnan(roc_auc([0.1, 0.2], [True, True]))
    m = reward_metrics([0.412, 0.412, 0.4121, 0.412], [True, False, True, False], ["step"] * 4, [3] * 4)
    assert m["step"]["score_std"] < 1e-3 and m["step"]["auc"] == 0.75  # ties ½ + ½, wins 1 + 1
    assert collapse_warnings(m) == [f"step scores are constant (std {m['step']['score_std']:.1e} < 0.001): the "
                                    "reward model gives every record the same score; lower "
                                    "rm.train.learning_rate or check the training curve"]
    table = format_reward_table(m)
    assert "ROC AUC (threshold-free): step 0.750" in table and "WARNING: step scores are constant" in table
    ok = reward_metrics([0.9, 0.1], [True, False], ["outcome"] * 2, [3] * 2)
    assert collapse_warnings(ok) == [] and ok["outcome"]["auc"] == 1.0


def test_breakdown_by_source_and_label_names_the_negatives_that_fool_the_rm():
    #         expert+  expert+  subst−  subst−  subst−  rule−  rule+   (step)   trunc− (outcome)
    scores = [0.9, 0.4, 0.8, 0.6, 0.2, 0.1, 0.5, 0.7]
    labels = [True, True, False, False, False, False, True, False]
    kinds = ["step"] * 7 + ["outcome"]
    sources = ["expert", "expert", "substitution", "substitution", "substitution", "rule", "rule", "truncation"]
    m = reward_metrics(scores, labels, kinds, [3] * 8, sources=sources)
    step = m["step"]["by_source"]
    # sources in name order, positives before negatives; empty groups (no substitution positive) absent
    assert list(step) == ["expert/pos", "rule/pos", "rule/neg", "substitution/neg"]
    assert step["expert/pos"] == {"n": 2, "mean_score": pytest.approx(0.65), "scored_positive": 0.5}
    # two of three substitution negatives score ≥ 0.5: the RM is wrong on 2/3 of them
    assert step["substitution/neg"]["scored_positive"] == pytest.approx(2 / 3)
    assert step["substitution/neg"]["mean_score"] == pytest.approx(1.6 / 3)
    assert step["rule/neg"] == {"n": 1, "mean_score": pytest.approx(0.1), "scored_positive": 0.0}
    assert step["rule/pos"]["scored_positive"] == 1.0            # 0.5 is on the threshold: positive
    assert m["outcome"]["by_source"] == {"truncation/neg": {"n": 1, "mean_score": pytest.approx(0.7),
                                                            "scored_positive": 1.0}}
    table = format_reward_table(m)
    assert "| step | substitution/neg | 3 | 0.533 | 0.667 |" in table
    assert "| outcome | truncation/neg | 1 | 0.700 | 1.000 |" in table
    with pytest.raises(ValueError, match="8 scores but 2 sources"):
        reward_metrics(scores, labels, kinds, [3] * 8, sources=["expert", "rule"])


def test_evaluate_records_passes_each_records_source():
    obs = Observation(screenshot=np.zeros((4, 4, 3), np.uint8), screen_size=(4, 4))
    ep = Episode("e", "g", [obs] * 3, [Action("wait", time=1.0)] * 3, difficulty="easy")
    recs = [RewardRecord("step", "g", (StepRef("e", 0),), True, "expert"),
            RewardRecord("step", "g", (StepRef("e", 0),), False, "rule")]
    m = evaluate_records([0.3, 0.9], recs, {"e": ep})
    assert m["step"]["by_source"] == {"expert/pos": {"n": 1, "mean_score": 0.3, "scored_positive": 0.0},
                                      "rule/neg": {"n": 1, "mean_score": 0.9, "scored_positive": 1.0}}
