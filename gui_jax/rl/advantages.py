"""Advantage estimators (docs/algorithms.md §4, §6, §7 SPA, §8 GAE), registered by name (ADVANTAGE_ESTIMATORS),
and the online trainer's group estimators (GROUP_ADVANTAGES, one signature, named by `OnlineAlgorithm.advantage`).

All groupings are keyed by ids through segment ops (never by reshaping), so filtered or uneven groups
work. Ids may be any int32 values in any order. Every function here is jittable (float/static args
such as gamma, ddof, eps must be Python numbers; pass them with functools.partial or static_argnames).

Standard deviation: ddof=1 (unbiased, like torch.std used by verl's GRPO) is the default everywhere;
the papers leave it open. A group with a single member (or zero total weight) gets advantage 0
(docs/algorithms.md §4), not verl's "mean 0, std 1". Normalisation is (x − mean)/(std + eps), eps = 1e-6.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from gui_jax.core.registry import lookup, register

EPS = 1e-6


def dense_ids(ids: jax.Array) -> jax.Array:
    """Map arbitrary int ids [N] to dense ids in [0, N) (equal ids -> equal dense id); jittable."""
    _, inv = jnp.unique(ids, return_inverse=True, size=ids.shape[0])
    return inv.reshape(ids.shape).astype(jnp.int32)


def dense_pair_ids(a: jax.Array, b: jax.Array) -> jax.Array:
    """Dense ids [N] in [0, N) for the pairs (a_i, b_i); jittable."""
    pairs = jnp.stack([a.astype(jnp.int32), b.astype(jnp.int32)], axis=1)
    _, inv = jnp.unique(pairs, return_inverse=True, size=a.shape[0], axis=0)
    return inv.reshape(a.shape).astype(jnp.int32)


def group_standardize(x: jax.Array, group_ids: jax.Array, valid: Optional[jax.Array] = None,
                      weights: Optional[jax.Array] = None, *, ddof: int = 1, eps: float = EPS) -> jax.Array:
    """(x − group mean)/(group std + eps) [N]; x, group_ids, valid, weights all [N].

    Entries with valid = 0 neither count nor receive a value (0). weights are frequency weights
    (an entry with weight T counts as T copies): mean = Σwx/Σw, var = Σw(x−m)²/(Σw − ddof).
    Groups whose total weight is ≤ 1 (size-1 groups) give 0.
    """
    x = x.astype(jnp.float32)
    n = x.shape[0]
    v = jnp.ones((n,), jnp.float32) if valid is None else valid.astype(jnp.float32)
    w = v if weights is None else v * weights.astype(jnp.float32)
    gid = dense_ids(group_ids)
    wsum = jax.ops.segment_sum(w, gid, num_segments=n)
    mean = jax.ops.segment_sum(w * x, gid, num_segments=n) / jnp.maximum(wsum, 1e-12)
    dev = x - mean[gid]
    var = jax.ops.segment_sum(w * dev * dev, gid, num_segments=n) / jnp.maximum(wsum - ddof, 1e-12)
    std = jnp.sqrt(jnp.maximum(var, 0.0))
    adv = dev / (std[gid] + eps)
    return jnp.where((wsum[gid] > 1.0) & (v > 0), adv, 0.0)


def group_std(x: jax.Array, group_ids: jax.Array, *, ddof: int = 1) -> tuple[jax.Array, jax.Array]:
    """Per-entry std of its group's x and the group size, both [N] (std 0 for size-1 groups)."""
    x = x.astype(jnp.float32)
    n = x.shape[0]
    gid = dense_ids(group_ids)
    cnt = jax.ops.segment_sum(jnp.ones((n,), jnp.float32), gid, num_segments=n)
    mean = jax.ops.segment_sum(x, gid, num_segments=n) / jnp.maximum(cnt, 1.0)
    dev = x - mean[gid]
    var = jax.ops.segment_sum(dev * dev, gid, num_segments=n) / jnp.maximum(cnt - ddof, 1e-12)
    std = jnp.where(cnt > 1, jnp.sqrt(jnp.maximum(var, 0.0)), 0.0)
    return std[gid], cnt[gid]


# --------------------------------------------------------------------------- GRPO (§6)
def grpo_trajectory(rewards: jax.Array, group_ids: jax.Array, *, ddof: int = 1, eps: float = EPS) -> jax.Array:
    """Trajectory GRPO advantage A [N] = (R − group mean)/(group std + eps); rewards, group_ids [N]."""
    return group_standardize(rewards, group_ids, ddof=ddof, eps=eps)


# --------------------------------------------------------------------------- UI-S1 (§4)
def discounted_returns(rewards: jax.Array, traj_ids: jax.Array, step_index: jax.Array,
                       mismatch: Optional[jax.Array] = None, *, gamma: float = 0.5,
                       cut_at_mismatch: bool = True) -> jax.Array:
    """R_t = r_t + γ·R_{t+1} within each trajectory, computed backwards; all inputs [T_total].

    Steps may come in any order; they are sorted by (traj_id, step_index). With cut_at_mismatch, a
    mismatched step gets R_t = r_t and the step before it gets no return from it either (docs/algorithms.md §4).
    """
    r = rewards.astype(jnp.float32)
    mm = jnp.zeros(r.shape, bool) if mismatch is None else mismatch.astype(bool)
    order = jnp.lexsort((step_index, traj_ids))  # primary key: trajectory, then step
    r_s, traj_s, mm_s = r[order], traj_ids[order], mm[order]
    same_next = jnp.concatenate([traj_s[1:] == traj_s[:-1], jnp.zeros((1,), bool)])
    link = same_next
    if cut_at_mismatch:
        mm_next = jnp.concatenate([mm_s[1:], jnp.zeros((1,), bool)])
        link = link & ~mm_s & ~mm_next
    coef = jnp.where(link, gamma, 0.0).astype(jnp.float32)
    # Padded to a power-of-two length with zeros after the last step (its coefficient is 0, so they feed it
    # nothing): called eagerly, the scan compiles once per length bucket, not once per batch size.
    n = r.shape[0]
    pad = max(64, 1 << max(n - 1, 0).bit_length()) - n
    _, ret_s = jax.lax.scan(_discount_step, jnp.float32(0.0),
                            (jnp.pad(r_s, (0, pad)), jnp.pad(coef, (0, pad))), reverse=True)
    return jnp.zeros_like(r).at[order].set(ret_s[:n])


def _discount_step(carry, xs):
    # module level: eager `lax.scan` caches its program by this function's identity (a closure defined per
    # call compiled anew on every call, ~2 MB of native memory each: the RL stage's steady growth)
    rt, ct = xs
    ret = rt + ct * carry
    return ret, ret


EPISODE_LEVELS = ("paper", "code")


def ui_s1_semi_online(rewards: jax.Array, traj_ids: jax.Array, step_index: jax.Array, group_ids: jax.Array,
                      mismatch: Optional[jax.Array] = None, *, gamma: float = 0.5, omega: float = 1.0,
                      cut_at_mismatch: bool = True, episode_level: str = "paper", ddof: int = 1,
                      eps: float = EPS) -> dict[str, jax.Array]:
    """UI-S1 dual-level advantage per step (docs/algorithms.md §4); all inputs are per step [T_total].

    group_ids: the task (group of N rollouts) of each step's trajectory.
    Step level A^S: discounted return R_t standardised over the task's rollouts at the same step
    index (UI-S1 Eq. 10). Episode level A^E has two definitions (`episode_level`):
      paper: Eq. 11 — R(τ_i) = Σ_t r_t per trajectory, standardised over the task's N trajectories
             (one value per trajectory: a long trajectory does not weigh more), broadcast to its steps.
      code:  the published implementation — each step's own reward r_t standardised over every step
             of every rollout of the task (per-step rewards pooled across the N rollouts).
    Returns {'advantages': A^E + ω·A^S, 'returns': R_t, 'step_adv': A^S, 'episode_adv': A^E}, each [T_total]
    (numpy arrays when called outside a jit).
    """
    if episode_level not in EPISODE_LEVELS:
        raise ValueError(f"unknown episode_level {episode_level!r}; known: {EPISODE_LEVELS}")
    # Each rollout batch has its own step count: called eagerly, every new count traced and compiled every op
    # again (~1-5 s a call on 2 cores). Padded on the host to a power-of-two bucket with steps of their own
    # trajectory and task (they change no real step's value) and jitted, it compiles once per bucket.
    args = (rewards, traj_ids, step_index, group_ids, mismatch)
    xp = jnp if any(isinstance(a, jax.core.Tracer) for a in args) else np   # inside a caller's jit: traced
    r = xp.asarray(rewards).astype(xp.float32)
    n = r.shape[0]
    pad = max(64, 1 << max(n - 1, 0).bit_length()) - n
    mm = xp.zeros((n,), bool) if mismatch is None else xp.asarray(mismatch).astype(bool)

    def fresh_ids(ids):
        ids = xp.asarray(ids).astype(xp.int32)
        start = ids.max() + 1 if n else 0
        return xp.concatenate([ids, start + xp.arange(pad, dtype=xp.int32)])
    out = _ui_s1_semi_online_padded(xp.pad(r, (0, pad)), fresh_ids(traj_ids),
                                    xp.pad(xp.asarray(step_index).astype(xp.int32), (0, pad)),
                                    fresh_ids(group_ids), xp.pad(mm, (0, pad)), gamma=gamma, omega=omega,
                                    cut_at_mismatch=cut_at_mismatch, episode_level=episode_level, ddof=ddof, eps=eps)
    # eagerly, numpy arrays (a device slice per new count would compile again)
    return {name: (v[:n] if xp is jnp else np.asarray(v)[:n]) for name, v in out.items()}


@functools.partial(jax.jit, static_argnames=("gamma", "omega", "cut_at_mismatch", "episode_level", "ddof", "eps"))
def _ui_s1_semi_online_padded(rewards, traj_ids, step_index, group_ids, mismatch, *, gamma, omega,
                              cut_at_mismatch, episode_level, ddof, eps):
    r = rewards.astype(jnp.float32)
    n = r.shape[0]
    ret = discounted_returns(r, traj_ids, step_index, mismatch, gamma=gamma, cut_at_mismatch=cut_at_mismatch)
    step_groups = dense_pair_ids(group_ids, step_index)
    step_adv = group_standardize(ret, step_groups, ddof=ddof, eps=eps)
    if episode_level == "code":
        ep_adv = group_standardize(r, group_ids, ddof=ddof, eps=eps)
    else:
        # One slot per trajectory (dense traj id); slots beyond the number of trajectories are invalid.
        tid = dense_ids(traj_ids)
        slot_used = jax.ops.segment_sum(jnp.ones((n,), jnp.float32), tid, num_segments=n) > 0
        traj_return = jax.ops.segment_sum(r, tid, num_segments=n)
        traj_group = jax.ops.segment_max(group_ids.astype(jnp.int32), tid, num_segments=n)
        traj_group = jnp.where(slot_used, traj_group, jnp.iinfo(jnp.int32).min)
        ep_adv_traj = group_standardize(traj_return, traj_group, valid=slot_used, ddof=ddof, eps=eps)
        ep_adv = ep_adv_traj[tid]
    return {"advantages": ep_adv + omega * step_adv, "returns": ret, "step_adv": step_adv,
            "episode_adv": ep_adv}


def ui_s1_semi_online_dense(rewards: jax.Array, mask: jax.Array, mismatch: Optional[jax.Array] = None,
                            **kwargs) -> dict[str, jax.Array]:
    """Padded variant of `ui_s1_semi_online`: rewards, mask, mismatch [G tasks, N rollouts, T steps]
    (mask = valid-step prefix). Returns the same dict with every array [G, N, T] (0 where mask = 0).
    Padding steps are given their own singleton task and trajectory ids, so they affect nothing."""
    g, n, t = rewards.shape
    m = mask.astype(bool).reshape(-1)
    gi, ni, ti = jnp.meshgrid(jnp.arange(g), jnp.arange(n), jnp.arange(t), indexing="ij")
    flat = jnp.arange(g * n * t, dtype=jnp.int32)
    traj = jnp.where(m, (gi * n + ni).reshape(-1), g * n + flat)
    task = jnp.where(m, gi.reshape(-1), g + flat)
    mm = None if mismatch is None else mismatch.reshape(-1).astype(bool)
    out = ui_s1_semi_online(jnp.where(m, rewards.reshape(-1), 0.0), traj, ti.reshape(-1).astype(jnp.int32),
                            task, mm, **kwargs)
    return {k: jnp.where(m, v, 0.0).reshape(g, n, t) for k, v in out.items()}


def dynamic_sampling_keep(step0_returns: jax.Array, group_ids: jax.Array, *, eta: float = 0.3,
                          ddof: int = 0) -> jax.Array:
    """Keep mask [N] (per rollout, equal within a group): group std of step-0 return > η, or the group
    has one rollout (docs/algorithms.md §4, DAPO-style). step0_returns, group_ids [N].

    The std is the population std (ddof 0, numpy's default, which the published filter uses):
    returns (0.5, 1.0) have std 0.25 < η = 0.3 (dropped), where the sample std 0.354 would keep them."""
    std, cnt = group_std(step0_returns, group_ids, ddof=ddof)
    return (std > eta) | (cnt <= 1)


# --------------------------------------------------------------------------- SPA (§7)
def spa_rewards(success: jax.Array, lengths: jax.Array, group_ids: jax.Array, *, alpha: float = 1.0) -> jax.Array:
    """Shortest-path adjusted reward r̃ [N]: success → 1 − α(T_i − T_min)/T_i, failure → 0.

    success [N] {0,1}, lengths [N] int ≥ 1, group_ids [N]; T_min = shortest successful length in the group.
    """
    n = success.shape[0]
    ok = success.astype(bool)
    t = lengths.astype(jnp.float32)
    gid = dense_ids(group_ids)
    big = jnp.float32(3.0e38)
    t_min = jax.ops.segment_min(jnp.where(ok, t, big), gid, num_segments=n)[gid]
    return jnp.where(ok, 1.0 - alpha * (t - t_min) / jnp.maximum(t, 1.0), 0.0)


def spa(success: jax.Array, lengths: jax.Array, group_ids: jax.Array, *, alpha: float = 1.0,
        ddof: int = 1, eps: float = EPS) -> dict[str, jax.Array]:
    """SPA trajectory advantage [N]: r̃_i broadcast to its T_i steps, standardised over all steps of
    the group (step-weighted mean/std, ddof counted in steps). Returns {'advantages', 'rewards'}."""
    r = spa_rewards(success, lengths, group_ids, alpha=alpha)
    adv = group_standardize(r, group_ids, weights=lengths.astype(jnp.float32), ddof=ddof, eps=eps)
    return {"advantages": adv, "rewards": r}


# --------------------------------------------------------------------------- GAE (§8)
def gae(rewards: jax.Array, values: jax.Array, mask: jax.Array, *, gamma: float = 1.0,
        lam: float = 1.0) -> tuple[jax.Array, jax.Array]:
    """Step-level GAE. rewards [B, T]; values [B, T+1] (values[b, T_b] = bootstrap value after the
    last valid step, 0 if terminal) or [B, T] (terminal, bootstrap 0); mask [B, T] valid-step prefix.
    Returns (advantages [B, T], returns = A + V [B, T]), both 0 where mask = 0.
    """
    b, t = rewards.shape
    if values.shape == (b, t):
        values = jnp.concatenate([values, jnp.zeros((b, 1), values.dtype)], axis=1)
    if values.shape != (b, t + 1):
        raise ValueError(f"gae: values must be [B, T] or [B, T+1] = {(b, t + 1)}, got {values.shape}")
    m = mask.astype(jnp.float32)
    v = values.astype(jnp.float32)
    r = rewards.astype(jnp.float32)
    next_valid = jnp.concatenate([m[:, 1:], jnp.zeros((b, 1), jnp.float32)], axis=1)
    delta = r + gamma * v[:, 1:] - v[:, :-1]

    def body(next_adv, xs):
        d, nv, mt = xs
        a = (d + gamma * lam * nv * next_adv) * mt
        return a, a

    _, adv_t = jax.lax.scan(body, jnp.zeros((b,), jnp.float32), (delta.T, next_valid.T, m.T), reverse=True)
    adv = adv_t.T
    return adv, (adv + v[:, :-1]) * m


def token_gae(token_rewards: jax.Array, token_values: jax.Array, response_mask: jax.Array, *,
              gamma: float = 1.0, lam: float = 1.0) -> tuple[jax.Array, jax.Array]:
    """Token-level GAE over the response tokens of multi-turn rows [B, L]; tokens with mask 0 (prompt,
    observation, padding) are skipped (the recursion jumps over them). Bootstrap after the last
    response token is 0. Put each step's reward on its last response token (`rewards_on_last_token`).
    Returns (advantages, returns), 0 off the mask.
    """
    b, _ = token_rewards.shape
    m = response_mask.astype(jnp.float32)

    def body(carry, xs):
        next_v, next_a = carry
        r, v, mt = xs
        a = r + gamma * next_v - v + gamma * lam * next_a
        on = mt > 0
        carry = (jnp.where(on, v, next_v), jnp.where(on, a, next_a))
        return carry, jnp.where(on, a, 0.0)

    init = (jnp.zeros((b,), jnp.float32), jnp.zeros((b,), jnp.float32))
    xs = (token_rewards.astype(jnp.float32).T, token_values.astype(jnp.float32).T, m.T)
    _, adv_t = jax.lax.scan(body, init, xs, reverse=True)
    adv = adv_t.T
    return adv, (adv + token_values.astype(jnp.float32)) * m


def rewards_on_last_token(step_rewards: jax.Array, step_ids: jax.Array, mask: jax.Array) -> jax.Array:
    """Token rewards [B, L]: step_rewards[b, s] [B, S] placed on the last masked token of step s in row b.
    step_ids [B, L] (−1 for none), mask [B, L]."""
    b, l = step_ids.shape
    valid = (mask > 0) & (step_ids >= 0)
    pos = jnp.broadcast_to(jnp.arange(l), (b, l))
    # last token of a step: no later masked token of the same step in the row.
    seg = jnp.arange(b)[:, None] * l + jnp.clip(step_ids, 0, l - 1)
    last_pos = jax.ops.segment_max(jnp.where(valid, pos, -1).reshape(-1), seg.reshape(-1), num_segments=b * l)
    is_last = valid & (pos == last_pos[seg])
    s = step_rewards.shape[1]
    vals = jnp.take_along_axis(step_rewards.astype(jnp.float32), jnp.clip(step_ids, 0, s - 1), axis=1)
    return jnp.where(is_last, vals, 0.0)


def broadcast_to_tokens(step_values: jax.Array, step_ids: jax.Array, mask: jax.Array) -> jax.Array:
    """Token values [B, L] = step_values[b, step_ids[b, l]] ([B, S]) on masked tokens with a step, else 0."""
    s = step_values.shape[1]
    vals = jnp.take_along_axis(step_values.astype(jnp.float32), jnp.clip(step_ids, 0, s - 1), axis=1)
    return jnp.where((mask > 0) & (step_ids >= 0), vals, 0.0)


# --------------------------------------------------------------------------- registry
ADVANTAGE_ESTIMATORS: dict[str, Callable] = {
    "grpo_trajectory": grpo_trajectory,
    "ui_s1_semi_online": ui_s1_semi_online,
    "ui_s1_semi_online_dense": ui_s1_semi_online_dense,
    "spa": spa,
    "gae": gae,
    "token_gae": token_gae,
}


def get_estimator(name: str) -> Callable:
    """The advantage estimator registered as `name` (see ADVANTAGE_ESTIMATORS)."""
    return lookup(ADVANTAGE_ESTIMATORS, name, "advantage estimator", KeyError)


def register_estimator(name: str, fn: Callable) -> Callable:
    """Register `fn` under `name` (overwriting is an error)."""
    return register(ADVANTAGE_ESTIMATORS, name, fn, "advantage estimator", KeyError)


# --------------------------------------------------------------------------- online group advantages
# The online trainer's estimators (an `OnlineAlgorithm.advantage` names one), all with one signature:
#     fn(rewards [N] float32, group_ids [N] int32, *, lengths [N] int32, cfg) -> advantages [N]
# over the N completed trajectories of an iteration (a group = the rollouts of one task; cfg = the `online`
# block). The built-ins look their math up in ADVANTAGE_ESTIMATORS, so both registries name the same code.
def _grpo_group(rewards, group_ids, *, lengths, cfg):
    """Trajectory GRPO [N] (§6): the outcome standardised within each group."""
    return get_estimator("grpo_trajectory")(rewards, group_ids)


def _spa_group(rewards, group_ids, *, lengths, cfg):
    """SPA [N] (§7): the 0/1 outcome as success, step-weighted by `lengths`, α = online.spa_alpha."""
    return get_estimator("spa")(rewards, lengths, group_ids, alpha=cfg.get("spa_alpha", 1.0))["advantages"]


GROUP_ADVANTAGES: dict[str, Callable] = {"grpo": _grpo_group, "spa": _spa_group}


def get_group_advantage(name: str) -> Callable:
    """The online group-advantage estimator registered as `name` (see GROUP_ADVANTAGES)."""
    return lookup(GROUP_ADVANTAGES, name, "group advantage estimator")


def register_group_advantage(name: str, fn: Callable) -> Callable:
    """Register an online estimator fn(rewards, group_ids, *, lengths, cfg) -> [N] (overwriting is an error)."""
    return register(GROUP_ADVANTAGES, name, fn, "group advantage estimator")


def index_ids(keys) -> np.ndarray:
    """Host helper: int32 ids [N] for arbitrary hashable keys (task names, (task, seed) tuples), equal
    keys → equal ids, numbered by first appearance. Estimator ids must fit in int32 (x64 is off)."""
    table: dict = {}
    return np.array([table.setdefault(k, len(table)) for k in keys], dtype=np.int32)


def as_numpy(tree) -> dict:
    """Host copy of an estimator's output dict (numpy float32), for the batch builder."""
    return jax.tree_util.tree_map(np.asarray, tree)
