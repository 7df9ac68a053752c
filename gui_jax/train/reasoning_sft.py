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
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, judge_step
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.sft import expert_history, train_sft


class NoVerifiedThoughtsError(ValueError):
    """A round kept no sampled thought: there is nothing to fine-tune on."""


def collect_thoughts(agent, episodes: Sequence[Episode], pcfg: PromptConfig, *, samples_per_step: int,
                     temperature: float, seed: int, require_thought: bool = True, chunk_size: int = 64,
                     progress: bool = True) -> dict:
    """(episode index, step) → a sampled thought whose action matched the expert (first found).

    Pass k re-asks only the steps still missing a thought; prompts go to the policy in chunks of
    `chunk_size` so the progress bar moves while sampling.
    """
    from gui_jax.core.progress import progress as progress_bar
    items = [(e, t) for e, ep in enumerate(episodes) for t in range(len(ep.actions))]
    prompts = [build_messages(episodes[e].goal, expert_history(episodes[e], t, pcfg), episodes[e].observations[t],
                              pcfg) for e, t in items]
    scfg = SemiOnlineConfig(require_thought=require_thought)
    kept: dict = {}
    for k in range(samples_per_step):
        todo = [i for i, it in enumerate(items) if it not in kept]
        if not todo:
            break
        bar = progress_bar(total=len(todo), desc=f"sampling thoughts {k + 1}/{samples_per_step}", leave=False,
                           disable=not progress)
        for j in range(0, len(todo), chunk_size):
            part = todo[j:j + chunk_size]
            gens = agent.policy.generate([prompts[i] for i in part], temperature=temperature,
                                         seed=seed * 131 + k + 7919 * (j // chunk_size))
            for i, g in zip(part, gens):
                e, t = items[i]
                jd = judge_step(g.text, episodes[e], t, pcfg, scfg)
                if jd.exact_match and jd.thought.strip():
                    kept[(e, t)] = jd.thought.strip()
            bar.update(len(part))
            bar.set_postfix(kept=f"{len(kept)}/{len(items)}")
        bar.close()
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
        print(f"round {r}: kept {len(thoughts)} of {n_steps} expert steps with a verified thought")
        if not thoughts:
            raise NoVerifiedThoughtsError(
                f"reasoning SFT round {r} kept 0 of {n_steps} sampled steps: no sampled action with a "
                f"thought matched the expert ({cfg.samples_per_step} samples per step at temperature "
                f"{cfg.temperature}), so there is nothing to fine-tune on. Start from a model that writes "
                f"thoughts (reasoning.init_checkpoint = an SFT stage's checkpoints, or model.checkpoint), "
                f"or raise reasoning.samples_per_step")
        # Train only on steps that have a verified thought (others would teach empty thoughts).
        keep_eps = sorted({e for e, _ in thoughts})
        remap = {e: i for i, e in enumerate(keep_eps)}
        train_sft(agent, [episodes[e] for e in keep_eps], pcfg, cfg.sft,
                  workdir=os.path.join(workdir, f"round_{r}"), logger=logger, prefix=f"reasoning_sft_r{r}",
                  thoughts={(remap[e], t): th for (e, t), th in thoughts.items()}, only_thought_steps=True)
    with open(os.path.join(workdir, "reasoning_sft.json"), "w") as f:
        json.dump(history, f, indent=1)
    return history
