"""Reward models in the online trainer (docs/algorithms.md §8–§9): the task reward from the RM's outcome
score (`online.reward = "rm"`), GUI-Shepherd's dense PRM reward for PPO (`online.step_reward = "prm"`) and the
PPO critic initialised from the RM (`online.critic_init = "rm"`).

A trajectory reward model is any object with
    outcome_scores(records) -> float64 [N]          P(+) of terminate(success) given the whole trajectory
    step_scores(records)    -> list of float64 [T_i] P(+) of each step's action (0 for an unparsable step)
over `TrajectoryRecord`s of the rollout engine. `RMTrajectoryScorer` is the trained reward model behind it
(`RewardScorer` on a temporary episode per trajectory); tests use deterministic stubs.

Rewards (per completed trajectory):
  reward = rule: success = the env's own check (PhoneSim's state check);
  reward = rm:   success = [P_outcome >= rm_threshold]; the rule check is still logged (`reward_rule_mean`)
                 with the agreement rate, so a run shows how far the RM reward departs from the truth;
  dense (ppo):   r_t = prm_weight·P(+ | step t)·[step_reward = prm] + format_weight·[response t parsed],
                 fed through the PPO trainer's `reward_fn(trajectory, t)` hook (the outcome term
                 `outcome_reward`·success is added on the last step by the trainer); the same for any
                 registered algorithm with `dense_rewards`.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import jax
import numpy as np
from flax import nnx

from gui_jax.core.types import Action, Episode
from gui_jax.rewards.data_engine import RewardRecord, StepRef
from gui_jax.train.online.builtin_algorithms import get_algorithm


# ------------------------------------------------------------------------------------------ trajectories → RM records
def trajectory_episode(rec, episode_id: str) -> tuple[Episode, list[StepRef], list[int]]:
    """The parsed steps of a rollout record as an Episode (observations: each parsed step's screen, then the
    final screen when the record has it), their StepRefs (each carrying its action, so element-mode prompts
    find the element under a point), and per record step its index among the parsed steps (-1: unparsable).
    A record whose responses all failed to parse becomes one `terminate(success)` step on its last screen."""
    obs, acts, index = [], [], []
    for s in rec.steps:
        if s.action is None:
            index.append(-1)
            continue
        index.append(len(acts))
        obs.append(s.observation)
        acts.append(s.action)
    final = getattr(rec, "final_observation", None)
    if not acts:
        screen = final if final is not None else (rec.steps[-1].observation if rec.steps else None)
        if screen is None:
            raise ValueError(f"trajectory of task {rec.task_id!r} has no observation to score")
        ep = Episode(episode_id, rec.task.goal, [screen], [Action("terminate", status="success")])
        return ep, [StepRef(episode_id, 0, ep.actions[0])], index
    if final is not None:
        obs.append(final)
    ep = Episode(episode_id, rec.task.goal, obs, acts)
    return ep, [StepRef(episode_id, k, a) for k, a in enumerate(acts)], index


class RMTrajectoryScorer:
    """A trained reward model (an Agent holding the RM's params) scoring rollout records: P(+) of a verdict RM
    (`rm.model.scorer = verdict`) or P(the step's action | the agent's prompt) of a likelihood RM
    (`policy_likelihood`). `label_ids` (the verdict's +/- tokens, for critic_init = rm) is None for the latter.

    Records whose prompt cannot be built (e.g. an element-mode click on no element) score 0 and are counted
    in `unscorable`."""

    def __init__(self, rm_agent, pcfg, rcfg):
        from gui_jax.rewards.likelihood import make_scorer
        if getattr(rcfg, "history_min", False):
            raise ValueError("rm.model.history_min is not applied to rollout rewards (each step is scored alone): "
                             "set it to False for online RL")
        self.agent, self.pcfg, self.rcfg = rm_agent, pcfg, rcfg
        self.scorer = make_scorer(rm_agent, {}, pcfg, rcfg)
        self.label_ids = (self.scorer.pos_id, self.scorer.neg_id) if rcfg.scorer == "verdict" else None
        self.unscorable = 0

    def _score(self, questions: Sequence[RewardRecord], episodes: dict) -> np.ndarray:
        self.scorer.episodes = episodes
        out = np.zeros(len(questions), np.float64)
        samples, where = [], []
        for i, q in enumerate(questions):
            try:
                samples.append(self.scorer.samples([q])[0])
                where.append(i)
            except ValueError:
                self.unscorable += 1
        if samples:
            out[where] = self.scorer.score_samples(samples)
        return out

    def outcome_scores(self, records: Sequence) -> np.ndarray:
        episodes, questions = {}, []
        for i, rec in enumerate(records):
            ep, refs, _ = trajectory_episode(rec, f"online-{i}")
            episodes[ep.episode_id] = ep
            questions.append(RewardRecord("outcome", rec.task.goal, tuple(refs), True, "rule"))
        return self._score(questions, episodes) if questions else np.zeros(0, np.float64)

    def step_scores(self, records: Sequence) -> list[np.ndarray]:
        episodes, questions, slots = {}, [], []
        out = [np.zeros(len(rec.steps), np.float64) for rec in records]
        for i, rec in enumerate(records):
            ep, refs, index = trajectory_episode(rec, f"online-{i}")
            episodes[ep.episode_id] = ep
            for t, k in enumerate(index):
                if k >= 0:
                    questions.append(RewardRecord("step", rec.task.goal, tuple(refs[:k + 1]), True, "rule"))
                    slots.append((i, t))
        if questions:
            for (i, t), p in zip(slots, self._score(questions, episodes)):
                out[i][t] = p
        return out


# ------------------------------------------------------------------------------------------ rewards of an iteration
def dense_step_rewards(records: Sequence, step_p: Optional[Sequence[np.ndarray]], *, prm_weight: float,
                       format_weight: float) -> list[np.ndarray]:
    """Per record [T_i] float32: prm_weight·P(+ | step t) (when step_p is given) + format_weight·[step t parsed]."""
    out = []
    for i, rec in enumerate(records):
        parsed = np.array([s.action is not None for s in rec.steps], np.float32)
        r = np.float32(format_weight) * parsed
        if step_p is not None:
            r = r + np.float32(prm_weight) * np.asarray(step_p[i], np.float32)
        out.append(r.astype(np.float32))
    return out


def reward_fn_from_table(trajs: Sequence, table: Sequence[np.ndarray], user_fn: Optional[Callable] = None) -> Callable:
    """reward_fn(traj, t) for PPO's hook: table[i][t] of the trajectory trajs[i] (+ user_fn(traj, t) if given)."""
    by_id = {id(t): np.asarray(r, np.float32) for t, r in zip(trajs, table)}

    def reward_fn(traj, t: int) -> float:
        r = float(by_id[id(traj)][t]) if id(traj) in by_id else 0.0
        return r + (float(user_fn(traj, t)) if user_fn is not None else 0.0)
    return reward_fn


def apply_rewards(records: Sequence, trajs: Sequence, cfg, reward_model=None,
                  user_fn: Optional[Callable] = None) -> tuple[Optional[Callable], dict]:
    """Sets each Traj's success from the configured task reward and builds PPO's per-step reward_fn.

    records[i] is the completed rollout record of trajs[i]. Returns (reward_fn or user_fn, metrics): with
    reward = rm, `reward_rule_mean`, `reward_rm_mean`, `rm_agreement` (fraction of trajectories where
    [P ≥ threshold] equals the rule check) and `rm_p_mean`; with dense rewards, `dense_reward_mean`."""
    metrics: dict = {}
    if len(records) != len(trajs):
        raise ValueError(f"apply_rewards: {len(records)} records for {len(trajs)} trajectories")
    rule = np.array([bool(t.success) for t in trajs], bool)
    if trajs:
        metrics["reward_rule_mean"] = float(rule.mean())
    if cfg.get("reward", "rule") == "rm" and trajs:
        p = np.asarray(reward_model.outcome_scores(records), np.float64)
        if p.shape != (len(trajs),):
            raise ValueError(f"outcome_scores returned shape {p.shape} for {len(trajs)} trajectories")
        rm = p >= float(cfg.rm_threshold)
        for t, s in zip(trajs, rm):
            t.success = bool(s)
        metrics.update({"reward_rm_mean": float(rm.mean()), "rm_agreement": float((rm == rule).mean()),
                        "rm_p_mean": float(p.mean()), "rm_false_positive": int((rm & ~rule).sum()),
                        "rm_false_negative": int((~rm & rule).sum())})
    if not get_algorithm(cfg.algorithm).dense_rewards:  # only algorithms with per-step rewards use a reward_fn table
        return user_fn, metrics
    prm = cfg.get("step_reward", "none") == "prm"
    fmt = float(cfg.get("format_weight", 0.0))
    if not prm and fmt == 0.0:
        return user_fn, metrics
    step_p = reward_model.step_scores(records) if prm else None
    if prm:
        bad = [i for i, (rec, p) in enumerate(zip(records, step_p)) if len(p) != len(rec.steps)]
        if bad:
            raise ValueError(f"step_scores gave {len(step_p[bad[0]])} scores for the {len(records[bad[0]].steps)} "
                             f"steps of trajectory {bad[0]}")
        allp = np.concatenate([np.asarray(p, np.float64) for p in step_p]) if step_p else np.zeros(0)
        metrics["prm_p_mean"] = float(allp.mean()) if allp.size else 0.0
    table = dense_step_rewards(records, step_p, prm_weight=float(cfg.get("prm_weight", 1.0)), format_weight=fmt)
    flat = np.concatenate(table) if table else np.zeros(0)
    metrics["dense_reward_mean"] = float(flat.mean()) if flat.size else 0.0
    return reward_fn_from_table(trajs, table, user_fn), metrics


# ------------------------------------------------------------------------------------------ critic init
def critic_params_from_rm(agent, reward_model):
    """PPO critic params from the RM (GUI-Shepherd): the RM's backbone (copied) and a value head that reads the
    RM's label log-odds logit(+) − logit(−) (`init_value_head_from_labels`). The RM must have the policy's
    architecture (the critic is built on the policy's graph)."""
    from gui_jax.models.heads import ValueModel, init_value_head_from_labels
    if reward_model.label_ids is None:
        raise ValueError(f"online.critic_init = 'rm' reads a verdict RM's label tokens; the reward model in "
                         f"online.rm_checkpoint_dir scores with rm.model.scorer = {reward_model.rcfg.scorer!r}: "
                         "set online.critic_init='' (critic from the policy) or use a verdict RM")
    rm_agent = reward_model.agent
    want, got = jax.tree.leaves(agent.params), jax.tree.leaves(rm_agent.params)
    if (jax.tree.structure(agent.params) != jax.tree.structure(rm_agent.params)
            or any(a.shape != b.shape for a, b in zip(want, got))):
        raise ValueError("online.critic_init = 'rm': the reward model in online.rm_checkpoint_dir has another "
                         "architecture than the policy (the critic copies the RM's backbone into the policy's "
                         "graph); train the RM with the policy's model.* fields or set online.critic_init=''")
    vm = ValueModel(rm_agent.model(rm_agent.copy_params()))
    pos_id, neg_id = reward_model.label_ids
    init_value_head_from_labels(vm, pos_id, neg_id)
    _, params, _ = nnx.split(vm, nnx.Param, ...)
    return params
