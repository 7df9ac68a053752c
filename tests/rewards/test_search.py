"""Reward-guided search: a scorer that ranks the expert action first makes beam search reproduce the oracle
trajectory; beam width 1 with a random scorer is greedy decoding of that scorer; best-of-n picks the argmax."""
import hashlib

import numpy as np
import pytest

from gui_jax.core.types import Action
from gui_jax.envs.sim import PhoneSim
from gui_jax.rewards.search import beam_search, best_of_n, greedy_by_score, run_with_verifier
from gui_jax.tasks import make_task

TASK = make_task("clock.delete_alarm", 0)
EXPERT = [s.action for s in PhoneSim(render=False).expert_actions(TASK)]


def make_env():
    return PhoneSim(render=False, max_steps=12)


def propose(goal, history, obs, n, rng):
    """The expert's next action hidden among random clicks, in a random order."""
    cands = [Action("click", x=float(rng.integers(0, 1080)), y=float(rng.integers(0, 2400))) for _ in range(n - 1)]
    t = len(history)
    if t < len(EXPERT):
        cands.insert(int(rng.integers(0, n)), EXPERT[t])
    else:
        cands.append(Action("terminate", status="failure"))
    return cands


def expert_first(goal, history, obs, action):
    t = len(history)
    return 1.0 if t < len(EXPERT) and action == EXPERT[t] else 0.1


def hashed(goal, history, obs, action):
    """A deterministic 'random' scorer."""
    h = hashlib.sha256(f"{len(history)}|{action}".encode()).digest()
    return int.from_bytes(h[:4], "little") / 2 ** 32


def test_beam_search_with_an_expert_first_scorer_reproduces_the_oracle():
    out = beam_search(TASK, make_env, propose, expert_first, beam_width=5, num_candidates=10, max_steps=8)
    best = out[0]
    assert best.done and best.success
    assert best.actions == EXPERT and best.score == pytest.approx(len(EXPERT))


def test_beam_width_one_equals_greedy_decoding_of_the_scorer():
    for seed in range(3):
        beam = beam_search(TASK, make_env, propose, hashed, beam_width=1, num_candidates=10, max_steps=6, seed=seed)
        greedy = greedy_by_score(TASK, make_env, propose, hashed, num_candidates=10, max_steps=6, seed=seed)
        assert len(beam) == 1 and beam[0].actions == greedy and len(greedy) >= 1


def test_repeated_proposals_do_not_collapse_the_beam():
    """A proposer that repeats one wrong action 9 times beside the expert's, and a scorer preferring the wrong
    one: with copies kept, all 5 slots would hold the wrong path; distinct paths keep the expert's too."""
    wrong = Action("click", x=5.0, y=5.0)

    def repeating(goal, history, obs, n, rng):
        return [wrong] * (n - 1) + [EXPERT[len(history)]]

    def wrong_first(goal, history, obs, action):
        return 0.9 if action == wrong else 0.5

    out = beam_search(TASK, make_env, repeating, wrong_first, beam_width=5, num_candidates=10, max_steps=1)
    assert [p.actions for p in out] == [[wrong], [EXPERT[0]]]
    assert [p.score for p in out] == [0.9, 0.5]
    two = beam_search(TASK, make_env, repeating, wrong_first, beam_width=5, num_candidates=10, max_steps=2)
    assert [p.actions for p in two] == [[wrong, wrong], [wrong, EXPERT[1]], [EXPERT[0], wrong], [EXPERT[0], EXPERT[1]]]


def test_best_of_n_takes_the_argmax_first_on_ties():
    acts = [Action("click", x=i, y=i) for i in range(4)]
    scores = {0: 0.2, 1: 0.9, 2: 0.9, 3: 0.1}
    best, scored = best_of_n("g", [], None, lambda g, h, o, n, r: acts[:n],
                             lambda g, h, o, a: scores[int(a.x)], 4, np.random.default_rng(0))
    assert best == acts[1] and [s for _, s in scored] == [0.2, 0.9, 0.9, 0.1]
    assert run_with_verifier(TASK, make_env, propose, expert_first, n=10, max_steps=8)["success"] is True
