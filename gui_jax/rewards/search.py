"""Reward-guided search at the step level: UI-Genie's beam search (to synthesise trajectories) and the
GUI-Shepherd best-of-n verifier (at test time). Both only need an env that can be rebuilt and replayed
deterministically (PhoneSim: reset(task) + the same actions → the same state), a proposer and a scorer.

    propose(goal, history, obs, n, rng) -> list[Action]     n candidate actions (e.g. policy samples)
    score(goal, history, obs, action)   -> float            step reward (e.g. the RM's P(+))
history = [(obs, action), ...] of the partial trajectory so far.
Optional `score_many(goal, history, obs, actions) -> sequence of floats` scores all candidates of one
proposal in one call (a batched reward model); it must equal [score(..., a) for a in actions].
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from gui_jax.core.types import Action


@dataclass
class Partial:
    actions: list = field(default_factory=list)
    history: list = field(default_factory=list)    # [(obs, action)]
    score: float = 0.0                              # cumulative step reward
    done: bool = False
    success: bool = False
    obs: object = None


def _scores(goal, history, obs, cands, score: Callable, score_many: Optional[Callable]) -> list[float]:
    if score_many is None:
        return [float(score(goal, history, obs, a)) for a in cands]
    vals = [float(v) for v in score_many(goal, history, obs, cands)]
    if len(vals) != len(cands):
        raise ValueError(f"score_many returned {len(vals)} scores for {len(cands)} candidates")
    return vals


def _replay(make_env: Callable, task, actions: Sequence[Action]):
    env = make_env()
    obs, done, info = env.reset(task), False, {}
    for a in actions:
        obs, done, info = env.step(a)
        if done:
            break
    return env, obs, done, info


def beam_search(task, make_env: Callable, propose: Callable, score: Callable, *, beam_width: int = 5,
                num_candidates: int = 10, max_steps: int = 15, seed: int = 0,
                score_many: Optional[Callable] = None) -> list[Partial]:
    """Expands every live partial trajectory with `num_candidates` proposals, keeps the `beam_width` best
    distinct partial trajectories by cumulative step reward (ties: earlier proposal first), and stops a
    partial when its episode ends (the env's own success check verifies the outcome). Returns the finished partials, best first, plus any
    still alive after `max_steps`."""
    rng = np.random.default_rng(seed)
    env, obs, _, _ = _replay(make_env, task, [])
    env.close()
    beam = [Partial(obs=obs)]
    finished: list[Partial] = []
    for _ in range(max_steps):
        expansions = []
        for b_idx, p in enumerate(beam):
            cands = propose(task.goal, p.history, p.obs, num_candidates, rng)
            vals = _scores(task.goal, p.history, p.obs, cands, score, score_many)
            for c_idx, (a, v) in enumerate(zip(cands, vals)):
                expansions.append((p.score + v, b_idx, c_idx, p, a))
        # stable: highest cumulative score first, then the beam's order, then the proposal order
        expansions.sort(key=lambda e: (-e[0], e[1], e[2]))
        new_beam, kept, seen = [], 0, set()
        for total, _, _, p, a in expansions:
            # distinct partial trajectories only: sampled candidates repeat (a confident policy proposes
            # the same action many times), and copies would collapse the beam onto one path
            key = tuple(p.actions) + (a,)
            if key in seen:
                continue
            seen.add(key)
            if kept == beam_width:
                break
            kept += 1
            env, obs, done, info = _replay(make_env, task, p.actions + [a])
            env.close()
            child = Partial(actions=p.actions + [a], history=p.history + [(p.obs, a)], score=total, done=done,
                            success=bool(info.get("success", False)) if done else False, obs=obs)
            (finished if done else new_beam).append(child)
        beam = new_beam
        if not beam:
            break
    finished.sort(key=lambda p: (-p.score, len(p.actions)))
    return finished + beam


def best_of_n(goal, history, obs, propose: Callable, score: Callable, n: int, rng, *,
              score_many: Optional[Callable] = None) -> tuple[Action, list]:
    """GUI-Shepherd verifier step: sample n candidates, return the argmax-score one (first on ties) and all
    (action, score) pairs."""
    cands = propose(goal, history, obs, n, rng)
    if not cands:
        raise ValueError("the proposer returned no candidate action")
    scored = list(zip(cands, _scores(goal, history, obs, cands, score, score_many)))
    best = max(range(len(scored)), key=lambda i: (scored[i][1], -i))
    return scored[best][0], scored


def run_with_verifier(task, make_env: Callable, propose: Callable, score: Callable, *, n: int,
                      max_steps: int = 15, seed: int = 0, score_many: Optional[Callable] = None) -> dict:
    """One episode acting with the best-of-n verifier; returns success, steps and the chosen actions."""
    rng = np.random.default_rng(seed)
    env = make_env()
    obs, history, info = env.reset(task), [], {}
    try:
        for _ in range(max_steps):
            a, _ = best_of_n(task.goal, history, obs, propose, score, n, rng, score_many=score_many)
            history.append((obs, a))
            obs, done, info = env.step(a)
            if done:
                break
    finally:
        env.close()
    return {"success": bool(info.get("success", False)), "steps": len(history),
            "actions": [a for _, a in history]}


def greedy_by_score(task, make_env: Callable, propose: Callable, score: Callable, *, num_candidates: int,
                    max_steps: int = 15, seed: int = 0) -> list[Action]:
    """Greedy decoding of a scorer: at each step the argmax-score proposal (the reference beam width 1 must
    reproduce)."""
    return run_with_verifier(task, make_env, propose, score, n=num_candidates, max_steps=max_steps,
                             seed=seed)["actions"]
