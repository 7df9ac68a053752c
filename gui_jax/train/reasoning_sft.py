"""Reasoning-SFT bootstrap (MobileRL §2.1): sample thought+action with the current policy on each
expert step (expert history), keep the thoughts whose action matches the expert's, fine-tune on
(kept thought, expert action), and repeat for a number of rounds.

The job is gui_jax/jobs/reasoning_sft.py.
"""
from __future__ import annotations

import json
import os
from typing import Sequence

from gui_jax.core.types import Episode
from gui_jax.rl.prompting import PromptConfig, build_messages
from gui_jax.rl.semi_online import SemiOnlineConfig, judge_step
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.sft import expert_history, train_sft


def collect_thoughts(agent, episodes: Sequence[Episode], pcfg: PromptConfig, *, samples_per_step: int,
                     temperature: float, seed: int, require_thought: bool = True) -> dict:
    """(episode index, step) → a sampled thought whose action matched the expert (first found)."""
    items = [(e, t) for e, ep in enumerate(episodes) for t in range(len(ep.actions))]
    prompts = [build_messages(episodes[e].goal, expert_history(episodes[e], t, pcfg), episodes[e].observations[t],
                              pcfg) for e, t in items]
    scfg = SemiOnlineConfig(require_thought=require_thought)
    kept: dict = {}
    for k in range(samples_per_step):
        todo = [i for i, it in enumerate(items) if it not in kept]
        if not todo:
            break
        gens = agent.policy.generate([prompts[i] for i in todo], temperature=temperature, seed=seed * 131 + k)
        for i, g in zip(todo, gens):
            e, t = items[i]
            j = judge_step(g.text, episodes[e], t, pcfg, scfg)
            if j.exact_match and j.thought.strip():
                kept[(e, t)] = j.thought.strip()
    return kept


def reasoning_bootstrap(agent, episodes: Sequence[Episode], pcfg: PromptConfig, cfg, *, workdir: str,
                        logger: MetricsLogger | None = None) -> list[dict]:
    """cfg: rounds, samples_per_step, temperature, seed, and an `sft` block for each round."""
    history = []
    for r in range(cfg.rounds):
        thoughts = collect_thoughts(agent, episodes, pcfg, samples_per_step=cfg.samples_per_step,
                                    temperature=cfg.temperature, seed=cfg.seed + r)
        n_steps = sum(len(ep.actions) for ep in episodes)
        stats = {"round": r, "kept_steps": len(thoughts), "total_steps": n_steps,
                 "kept_fraction": len(thoughts) / max(n_steps, 1)}
        history.append(stats)
        if logger is not None:
            logger.write(r, stats, prefix="reasoning_sft")
        if not thoughts:
            break
        # Train only on steps that have a verified thought (others would teach empty thoughts).
        keep_eps = sorted({e for e, _ in thoughts})
        remap = {e: i for i, e in enumerate(keep_eps)}
        train_sft(agent, [episodes[e] for e in keep_eps], pcfg, cfg.sft,
                  workdir=os.path.join(workdir, f"round_{r}"), logger=logger, prefix=f"reasoning_sft_r{r}",
                  thoughts={(remap[e], t): th for (e, t), th in thoughts.items()}, only_thought_steps=True)
    with open(os.path.join(workdir, "reasoning_sft.json"), "w") as f:
        json.dump(history, f, indent=1)
    return history
