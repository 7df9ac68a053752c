"""Semi-online RL trainer (UI-S1, docs/algorithms.md §3–§5) and the offline-RL baseline.

Semi-online: per iteration, a batch of expert episodes; N Patch-Module rollouts each; rule step
rewards; discounted returns with step- and episode-level advantages; dynamic sampling; one (or
more) PPO-clip updates; weights synced to the sampler.
Offline RL: single-step GRPO conditioned on the expert history — N samples per expert step,
advantage = group-standardised step reward (groups keyed by (episode, step)).
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np
from absl import logging

from gui_jax.core.types import Episode
from gui_jax.rl.advantages import dynamic_sampling_keep, grpo_trajectory, ui_s1_semi_online
from gui_jax.rl.prompting import PromptConfig, build_messages
from gui_jax.rl.selective import TemplateLearnability, UniformSkip
from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, judge_step, semi_online_rollouts
from gui_jax.train.config_blocks import DYNAMIC_SAMPLING_SHORT  # declared with rl.dynamic_sampling_short
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.rl_common import RLRun, samples_from_generations
from gui_jax.train.sft import expert_history


def scfg_from(cfg) -> SemiOnlineConfig:
    """The rollout settings of an `rl` config block (require_thought None = from the dialect)."""
    return SemiOnlineConfig(num_rollouts=cfg.num_rollouts, patch_strategy=cfg.patch_strategy,
                            patch_threshold=cfg.patch_threshold, temperature=cfg.temperature,
                            reward_preset=cfg.reward_preset, require_thought=cfg.get("require_thought"),
                            bbox_scale=cfg.get("bbox_scale", 1.2), dist_threshold=cfg.get("dist_threshold", 0.04),
                            text_match=cfg.get("text_match", "substring"))


def aux_policy_from(agent, cfg):
    """The auxiliary thought model of off-policy patches: a Qwen2.5-VL checkpoint folder named by
    `rl.patch_aux_checkpoint` (same model settings as the agent), or None when not configured."""
    path = cfg.get("patch_aux_checkpoint") or ""
    if not path:
        return None
    import ml_collections

    from gui_jax.rl.agent import Agent
    model = ml_collections.ConfigDict(agent.cfg.to_dict())
    model.checkpoint = path
    return Agent(ml_collections.ConfigDict({"model": model})).policy


def trim_groups(groups: list, target: int, *, tries: int, eta: float, on_short: str = "log",
                warn: bool = True) -> list:
    """Dynamic sampling's batch: the first `target` kept groups. Fewer after the last try: a warning
    (on_short='log'; warn=False: none, the caller counts them) or a RuntimeError (on_short='raise')."""
    if on_short not in DYNAMIC_SAMPLING_SHORT:
        raise ValueError(f"unknown rl.dynamic_sampling_short {on_short!r}; known: {DYNAMIC_SAMPLING_SHORT}")
    if len(groups) >= target:
        return groups[:target]
    msg = (f"dynamic sampling kept {len(groups)} of {target} task groups after {tries} tries (a group "
           f"needs step-0 return std > η = {eta}); lower rl.dynamic_sampling_eta or raise "
           "rl.dynamic_sampling_max_tries")
    if on_short == "raise":
        raise RuntimeError(msg + ", or set rl.dynamic_sampling_short='log' to train on a short batch")
    if warn:
        logging.warning("%s; training on the short batch (later short batches: rl/sampling_short, and a count at "
                        "the end)", msg)
    return groups


SELECTOR_STATE = {UniformSkip: "uniform_skip", TemplateLearnability: "template_learnability"}


def task_selector(cfg, episodes: Sequence[Episode]):
    """The rollout task draw besides the plain shuffled one: UniformSkip (rl.revisit_uniform < 1),
    TemplateLearnability (rl.template_sampling = learnability), or None; at most one of them."""
    learnability = cfg.get("template_sampling", "uniform") == "learnability"
    revisit = cfg.get("revisit_uniform", 1.0) < 1.0
    if learnability and revisit:
        raise ValueError("rl.template_sampling='learnability' and rl.revisit_uniform < 1 both choose the rollout "
                         "tasks: use one of them")
    if learnability:
        return TemplateLearnability([e.template or e.app for e in episodes], cfg.get("template_sampling_floor", 0.2))
    return UniformSkip(cfg.revisit_uniform) if revisit else None


def semi_online_batch(agent, episodes: Sequence[Episode], idx: Sequence[int], pcfg, cfg, seed: int,
                      aux_policy=None):
    """Rollouts for the episodes `idx` → (steps, advantages per step, returns, keep mask per step,
    {episode index: informative}); a group is informative when its step-0 returns vary (std > η), and dynamic
    sampling keeps only those."""
    steps = semi_online_rollouts(agent.policy, [episodes[i] for i in idx], pcfg, scfg_from(cfg), seed=seed,
                                 aux_policy=aux_policy)
    n = cfg.num_rollouts
    rewards = np.array([s.reward for s in steps], np.float32)
    traj = np.array([s.episode_index * n + s.rollout for s in steps], np.int32)
    step_idx = np.array([s.step for s in steps], np.int32)
    group = np.array([s.episode_index for s in steps], np.int32)
    mismatch = np.array([s.mismatch for s in steps], bool)
    adv = ui_s1_semi_online(rewards, traj, step_idx, group, mismatch, gamma=cfg.gamma, omega=cfg.omega,
                            cut_at_mismatch=cfg.cut_at_mismatch, episode_level=cfg.get("episode_level", "paper"))
    first = step_idx == 0
    varied = np.asarray(dynamic_sampling_keep(np.asarray(adv["returns"])[first], group[first],
                                              eta=cfg.dynamic_sampling_eta))
    informative = {int(g): False for g in group[first]}
    for g in group[first][varied]:
        informative[int(g)] = True
    keep = np.array([informative[int(g)] for g in group], bool) if cfg.dynamic_sampling \
        else np.ones(len(steps), bool)
    return steps, np.asarray(adv["advantages"]), np.asarray(adv["returns"]), keep, informative


def train_semi_online(agent, episodes: Sequence[Episode], pcfg: PromptConfig, cfg, *, workdir: str,
                      logger: Optional[MetricsLogger] = None, prefix: str = "rl",
                      ref_params=None, aux_policy=None) -> dict:
    """Trains agent.params in place; resumable from `workdir` checkpoints. cfg: the `rl` block.

    aux_policy: the off-policy patch's thought model (default: built from rl.patch_aux_checkpoint).
    Dynamic sampling draws rollout batches until `episodes_per_iteration` task groups pass the
    filter (at most dynamic_sampling_max_tries), then trains on exactly that many groups."""
    if aux_policy is None and cfg.patch_strategy == "off_policy":
        aux_policy = aux_policy_from(agent, cfg)
    run = RLRun(agent, len(episodes), cfg, workdir=workdir, ref_params=ref_params, prefix=prefix, logger=logger)
    target_groups = min(cfg.episodes_per_iteration, len(episodes))
    selector = task_selector(cfg, episodes)
    if selector is not None:
        run.register_side_state(SELECTOR_STATE[type(selector)], selector)
    short = []   # kept-group counts of the iterations that trained on a short batch (one warning, then a count)
    while run.running:
        groups, stats = [], {"reward": [], "exact": [], "tries": 0, "steps": 0}
        start = time.perf_counter()
        for attempt in range(max(cfg.dynamic_sampling_max_tries, 1)):
            if selector is None:
                idx = run.next_episodes()
            else:
                rng = np.random.default_rng([cfg.seed, run.iteration, attempt])
                idx = selector.select(run.next_episodes, target_groups, rng)
            steps, adv, _, keep, informative = semi_online_batch(
                agent, episodes, idx, pcfg, cfg, seed=cfg.seed * 1_000_003 + run.iteration * 101 + attempt,
                aux_policy=aux_policy)
            if selector is not None:
                for local, varied in informative.items():
                    selector.record(idx[local], varied)
            stats["tries"] += 1
            stats["steps"] += len(steps)
            stats["reward"] += [s.reward for s in steps]
            stats["exact"] += [float(s.exact_match) for s in steps]
            by_group: dict[int, list] = {}
            for s, a, k in zip(steps, adv, keep):
                if k:
                    by_group.setdefault(s.episode_index, []).append((s.generation, a))
            groups += [by_group[g] for g in sorted(by_group)]
            if len(groups) >= target_groups:
                break
        groups = trim_groups(groups, target_groups, tries=stats["tries"], eta=cfg.dynamic_sampling_eta,
                             on_short=cfg.get("dynamic_sampling_short", "log"), warn=not short)
        if len(groups) < target_groups:
            short.append(len(groups))
        gens = [g for grp in groups for g, _ in grp]
        advs = [a for grp in groups for _, a in grp]
        metrics = {"reward_mean": float(np.mean(stats["reward"])), "step_match": float(np.mean(stats["exact"])),
                   "kept_groups": len(groups), "sampling_tries": stats["tries"],
                   "sampling_short": float(len(groups) < target_groups), "rollout_steps": stats["steps"],
                   "rollout_seconds": time.perf_counter() - start}
        if isinstance(selector, UniformSkip):
            metrics["skipped_tasks"] = selector.take_skipped()
            metrics["known_uniform"] = len(selector.streak)
        elif selector is not None:
            metrics.update(selector.metrics())
        metrics.update(run.update(samples_from_generations(gens, advs)))
        run.end_iteration(metrics)
    if len(short) > 1:
        logging.warning("dynamic sampling: %d iterations of this run trained on a short batch (%.1f of %d task "
                        "groups on average)", len(short), float(np.mean(short)), target_groups)
    return run.close()


def rm_step_rewards(scorer, episodes: Sequence[Episode], items: Sequence[tuple[int, int]], texts: Sequence[str],
                    pcfg: PromptConfig) -> np.ndarray:
    """[N] float32 reward-model rewards of sampled responses (GUI-Shepherd's offline GRPO with PRM reward): text k
    answers step t of episode i (items[k] = (i, t)); its action is scored as the last step after the expert's
    first t steps by `scorer` (rewards.likelihood.make_scorer's: `.episodes`, `.samples`, `.score_samples` ->
    P(+)), in batches. A response that does not parse, or whose RM prompt cannot be built (an element-mode
    prompt and a click by point on no element), gets 0."""
    from gui_jax.rewards.data_engine import RewardRecord, StepRef
    from gui_jax.rl.semi_online_rollout import candidate_action
    scorer.episodes = {episodes[i].episode_id: episodes[i] for i, _ in items}
    out = np.zeros(len(texts), np.float32)
    samples, where = [], []
    for k, (text, (i, t)) in enumerate(zip(texts, items)):
        ep = episodes[i]
        action = candidate_action(text, ep, t, pcfg)
        if action is None:
            continue
        record = RewardRecord("step", ep.goal, tuple(StepRef(ep.episode_id, s) for s in range(t))
                              + (StepRef(ep.episode_id, t, action),), True, "rule")
        try:
            samples.append(scorer.samples([record])[0])
        except ValueError:
            continue
        where.append(k)
    if samples:
        out[where] = scorer.score_samples(samples)
    return out


def train_offline_rl(agent, episodes: Sequence[Episode], pcfg: PromptConfig, cfg, *, workdir: str,
                     logger: Optional[MetricsLogger] = None, prefix: str = "offline_rl",
                     ref_params=None, reward_scorer=None) -> dict:
    """Single-step GRPO with the expert history (the UI-S1 offline-RL baseline). The step reward is the rule
    check against the expert action (`rl.offline_reward = rule`, GUI-Shepherd's oracle), or with
    `reward_scorer` (`rl.offline_reward = rm`) the reward model's step score (`rm_step_rewards`)."""
    if (cfg.get("offline_reward", "rule") == "rm") != (reward_scorer is not None):
        raise ValueError(f"rl.offline_reward = {cfg.get('offline_reward', 'rule')!r} "
                         f"{'needs' if reward_scorer is None else 'takes no'} reward_scorer")
    run = RLRun(agent, len(episodes), cfg, workdir=workdir, ref_params=ref_params, prefix=prefix, logger=logger)
    scfg = scfg_from(cfg)
    n = cfg.num_rollouts
    while run.running:
        items = [(i, t) for i in run.next_episodes() for t in range(len(episodes[i].actions))]
        prompts = [build_messages(episodes[i].goal, expert_history(episodes[i], t, pcfg),
                                  episodes[i].observations[t], pcfg) for i, t in items]
        gens = agent.policy.generate([p for p in prompts for _ in range(n)], temperature=cfg.temperature,
                                     seed=cfg.seed * 1_000_003 + run.iteration)
        rule = [judge_step(g.text, episodes[items[k // n][0]], items[k // n][1], pcfg, scfg).reward
                for k, g in enumerate(gens)]
        rewards = rule if reward_scorer is None else rm_step_rewards(
            reward_scorer, episodes, [items[k // n] for k in range(len(gens))], [g.text for g in gens], pcfg)
        groups = np.arange(len(gens), dtype=np.int32) // n  # one GRPO group per expert step
        adv = np.asarray(grpo_trajectory(np.asarray(rewards, np.float32), groups))
        keep = [k for k in range(len(gens)) if adv[k] != 0.0]
        metrics = {"reward_mean": float(np.mean(rewards)), "kept": len(keep), "rule_reward_mean": float(np.mean(rule))}
        metrics.update(run.update(samples_from_generations([gens[k] for k in keep], adv[keep])))
        run.end_iteration(metrics)
    return run.close()
