"""Offline evaluators on expert episodes: SOP (UI-S1 A.5) and AndroidControl-style step metrics."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from gui_jax.core.types import Episode
from gui_jax.eval.metrics import sop_metrics, step_metrics
from gui_jax.rl.policy import Policy
from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, expert_element, judge_step, semi_online_rollouts


def evaluate_sop(policy: Policy, episodes: Sequence[Episode], pcfg: PromptConfig, *,
                 reward_preset: str = "paper", seed: int = 0) -> dict[str, float]:
    """SOP: greedy, the policy's own history, stop at the first mismatch (a semi-online rollout
    with one rollout, temperature 0 and no patches). Returns PG, TSR, Score (and counts)."""
    scfg = SemiOnlineConfig(num_rollouts=1, patch_threshold=0, temperature=0.0,
                            reward_preset=reward_preset)
    steps = semi_online_rollouts(policy, episodes, pcfg, scfg, seed=seed)
    matched = defaultdict(int)
    for s in steps:
        matched[s.episode_index] += int(s.exact_match)
    succ = [matched[i] for i in range(len(episodes))]
    total = [len(ep.actions) for ep in episodes]
    out = sop_metrics(succ, total)
    out["episodes"] = float(len(episodes))
    return out


def evaluate_steps(policy: Policy, episodes: Sequence[Episode], pcfg: PromptConfig, *,
                   reward_preset: str = "paper", seed: int = 0, batch_size: int = 256,
                   instruction: str = "goal") -> dict[str, float]:
    """Step metrics with the expert history: type match TM, grounding GR, step success SR.

    instruction: "goal" (the episode's high-level goal at every step, AndroidControl-High) or "step" (each
    step's low-level instruction, AndroidControl-Low; episodes must carry step_instructions)."""
    if instruction not in ("goal", "step"):
        raise ValueError(f"instruction must be 'goal' or 'step', got {instruction!r}")
    scfg = SemiOnlineConfig(reward_preset=reward_preset)
    items = [(e, t) for e, ep in enumerate(episodes) for t in range(len(ep.actions))]
    tm, em, is_point = [], [], []
    for start in range(0, len(items), batch_size):
        chunk = items[start:start + batch_size]
        prompts = []
        for e, t in chunk:
            ep = episodes[e]
            hist = [(ep.observations[k], expert_response(ep.actions[k], ep.observations[k], pcfg,
                                                         element=expert_element(ep, k)))
                    for k in range(t)]
            if instruction == "step" and not (ep.step_instructions and ep.step_instructions[t]):
                raise ValueError(f"episode {ep.episode_id!r} step {t} has no step instruction (instruction='step')")
            text = ep.goal if instruction == "goal" else ep.step_instructions[t]
            prompts.append(build_messages(text, hist, ep.observations[t], pcfg))
        gens = policy.generate(prompts, temperature=0.0, seed=seed)
        for (e, t), g in zip(chunk, gens):
            j = judge_step(g.text, episodes[e], t, pcfg, scfg)
            tm.append(j.type_match)
            em.append(j.exact_match)
            is_point.append(episodes[e].actions[t].type in ("click", "long_press"))
    out = step_metrics(tm, em, np.asarray(is_point))
    out["steps"] = float(len(items))
    return out
