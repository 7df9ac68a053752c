"""Reward-guided search at the step level: UI-Genie's beam search (to synthesise trajectories) and the
GUI-Shepherd best-of-n verifier (at test time). Both only need an env that can be rebuilt and replayed
deterministically (PhoneSim: reset(task) + the same actions → the same state), a proposer and a scorer.

    propose(goal, history, obs, n, rng) -> list[Action]     n candidate actions (e.g. policy samples)
    score(goal, history, obs, action)   -> float            step reward (e.g. the RM's P(+))
history = [(obs, action), ...] of the partial trajectory so far.
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


def _replay(make_env: Callable, task, actions: Sequence[Action]):
    env = make_env()
    obs, done, info = env.reset(task), False, {}
    for a in actions:
        obs, done, info = env.step(a)
        if done:
            break
    return env, obs, done, info


def beam_search(task, make_env: Callable, propose: Callable, score: Callable, *, beam_width: int = 5,
                num_candidates: int = 10, max_steps: int = 15, seed: int = 0) -> list[Partial]:
    """Expands every live partial trajectory with `num_candidates` proposals, keeps the `beam_width` best by
    cumulative step reward (ties: earlier proposal first), and stops a partial when its episode ends (the
    env's own success check verifies the outcome). Returns the finished partials, best first, plus any
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
            for c_idx, a in enumerate(cands):
                expansions.append((p.score + float(score(task.goal, p.history, p.obs, a)), b_idx, c_idx, p, a))
        # stable: highest cumulative score first, then the beam's order, then the proposal order
        expansions.sort(key=lambda e: (-e[0], e[1], e[2]))
        new_beam = []
        for total, _, _, p, a in expansions[:beam_width]:
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


def best_of_n(goal, history, obs, propose: Callable, score: Callable, n: int, rng) -> tuple[Action, list]:
    """GUI-Shepherd verifier step: sample n candidates, return the argmax-score one (first on ties) and all
    (action, score) pairs."""
    cands = propose(goal, history, obs, n, rng)
    if not cands:
        raise ValueError("the proposer returned no candidate action")
    scored = [(a, float(score(goal, history, obs, a))) for a in cands]
    best = max(range(len(scored)), key=lambda i: (scored[i][1], -i))
    return scored[best][0], scored


def run_with_verifier(task, make_env: Callable, propose: Callable, score: Callable, *, n: int,
                      max_steps: int = 15, seed: int = 0) -> dict:
    """One episode acting with the best-of-n verifier; returns success, steps and the chosen actions."""
    rng = np.random.default_rng(seed)
    env = make_env()
    obs, history, info = env.reset(task), [], {}
    try:
        for _ in range(max_steps):
            a, _ = best_of_n(task.goal, history, obs, propose, score, n, rng)
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
