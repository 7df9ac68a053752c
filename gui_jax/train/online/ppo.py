"""PPO's critic and GAE for the online trainer (docs/algorithms.md §8; AWG, GUI-Shepherd).

Critic = the policy's backbone (a copy) + a scalar value head (`models.heads.ValueModel`), trained
with its own optimizer and learning rate on 0.5·(V − return)². Step level: V(s_t) is read at the
last prompt token of step t (the state the action is taken in); GAE runs over the steps of each
trajectory. Token level: V is read before every response token; the steps' response tokens are
concatenated per trajectory, each step's reward sits on its last token and GAE runs over tokens.
Rewards: `outcome_reward`·success on the last step, plus `reward_fn(trajectory, t)` when given (the
hook process reward models plug into).
"""
from __future__ import annotations

import os
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.heads import ValueModel
from gui_jax.rl.advantages import gae, token_gae
from gui_jax.rl.batch import TrainSample, build_batch
from gui_jax.train.state import TrainState, Updater, init_train_state, make_optimizer

RewardFn = Callable[[object, int], float]


def step_rewards(traj, *, outcome_weight: float, reward_fn: Optional[RewardFn]) -> np.ndarray:
    """[T] rewards of a trajectory: reward_fn(traj, t) per step (if any) + outcome on the last step."""
    n = len(traj.steps)
    r = np.array([float(reward_fn(traj, t)) for t in range(n)] if reward_fn is not None else [0.0] * n, np.float32)
    if n:
        r[-1] += outcome_weight * traj.reward
    return r


def step_gae(rewards: Sequence[np.ndarray], values: Sequence[np.ndarray], *, gamma: float,
             lam: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-trajectory step rewards [T_i] and values V(s_t) [T_i] → (advantages, returns) lists,
    terminal bootstrap 0 (padded to [B, T_max] for the jitted `gae`)."""
    if not rewards:
        return [], []
    t_max = max(len(r) for r in rewards)
    b = len(rewards)
    r = np.zeros((b, t_max), np.float32)
    v = np.zeros((b, t_max), np.float32)
    m = np.zeros((b, t_max), np.float32)
    for i, (ri, vi) in enumerate(zip(rewards, values)):
        r[i, :len(ri)], v[i, :len(vi)], m[i, :len(ri)] = ri, vi, 1.0
    adv, ret = gae(jnp.asarray(r), jnp.asarray(v), jnp.asarray(m), gamma=gamma, lam=lam)
    adv, ret = np.asarray(adv), np.asarray(ret)
    return [adv[i, :len(x)] for i, x in enumerate(rewards)], [ret[i, :len(x)] for i, x in enumerate(rewards)]


def token_level_gae(step_rewards_: Sequence[np.ndarray], token_values: Sequence[Sequence[np.ndarray]], *,
                    gamma: float, lam: float) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
    """Token-level GAE: per trajectory, per step the values before each response token [R_t]; each
    step's reward on its last token. Returns per trajectory, per step (advantages [R_t], returns [R_t])."""
    if not step_rewards_:
        return [], []
    flat_v = [np.concatenate(tv) if tv else np.zeros((0,), np.float32) for tv in token_values]
    l_max = max(max(len(f) for f in flat_v), 1)
    b = len(flat_v)
    r = np.zeros((b, l_max), np.float32)
    v = np.zeros((b, l_max), np.float32)
    m = np.zeros((b, l_max), np.float32)
    for i, (sr, tv) in enumerate(zip(step_rewards_, token_values)):
        at = 0
        for rt, vt in zip(sr, tv):
            at += len(vt)
            r[i, at - 1] = rt
        v[i, :at], m[i, :at] = flat_v[i], 1.0
    adv, ret = token_gae(jnp.asarray(r), jnp.asarray(v), jnp.asarray(m), gamma=gamma, lam=lam)
    adv, ret = np.asarray(adv), np.asarray(ret)
    out_a, out_r = [], []
    for i, tv in enumerate(token_values):
        cuts = np.cumsum([0] + [len(x) for x in tv])
        out_a.append([adv[i, cuts[k]:cuts[k + 1]] for k in range(len(tv))])
        out_r.append([ret[i, cuts[k]:cuts[k + 1]] for k in range(len(tv))])
    return out_a, out_r


def value_loss_fn(graphdef, rest):
    """0.5·Σ value_mask·(V − value_targets)² over a batch; returns (sum, denominator, metrics)."""
    def loss(params, batch, rng):
        v = _values(nnx.merge(graphdef, params, rest), batch)
        m = batch["value_mask"]
        err = jnp.square(v - batch["value_targets"]) * m
        return 0.5 * jnp.sum(err), jnp.sum(m), {"value_mse": (jnp.sum(err), jnp.sum(m))}
    return loss


def _values(vm, batch):
    return vm(batch["input_ids"], attention_mask=batch["attention_mask"], pixel_values=batch.get("pixel_values"),
              position_ids=batch["position_ids"], vision_layout=batch.get("vision_layout"))


class Critic:
    """Value model (policy backbone copy + value head) with its own optimizer state."""

    def __init__(self, agent, cfg, *, params=None):
        vm = ValueModel(agent.model(agent.copy_params()))
        self.graphdef, init_params, self.rest = nnx.split(vm, nnx.Param, ...)
        self.model_config, self.pad_id = agent.model_config, agent.tokenizer.pad_id
        self.micro_batch_size = cfg.micro_batch_size
        opt = make_optimizer(cfg.critic_learning_rate, warmup_steps=cfg.get("critic_warmup_steps", 0),
                             max_grad_norm=cfg.get("critic_max_grad_norm", 1.0))
        self.updater = Updater(value_loss_fn(self.graphdef, self.rest), opt)
        self.state = init_train_state(params if params is not None else init_params, opt, cfg.seed + 17)
        graphdef, rest = self.graphdef, self.rest
        self._values_jit = jax.jit(lambda p, b: _values(nnx.merge(graphdef, p, rest), b))

    def batches(self, samples: Sequence[TrainSample]) -> list[dict]:
        """Micro-batches in sample order (row k of batch j = sample j·mbs + k)."""
        n = self.micro_batch_size
        return [build_batch(samples[i:i + n], self.model_config, pad_id=self.pad_id, rows=n)
                for i in range(0, len(samples), n)]

    def token_values(self, samples: Sequence[TrainSample]) -> list[np.ndarray]:
        """Per sample: [R+1] values — V at the last prompt token (index 0: the step's state value), then
        before each later response token; [:R] are the values before each response token."""
        out = []
        for j, batch in enumerate(self.batches(samples)):
            v = np.asarray(self._values_jit(self.state.params, batch))
            for k in range(min(self.micro_batch_size, len(samples) - j * self.micro_batch_size)):
                s = samples[j * self.micro_batch_size + k]
                p, r = s.prompt_ids.size, s.response_ids.size
                out.append(v[k, p - 1:p + r])
        return out

    def update(self, samples: Sequence[TrainSample], targets: Sequence[np.ndarray], *, level: str) -> dict:
        """One optimizer step on 0.5·(V − target)²; targets per sample: a scalar (step level, at the
        last prompt token) or [R] (token level, before each response token)."""
        if not samples:
            return {}
        batches = self.batches(samples)
        n = self.micro_batch_size
        for j, batch in enumerate(batches):
            mask = np.zeros(batch["input_ids"].shape, np.float32)
            tgt = np.zeros(batch["input_ids"].shape, np.float32)
            for k, s in enumerate(samples[j * n:(j + 1) * n]):
                p, r = s.prompt_ids.size, s.response_ids.size
                if level == "step":
                    mask[k, p - 1], tgt[k, p - 1] = 1.0, float(np.asarray(targets[j * n + k]).reshape(()))
                else:
                    mask[k, p - 1:p - 1 + r], tgt[k, p - 1:p - 1 + r] = 1.0, targets[j * n + k]
            batch["value_mask"], batch["value_targets"] = mask, tgt
        self.state, metrics = self.updater.step(self.state, batches)
        return {"critic_loss": metrics["loss"], "value_mse": metrics["value_mse"],
                "critic_grad_norm": metrics["grad_norm"]}

    def save(self, directory: str) -> None:
        from gui_jax.train.checkpoint import save_params
        save_params(self.state.as_pytree(), directory)

    def load(self, directory: str) -> None:
        from gui_jax.train.checkpoint import load_params
        self.state = TrainState.from_pytree(load_params(directory, self.state.as_pytree()))


def critic_dir(workdir: str, iteration: int) -> str:
    return os.path.join(workdir, "critic", str(int(iteration)))


def ppo_samples(critic: Critic, trajs: Sequence, cfg, *, reward_fn: Optional[RewardFn] = None) -> tuple[list, dict]:
    """PPO's iteration on the host: values of the current critic → GAE (step or token level) →
    (optionally batch-standardised) advantages on every step → `critic_updates` critic steps toward
    the GAE returns. Returns (the actor's TrainSamples, metrics)."""
    from gui_jax.train.online.selection import step_samples
    level = cfg.get("gae_level", "step")
    trajs = [t for t in trajs if t.steps]
    per_traj = [step_samples(t, 0.0) for t in trajs]
    keep = [i for i, s in enumerate(per_traj) if len(s) == len(trajs[i].steps)]  # every step has tokens
    trajs, per_traj = [trajs[i] for i in keep], [per_traj[i] for i in keep]
    if not trajs:
        return [], {}
    flat = [s for ss in per_traj for s in ss]
    vals = critic.token_values(flat)
    cuts = np.cumsum([0] + [len(ss) for ss in per_traj])
    rewards = [step_rewards(t, outcome_weight=cfg.get("outcome_reward", 1.0), reward_fn=reward_fn) for t in trajs]
    if level == "step":
        values = [np.array([vals[k][0] for k in range(cuts[i], cuts[i + 1])], np.float32) for i in range(len(trajs))]
        adv, ret = step_gae(rewards, values, gamma=cfg.gamma, lam=cfg.gae_lambda)
        flat_adv = [float(a) for aa in adv for a in aa]
        targets = [float(r) for rr in ret for r in rr]
        if cfg.get("normalize_advantages", True) and len(flat_adv) > 1:
            a = np.asarray(flat_adv)
            flat_adv = list((a - a.mean()) / (a.std() + 1e-6))
    else:
        tok_vals = [[vals[k][:flat[k].response_ids.size] for k in range(cuts[i], cuts[i + 1])]
                    for i in range(len(trajs))]
        adv, ret = token_level_gae(rewards, tok_vals, gamma=cfg.gamma, lam=cfg.gae_lambda)
        flat_adv = [a for aa in adv for a in aa]
        targets = [r for rr in ret for r in rr]
        if cfg.get("normalize_advantages", True):
            allv = np.concatenate(flat_adv)
            if allv.size > 1:
                flat_adv = [(a - allv.mean()) / (allv.std() + 1e-6) for a in flat_adv]
    metrics = {}
    for _ in range(max(int(cfg.get("critic_updates", 1)), 1)):
        metrics = critic.update(flat, targets, level=level)
    samples = []
    for s, a in zip(flat, flat_adv):
        samples.append(TrainSample(s.prompt_ids, s.response_ids, advantage=a, old_logprobs=s.old_logprobs,
                                   pixel_values=s.pixel_values, image_grid_thw=s.image_grid_thw))
    metrics["value_mean"] = float(np.mean([v[0] for v in vals]))
    metrics["return_mean"] = float(np.mean([np.mean(t) for t in targets]))
    return samples, metrics
