"""Selective rollouts (rl/selective.py): streaks, the skipping draw, its fill-in and its checkpoint state."""
import itertools

import numpy as np
import pytest

from gui_jax.rl.selective import UniformSkip


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
