"""Semi-online RL trainer (UI-S1, SPEC §3–§5) and the offline-RL baseline.

Semi-online: per iteration, a batch of expert episodes; N Patch-Module rollouts each; rule step
rewards; discounted returns with step- and episode-level advantages; dynamic sampling; one (or
more) PPO-clip updates; weights synced to the sampler.
Offline RL: single-step GRPO conditioned on the expert history — N samples per expert step,
advantage = group-standardised step reward (groups keyed by (episode, step)).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from absl import logging
from tqdm.auto import tqdm

from gui_jax.core.types import Episode
from gui_jax.data.pipeline import list_batch, make_pipeline
from gui_jax.rl.advantages import dynamic_sampling_keep, grpo_trajectory, ui_s1_semi_online
from gui_jax.rl.prompting import PromptConfig, build_messages
from gui_jax.rl.semi_online import SemiOnlineConfig, judge_step, semi_online_rollouts
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.rl_common import (IterationCheckpoints, RefLogprobs, make_rl_updater, micro_batches,
                                     reference_params, samples_from_generations)
from gui_jax.train.sft import expert_history


class _Indices:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return int(i)


def _episode_iter(n_episodes: int, cfg):
    if n_episodes < 1:
        raise ValueError("RL needs at least one training episode")
    bs = min(cfg.episodes_per_iteration, n_episodes)
    return iter(make_pipeline(_Indices(n_episodes), seed=cfg.seed, batch_size=bs, shard_index=0,
                              shard_count=1, batch_fn=list_batch, num_threads=0))


def scfg_from(cfg) -> SemiOnlineConfig:
    return SemiOnlineConfig(num_rollouts=cfg.num_rollouts, patch_strategy=cfg.patch_strategy,
                            patch_threshold=cfg.patch_threshold, temperature=cfg.temperature,
                            reward_preset=cfg.reward_preset, require_thought=cfg.require_thought)


def semi_online_batch(agent, episodes: Sequence[Episode], idx: Sequence[int], pcfg, cfg, seed: int):
    """Rollouts for the episodes `idx` → (steps, advantages per step, returns, keep mask per step)."""
    steps = semi_online_rollouts(agent.policy, [episodes[i] for i in idx], pcfg, scfg_from(cfg), seed=seed)
    n = cfg.num_rollouts
    rewards = np.array([s.reward for s in steps], np.float32)
    traj = np.array([s.episode_index * n + s.rollout for s in steps], np.int32)
    step_idx = np.array([s.step for s in steps], np.int32)
    group = np.array([s.episode_index for s in steps], np.int32)
    mismatch = np.array([s.mismatch for s in steps], bool)
    adv = ui_s1_semi_online(rewards, traj, step_idx, group, mismatch, gamma=cfg.gamma, omega=cfg.omega,
                            cut_at_mismatch=cfg.cut_at_mismatch)
    keep = np.ones(len(steps), bool)
    if cfg.dynamic_sampling:
        first = step_idx == 0
        keep_traj = np.asarray(dynamic_sampling_keep(np.asarray(adv["returns"])[first], group[first],
                                                     eta=cfg.dynamic_sampling_eta))
        kept_groups = set(group[first][keep_traj].tolist())
        keep = np.array([g in kept_groups for g in group], bool)
    return steps, np.asarray(adv["advantages"]), np.asarray(adv["returns"]), keep


def train_semi_online(agent, episodes: Sequence[Episode], pcfg: PromptConfig, cfg, *, workdir: str,
                      logger: Optional[MetricsLogger] = None, prefix: str = "rl",
                      ref_params=None) -> dict:
    """Trains agent.params in place; resumable from `workdir` checkpoints. cfg: the `rl` block."""
    updater = make_rl_updater(agent, cfg)
    ref = RefLogprobs(agent, reference_params(agent, workdir, ref_params)) if cfg.kl_coef > 0 else None
    ck = IterationCheckpoints(workdir, cfg.checkpoint_every)
    state, extra = ck.start(agent, updater, cfg.seed)
    data = _episode_iter(len(episodes), cfg)
    iteration = int(extra.get("iteration", 0))
    if extra:
        data.set_state(extra["data"])
        agent.set_params(state.params)
        logging.info("%s: resumed at iteration %d", prefix, iteration)
    pbar = tqdm(total=cfg.iterations, initial=iteration, desc=prefix, dynamic_ncols=True, leave=False)
    done_this_run = 0
    while iteration < cfg.iterations:
        if cfg.get("stop_after_steps") is not None and done_this_run >= cfg.stop_after_steps:
            ck.maybe_save(state, iteration, {"data": data.get_state()}, last=True)
            ck.close()
            from gui_jax.train.fit import StopRequested
            raise StopRequested(f"{prefix}: stopped after {done_this_run} iterations as configured")
        it = iteration
        gens, advs, stats = [], [], {"reward": [], "exact": [], "kept_groups": 0, "tries": 0, "steps": 0}
        for attempt in range(max(cfg.dynamic_sampling_max_tries, 1)):
            idx = next(data)
            steps, adv, _, keep = semi_online_batch(agent, episodes, idx, pcfg, cfg,
                                                    seed=cfg.seed * 1_000_003 + it * 101 + attempt)
            stats["tries"] += 1
            stats["steps"] += len(steps)
            stats["reward"] += [s.reward for s in steps]
            stats["exact"] += [float(s.exact_match) for s in steps]
            stats["kept_groups"] += len({s.episode_index for s, k in zip(steps, keep) if k})
            gens += [s.generation for s, k in zip(steps, keep) if k]
            advs += [a for a, k in zip(adv, keep) if k]
            if stats["kept_groups"] >= min(cfg.episodes_per_iteration, len(episodes)):
                break
        metrics = {"reward_mean": float(np.mean(stats["reward"])), "step_match": float(np.mean(stats["exact"])),
                   "kept_groups": stats["kept_groups"], "sampling_tries": stats["tries"],
                   "rollout_steps": stats["steps"]}
        samples = samples_from_generations(gens, advs)
        if samples:
            # The batch is split into `num_mini_batches` optimizer steps (verl's ppo mini-batches);
            # each later mini-batch is off-policy by then, which the PPO ratio accounts for.
            n_mb = max(1, min(cfg.num_mini_batches, len(samples)))
            size = -(-len(samples) // n_mb)
            for k in range(0, len(samples), size):
                state, m = updater.step(state, micro_batches(agent, samples[k:k + size], cfg, ref))
            metrics.update(m)
            agent.set_params(state.params)
        iteration += 1
        done_this_run += 1
        metrics["optimizer_step"] = state.step
        if logger is not None:
            logger.write(iteration, metrics, prefix=prefix)
        pbar.update(1)
        pbar.set_postfix(reward=f"{metrics['reward_mean']:.3f}")
        ck.maybe_save(state, iteration, {"data": data.get_state()}, last=iteration >= cfg.iterations)
    pbar.close()
    ck.close()
    agent.set_params(state.params)
    return {"iterations": iteration, "optimizer_steps": state.step}


def train_offline_rl(agent, episodes: Sequence[Episode], pcfg: PromptConfig, cfg, *, workdir: str,
                     logger: Optional[MetricsLogger] = None, prefix: str = "offline_rl",
                     ref_params=None) -> dict:
    """Single-step GRPO with the expert history (the UI-S1 offline-RL baseline)."""
    updater = make_rl_updater(agent, cfg)
    ref = RefLogprobs(agent, reference_params(agent, workdir, ref_params)) if cfg.kl_coef > 0 else None
    ck = IterationCheckpoints(workdir, cfg.checkpoint_every)
    state, extra = ck.start(agent, updater, cfg.seed)
    data = _episode_iter(len(episodes), cfg)
    iteration = int(extra.get("iteration", 0))
    if extra:
        data.set_state(extra["data"])
        agent.set_params(state.params)
    scfg = scfg_from(cfg)
    pbar = tqdm(total=cfg.iterations, initial=iteration, desc=prefix, dynamic_ncols=True, leave=False)
    while iteration < cfg.iterations:
        idx = next(data)
        items = [(i, t) for i in idx for t in range(len(episodes[i].actions))]
        prompts = []
        for i, t in items:
            ep = episodes[i]
            prompts.append(build_messages(ep.goal, expert_history(ep, t, pcfg), ep.observations[t], pcfg))
        n = cfg.num_rollouts
        gens = agent.policy.generate([p for p in prompts for _ in range(n)], temperature=cfg.temperature,
                                     seed=cfg.seed * 1_000_003 + iteration)
        rewards, groups = [], []
        for k, g in enumerate(gens):
            i, t = items[k // n]
            rewards.append(judge_step(g.text, episodes[i], t, pcfg, scfg).reward)
            groups.append(k // n)
        adv = np.asarray(grpo_trajectory(np.asarray(rewards, np.float32), np.asarray(groups, np.int32)))
        keep = [k for k in range(len(gens)) if adv[k] != 0.0]
        metrics = {"reward_mean": float(np.mean(rewards)), "kept": len(keep)}
        if keep:
            state, m = updater.step(state, micro_batches(
                agent, samples_from_generations([gens[k] for k in keep], adv[keep]), cfg, ref))
            metrics.update(m)
            agent.set_params(state.params)
        iteration += 1
        if logger is not None:
            logger.write(iteration, metrics, prefix=prefix)
        pbar.update(1)
        ck.maybe_save(state, iteration, {"data": data.get_state()}, last=iteration >= cfg.iterations)
    pbar.close()
    ck.close()
    agent.set_params(state.params)
    return {"iterations": iteration, "optimizer_steps": state.step}
