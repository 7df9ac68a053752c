import json

import numpy as np
import pytest

from gui_jax.rl.adagrpo import AdaPRBuffer, Curriculum, FailureCurriculum, prune_negatives


def test_adapr_insert_threshold_evict_and_sample_order():
    buf = AdaPRBuffer(capacity=3, tau_adv=1.0, max_fraction=0.25)
    added = buf.insert(["a", "b", "c", "d"], [0.5, 1.0, 2.0, 1.5], ["t1", "t2", "t3", "t4"])
    assert added == 3 and len(buf) == 3  # "a" below tau
    buf.insert(["e", "f"], [3.0, 1.1], ["t5", "t6"])
    # capacity 3: keep 3.0, 2.0, 1.5 (evict 1.1 and 1.0)
    assert sorted(buf.tasks()) == ["t3", "t4", "t5"]
    assert buf.num_to_sample(7) == 1 and buf.num_to_sample(8) == 2 and buf.num_to_sample(100) == 3
    got = buf.sample(8)
    assert [g[0] for g in got] == ["e", "c"]  # highest advantage first
    assert buf.tasks() == ["t4"]  # popped
    assert buf.sample(3) == []  # floor(0.25*3) = 0


def test_adapr_no_pop_exclude_and_per_task_cap():
    buf = AdaPRBuffer(capacity=10, max_fraction=1.0, pop_on_sample=False, max_per_task=1)
    buf.insert(["a", "b", "c"], [1.2, 1.8, 1.5], ["t", "t", "u"])
    assert sorted(buf.tasks()) == ["t", "u"]
    got = buf.sample(10, exclude_tasks=["u"])
    assert [g[0] for g in got] == ["b"] and len(buf) == 2
    buf.update_advantages({"u": 5.0})
    assert buf.sample(1)[0][0] == "c"


def test_adapr_state_round_trip():
    buf = AdaPRBuffer(capacity=4)
    buf.insert([{"id": 1}, {"id": 2}], [1.5, 2.5], ["x", "y"])
    state = json.loads(json.dumps(buf.state_dict()))
    other = AdaPRBuffer(capacity=4)
    other.load_state_dict(state)
    assert other.sample(8) == buf.sample(8)
    with pytest.raises(KeyError, match="seq"):
        other.load_state_dict({"entries": []})


def test_prune_negatives_ratio_and_lowest_first():
    adv = np.array([1.0, -0.5, -2.0, -1.0, 0.0, -3.0, -0.1])  # 1 positive, 5 negatives
    keep = prune_negatives(adv, np.random.default_rng(0), max_neg_per_pos=2)
    # keep 2 negatives: the highest ones (-0.1, -0.5); positives and zeros kept
    np.testing.assert_array_equal(keep, [1, 1, 0, 0, 1, 0, 1])
    # ties broken at random but counts exact
    tied = np.array([1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0])
    kept_sets = set()
    for seed in range(6):
        k = prune_negatives(tied, np.random.default_rng(seed))
        assert k[:2].all() and k[2:].sum() == 4
        kept_sets.add(tuple(k))
    assert len(kept_sets) > 1
    assert not prune_negatives(np.array([-1.0, -2.0]), np.random.default_rng(0)).any()
    assert prune_negatives(np.array([1.0, -1.0]), np.random.default_rng(0)).all()


def test_fcf_cooldown_weights_and_removal():
    fcf = FailureCurriculum()
    fcf.record_epoch({"hard": [0, 0], "ok": [0, 1]})
    assert fcf.weight("hard") == 1.0  # one failing epoch: no cooldown yet
    fcf.record_epoch({"hard": [0, 0]})
    assert fcf.weight("hard") == 0.25  # k = 2
    fcf.record_epoch({})  # cooldown 3 -> 2
    fcf.record_epoch({})  # 2 -> 1
    assert fcf.weight("hard") == 0.25
    fcf.record_epoch({})  # cooldown over
    assert fcf.weight("hard") == 1.0
    fcf.record_epoch({"hard": [0.0]})  # k = 3
    assert fcf.weight("hard") == 0.125
    for k in (4, 5):
        fcf.record_epoch({"hard": [0.0]})
        assert fcf.weight("hard") == 0.5 ** k
    fcf.record_epoch({"hard": [0.0]})  # k = 6 -> removed
    assert fcf.weight("hard") == 0.0 and fcf.active(["hard", "ok"]) == ["ok"]
    np.testing.assert_array_equal(fcf.weights(["hard", "ok", "new"]), [0, 1, 1])
    # success resets
    fcf.record_epoch({"b": [0], "c": [0]})
    fcf.record_epoch({"b": [0], "c": [0]})
    fcf.record_epoch({"b": [1]})
    assert fcf.weight("b") == 1.0 and fcf.fail_count.get("b") is None and fcf.weight("c") == 0.25


def test_fcf_state_round_trip_and_sampling():
    fcf = FailureCurriculum()
    for _ in range(2):
        fcf.record_epoch({("app", 1): [0], "x": [0], "y": [1]})
    state = json.loads(json.dumps(fcf.state_dict()))
    other = FailureCurriculum()
    other.load_state_dict(state)
    assert other.weight(("app", 1)) == 0.25 and other.weight("x") == 0.25 and other.weight("y") == 1.0
    assert other.epoch == 2
    other.record_epoch({"x": [0]})
    fcf.record_epoch({"x": [0]})
    assert json.loads(json.dumps(other.state_dict())) == json.loads(json.dumps(fcf.state_dict()))
    picks = fcf.sample(["x", "y"], 2000, np.random.default_rng(0), replace=True)
    frac_x = picks.count("x") / 2000
    assert 0.08 < frac_x < 0.16  # weights 0.125 : 1 -> 0.111


def test_curriculum_iterations_and_threshold():
    cur = Curriculum(switch_iterations=(10, 20))
    assert cur.update(0) == 0 and cur.allowed("easy") and not cur.allowed("medium")
    assert cur.update(10) == 1 and cur.allowed("medium") and not cur.allowed("hard")
    assert cur.update(25) == 2 and cur.allowed("hard")
    thr = Curriculum(switch_iterations=None, success_threshold=0.6)
    assert thr.update(100, 0.5) == 0
    assert thr.update(101, 0.7) == 1
    assert thr.filter(["a", "b", "c"], {"a": "easy", "b": "medium", "c": "hard"}.get) == ["a", "b"]
    assert thr.update(102, 0.9) == 2 and thr.update(103, 0.9) == 2
    restored = Curriculum(switch_iterations=None)
    restored.load_state_dict(thr.state_dict())
    assert restored.stage == 2
    with pytest.raises(ValueError, match="switch_iterations"):
        Curriculum(switch_iterations=(1,))
