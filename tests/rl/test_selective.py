"""Selective rollouts (rl/selective.py): streaks, the skipping draw, its fill-in and its checkpoint state."""
import itertools

import numpy as np
import pytest

from gui_jax.rl.selective import TemplateLearnability, UniformSkip


def _draws(batches):
    it = itertools.cycle(batches)
    return lambda: list(next(it))


def test_streaks_set_the_keep_probability():
    s = UniformSkip(0.5)
    assert s.keep_probability(3) == 1.0
    s.record(3, informative=False)
    s.record(3, informative=False)
    assert s.keep_probability(3) == 0.25
    s.record(3, informative=True)  # one informative visit resets the streak
    assert s.keep_probability(3) == 1.0 and s.streak == {}


def test_select_skips_known_uniform_tasks_and_draws_more():
    s = UniformSkip(0.0)
    for t in (1, 2, 6):
        s.record(t, informative=False)
    out = s.select(_draws([[0, 1, 2, 3], [4, 5, 6, 7]]), 4, np.random.default_rng(0))
    assert out == [0, 3, 4, 5]
    assert s.take_skipped() == 2 and s.take_skipped() == 0  # 6 and 7 come after the fourth: not counted


def test_select_fills_from_skipped_tasks_after_max_draws():
    s = UniformSkip(0.0)
    for t in range(4):
        s.record(t, informative=False)
    out = s.select(_draws([[0, 1], [2, 3]]), 2, np.random.default_rng(0), max_draws=3)
    assert out == [0, 1]  # six tasks passed, the first two fill the batch
    assert s.take_skipped() == 4


def test_revisit_one_keeps_every_task_in_draw_order():
    s = UniformSkip(1.0)
    s.record(0, informative=False)
    assert s.select(_draws([[0, 1, 2]]), 3, np.random.default_rng(0)) == [0, 1, 2]


def test_keep_rate_of_a_streak_matches_its_probability():
    s = UniformSkip(0.5)
    s.record(7, informative=False)
    rng = np.random.default_rng(1)
    kept = sum(s.select(_draws([[7, 8]]), 1, rng) == [7] for _ in range(4000))
    assert abs(kept / 4000 - 0.5) < 0.03


def test_state_round_trip_and_errors():
    s = UniformSkip(0.3)
    s.record(5, informative=False)
    s.record(2, informative=False)
    s.record(5, informative=False)
    t = UniformSkip(0.3)
    t.load_state_dict(s.state_dict())
    assert t.streak == {5: 2, 2: 1} and s.state_dict() == {"streak": [[2, 1], [5, 2]]}
    with pytest.raises(KeyError, match="streak"):
        t.load_state_dict({})
    with pytest.raises(ValueError, match="revisit_uniform"):
        UniformSkip(1.5)


def test_learnability_probabilities_follow_the_informative_rate():
    s = TemplateLearnability(["a", "b", "a", "c"], floor=0.0)
    np.testing.assert_allclose(s.probabilities(), [1 / 3] * 3)  # no groups yet: the prior's 1/2 each
    for _ in range(3):
        s.record(0, informative=True)   # template a: 3 of 3 -> (3+1)/(3+2) = 0.8
        s.record(1, informative=False)  # template b: 0 of 3 -> 1/5 = 0.2
    np.testing.assert_allclose(s.probabilities(), np.array([0.8, 0.2, 0.5]) / 1.5)
    s.floor = 0.3  # the floor mixes in the uniform template draw
    np.testing.assert_allclose(s.probabilities(), 0.7 * np.array([0.8, 0.2, 0.5]) / 1.5 + 0.1)


def test_learnability_draws_distinct_tasks_and_favours_informative_templates():
    templates = ["easy"] * 50 + ["hard"] * 50
    s = TemplateLearnability(templates, floor=0.1)
    for _ in range(40):
        s.record(0, informative=False)
        s.record(60, informative=True)
    rng = np.random.default_rng(0)
    draws = [s.select(lambda: [], 8, rng) for _ in range(200)]
    assert all(len(set(d)) == 8 for d in draws)
    hard = np.mean([t >= 50 for d in draws for t in d])
    p_hard = s.probabilities()[s.names.index("hard")]
    assert p_hard > 0.9 and abs(hard - p_hard) < 0.03
    # fewer tasks than asked: all of them; a template that runs out is not drawn again
    assert sorted(TemplateLearnability(["x", "y", "y"], 0.5).select(lambda: [], 5, rng)) == [0, 1, 2]


def test_learnability_state_round_trip_and_mismatch():
    s = TemplateLearnability(["a", "b"], floor=0.2)
    s.record(1, informative=True)
    t = TemplateLearnability(["a", "b"], floor=0.2)
    t.load_state_dict(s.state_dict())
    np.testing.assert_array_equal(t.probabilities(), s.probabilities())
    with pytest.raises(ValueError, match=r"templates \['a', 'b'\], this run has \['a', 'c'\]"):
        TemplateLearnability(["a", "c"], 0.2).load_state_dict(s.state_dict())
    with pytest.raises(KeyError, match="missing field 'groups'"):
        t.load_state_dict({"names": ["a", "b"], "informative": [0, 1]})
    with pytest.raises(ValueError, match="template_sampling_floor"):
        TemplateLearnability(["a"], floor=1.5)


def test_semi_online_draws_with_one_selector_at_most():
    from types import SimpleNamespace

    from gui_jax.train.config_blocks import rl_block
    from gui_jax.train.semi_online import task_selector
    eps = [SimpleNamespace(template="music.play", app="music"), SimpleNamespace(template="", app="clock")]
    c = rl_block()
    assert task_selector(c, eps) is None  # the defaults: the plain shuffled draw
    c.template_sampling = "learnability"
    assert task_selector(c, eps).names == ["clock", "music.play"]  # an episode without a template: its app
    c.revisit_uniform = 0.5
    with pytest.raises(ValueError, match="use one of them"):
        task_selector(c, eps)
    c.template_sampling = "uniform"
    assert isinstance(task_selector(c, eps), UniformSkip)
