"""Reasoning-SFT bootstrap (MobileRL §2.1): sample thought+action with the current policy on each
expert step (expert history), keep the thoughts whose action matches the expert's, fine-tune on
(kept thought, expert action), and repeat for a number of rounds.

MobileRL's stage 0 asks an instruct model for candidate thoughts. With `seed_thoughts = "describe"` round 0
takes PhoneSim's description of each expert action instead (what it does on its screen: "tap Quiet Fire in
Music"), so a model that has never written a thought (the tiny base) can start; later rounds sample.

Run by the quickstart as a stage (`reasoning_sft = True`: SFT → reasoning SFT → RL) and by the job
gui_jax/jobs/reasoning_sft.py. Resumable: a round's kept thoughts are saved (round_<r>/thoughts.json) and its
fine-tune resumes from its checkpoints.
"""
from __future__ import annotations

import json
import os
from typing import Sequence

from gui_jax.core.types import Episode
from gui_jax.envs.sim.describe import describe_steps
from gui_jax.rl.names import SEED_THOUGHTS
from gui_jax.rl.prompting import PromptConfig, build_messages
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, judge_step
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.sft import expert_history, train_sft


class NoVerifiedThoughtsError(ValueError):
    """A round kept no sampled thought: there is nothing to fine-tune on."""


def described_thoughts(episodes: Sequence[Episode]) -> dict:
    """(episode index, step) → the expert action's description on its screen (envs/sim/describe.py), its quotes
    dropped: a label then keeps the token form it has in the goal and the UI text (a quote glued to its first
    word makes another token), so the thought names the target row in the tokens the policy looks up."""
    out = {}
    for e, ep in enumerate(episodes):
        for t, a in enumerate(describe_steps(ep).actions):
            out[(e, t)] = " ".join(a.action_desc.replace("'", " ").split())
    return out


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


def _round_thoughts(agent, episodes, pcfg, cfg, r: int, round_dir: str) -> tuple[dict, str]:
    """(the round's kept thoughts, their source): loaded when the round saved them, else described (round 0
    with seed_thoughts = describe) or sampled, then saved."""
    path = os.path.join(round_dir, "thoughts.json")
    if os.path.exists(path):
        with open(path) as f:
            saved = json.load(f)
        return {(e, t): th for e, t, th in saved["thoughts"]}, saved["source"]
    if r == 0 and cfg.get("seed_thoughts", "") == "describe":
        thoughts, source = described_thoughts(episodes), "described"
    else:
        thoughts, source = collect_thoughts(agent, episodes, pcfg, samples_per_step=cfg.samples_per_step,
                                            temperature=cfg.temperature, seed=cfg.seed + r), "sampled"
    if thoughts:
        os.makedirs(round_dir, exist_ok=True)
        with open(path, "w") as f:
            json.dump({"source": source, "thoughts": [[e, t, th] for (e, t), th in sorted(thoughts.items())]}, f)
    return thoughts, source


def reasoning_bootstrap(agent, episodes: Sequence[Episode], pcfg: PromptConfig, cfg, *, workdir: str,
                        logger: MetricsLogger | None = None) -> list[dict]:
    """cfg: rounds, samples_per_step, temperature, seed, seed_thoughts ('' | 'describe'), and an `sft` block
    for each round."""
    if cfg.get("seed_thoughts", "") not in SEED_THOUGHTS:
        raise ValueError(f"reasoning.seed_thoughts = {cfg.seed_thoughts!r}; known: {SEED_THOUGHTS}")
    history, n_steps = [], sum(len(ep.actions) for ep in episodes)
    for r in range(cfg.rounds):
        round_dir = os.path.join(workdir, f"round_{r}")
        thoughts, source = _round_thoughts(agent, episodes, pcfg, cfg, r, round_dir)
        stats = {"round": r, "source": source, "kept_steps": len(thoughts), "total_steps": n_steps,
                 "kept_fraction": len(thoughts) / max(n_steps, 1)}
        history.append(stats)
        if logger is not None:
            logger.write(r, {k: v for k, v in stats.items() if k != "source"}, prefix="reasoning_sft")
        kind = "verified" if source == "sampled" else source
        print(f"round {r}: {len(thoughts)} of {n_steps} expert steps with a {kind} thought")
        if not thoughts:
            raise NoVerifiedThoughtsError(
                f"reasoning SFT round {r} kept 0 of {n_steps} sampled steps: no sampled action with a "
                f"thought matched the expert ({cfg.samples_per_step} samples per step at temperature "
                f"{cfg.temperature}), so there is nothing to fine-tune on. Start from a model that writes "
                f"thoughts (reasoning.init_checkpoint = an SFT stage's checkpoints, or model.checkpoint), "
                f"seed round 0 with reasoning.seed_thoughts = 'describe', or raise reasoning.samples_per_step")
        # Train only on steps that have a verified thought (others would teach empty thoughts).
        keep_eps = sorted({e for e, _ in thoughts})
        remap = {e: i for i, e in enumerate(keep_eps)}
        train_sft(agent, [episodes[e] for e in keep_eps], pcfg, cfg.sft,
                  workdir=round_dir, logger=logger, prefix=f"reasoning_sft_r{r}",
                  thoughts={(remap[e], t): th for (e, t), th in thoughts.items()}, only_thought_steps=True)
    with open(os.path.join(workdir, "reasoning_sft.json"), "w") as f:
        json.dump(history, f, indent=1)
    return history
