"""Config blocks of the online RL trainers (docs/algorithms.md §5–§8): `online` and `env`.

The `online` block holds the shared policy-loss / optimizer / checkpoint fields of `rl_block` (so
`RLRun` reads it directly) plus the rollout, curriculum and per-algorithm switches. Every knob a
paper ablates is a field: `spa`, `adapr`, `prune_negatives`, `fcf`, the curriculum, the GAE level.
`online.algorithm` is any name registered in `gui_jax.rl.algorithms` (built-ins: `online_algorithms`);
the algorithm's own defaults and checks come from its `defaults` / `validate` hooks.
"""
from __future__ import annotations

import math

import ml_collections

from gui_jax.train.config_blocks import rl_block
from gui_jax.train.online_algorithms import algorithm_names, get_algorithm

GAE_LEVELS = ("step", "token")
REWARDS = ("rule", "rm")
STEP_REWARDS = ("none", "prm")
CRITIC_INITS = ("", "rm")

# Fields of rl_block the online trainers use (loss, optimizer, checkpoints).
_SHARED = ("seed", "iterations", "clip_low", "clip_high", "dual_clip", "kl_coef", "kl_kind", "aggregation",
           "learning_rate", "warmup_steps", "weight_decay", "max_grad_norm", "micro_batch_size",
           "num_mini_batches", "recompute_old_logprobs", "checkpoint_every", "stop_after_steps")


def online_block(algorithm: str = "grpo") -> ml_collections.ConfigDict:
    """The `online` block of a registered algorithm: shared fields, then the algorithm's `defaults` hook."""
    algo = get_algorithm(algorithm)  # unknown name: one-line error listing the registered ones
    base = rl_block()
    c = ml_collections.ConfigDict({k: base[k] for k in _SHARED})
    # Keep FieldReference placeholders (None-able fields) as they are in rl_block.
    c.stop_after_steps = ml_collections.config_dict.placeholder(int)
    c.dual_clip = ml_collections.FieldReference(3.0, field_type=float)
    c.algorithm = algorithm
    c.update({
        # --- rollouts (AWG §3.3 / MobileRL): N rollouts of each of `episodes_per_iteration` tasks
        "episodes_per_iteration": 8,       # tasks per iteration (RLRun's name for the batch of items)
        "num_rollouts": 8,                 # N trajectories per task = one GRPO group
        "max_steps": 15,                   # agent steps per episode
        "temperature": 1.0,
        "rollout_mode": "sync",            # sync (lock-step, deterministic) | async (first-come-first-serve)
        "batch_cap": 64,                   # most prompts per sampler call
        "max_wait_s": 0.005,
        "max_staleness": 1,                # async: policy updates a trained group's first step may lag
        "policy_timeout_s": 3600.0,        # bound on one policy answer (async: includes waiting out an update)
        "max_episode_retries": 2,          # re-runs on another env after an env fault, then env_failure
        "skip_zero_advantage": True,       # steps with A = 0 carry no gradient: not trained
        # --- curriculum (AWG): easy → easy+medium → all
        "curriculum": True,
        "curriculum_switch_iterations": (50, 100),
        "curriculum_success_threshold": ml_collections.FieldReference(None, field_type=float),
        # --- AdaGRPO (MobileRL, docs/algorithms.md §7); each a switch (only read when algorithm=adagrpo)
        "spa": True,
        "spa_alpha": 1.0,
        "adapr": True,
        "adapr_capacity": 256,
        "adapr_tau": 1.0,
        "adapr_fraction": 0.25,            # λ: at most this fraction of the update batch from the buffer
        "prune_negatives": True,
        "max_neg_per_pos": 2.0,
        "fcf": True,                       # failure curriculum (also usable with grpo)
        "fcf_fail_epochs": 2,
        "fcf_cooldown_epochs": 3,
        "fcf_decay": 0.5,
        "fcf_remove_after": 6,
        # --- PPO (docs/algorithms.md §8)
        "gamma": 1.0,
        "gae_lambda": 0.95,
        "gae_level": "step",               # step | token
        "critic_learning_rate": 1e-5,
        "critic_warmup_steps": 0,
        "critic_max_grad_norm": 1.0,
        "critic_updates": 1,               # critic optimizer steps per iteration
        "normalize_advantages": True,      # batch-standardise the GAE advantages
        "outcome_reward": 1.0,             # weight of the terminal success reward (0: reward_fn only)
        # --- reward models (docs/algorithms.md §9); the RM comes from `rm_checkpoint_dir`
        "reward": "rule",                  # task success: rule (the env's check) | rm (P(+) of terminate(success))
        "rm_checkpoint_dir": "",           # the reward_model job's rm/checkpoints (Orbax stage folder)
        "rm_threshold": 0.5,               # reward = rm: success iff P(+) >= this
        "step_reward": "none",             # ppo: none | prm (dense r_t from the RM's step score, GUI-Shepherd)
        "prm_weight": 1.0,                 # w_p: r_t += w_p·P(+ | step t)        (step_reward = prm)
        "format_weight": 0.0,              # w_f: r_t += w_f·[the response parsed] (ppo)
        "critic_init": "",                 # ppo: "" (the policy's backbone) | rm (the RM's backbone + label head)
    })
    if algo.defaults is not None:
        algo.defaults(c)
    return c


def env_block() -> ml_collections.ConfigDict:
    """Where episodes run: in-process PhoneSim (default) or env servers (`server_urls` non-empty)."""
    return ml_collections.ConfigDict({
        "server_urls": (),                 # e.g. ("http://127.0.0.1:8000",): RemoteEnv sessions, round robin
        "token": "",                       # bearer token (or read from the env var named by token_env)
        "token_env": "GUI_JAX_ENV_TOKEN",
        "n_envs": 8,                       # active envs
        "n_standby": 0,                    # warm spares (GUI-Shepherd: 8 + 8)
        "call_timeout_s": 60.0,
        "reset_timeout_s": 120.0,
        "lease_timeout_s": 600.0,
        "health_interval_s": 30.0,
        "resolution": (540, 1200),
        "sim_max_steps": 30,
    })


def validate_online(cfg) -> None:
    """Clear errors for the fields the trainer dispatches on, then the algorithm's own `validate` hook."""
    algo = get_algorithm(cfg.algorithm)
    if cfg.get("gae_level", "step") not in GAE_LEVELS:
        raise ValueError(f"online.gae_level = {cfg.gae_level!r}; known: {GAE_LEVELS}")
    if cfg.rollout_mode not in ("sync", "async"):
        raise ValueError(f"online.rollout_mode = {cfg.rollout_mode!r}; known: ('sync', 'async')")
    if cfg.num_rollouts < 1 or cfg.episodes_per_iteration < 1:
        raise ValueError(f"online.num_rollouts ({cfg.num_rollouts}) and online.episodes_per_iteration "
                         f"({cfg.episodes_per_iteration}) must be >= 1")
    k = cfg.get("max_staleness")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 0):
        raise ValueError(f"online.max_staleness = {k!r}: expected an integer >= 0 or None (unbounded)")
    validate_reward_fields(cfg)
    if algo.validate is not None:
        algo.validate(cfg)


def needs_reward_model(cfg) -> bool:
    """Whether the online block asks for a trained reward model (task reward, dense reward or critic init)."""
    return (cfg.get("reward", "rule") == "rm" or cfg.get("step_reward", "none") == "prm"
            or cfg.get("critic_init", "") == "rm")


def validate_reward_fields(cfg) -> None:
    """The reward-model switches: known values, a threshold in [0, 1], per-step reward fields only with an
    algorithm that takes them (`dense_rewards`: ppo)."""
    for name, known in (("reward", REWARDS), ("step_reward", STEP_REWARDS), ("critic_init", CRITIC_INITS)):
        value = cfg.get(name, known[0])
        if value not in known:
            raise ValueError(f"online.{name} = {value!r}; known: {known}")
    t = cfg.get("rm_threshold", 0.5)
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= float(t) <= 1.0:
        raise ValueError(f"online.rm_threshold = {t!r}: expected a probability in [0, 1]")
    for name in ("prm_weight", "format_weight"):
        w = cfg.get(name, 0.0)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(float(w)):
            raise ValueError(f"online.{name} = {w!r}: expected a finite number")
    if not get_algorithm(cfg.algorithm).dense_rewards:
        dense = [n for n in algorithm_names() if get_algorithm(n).dense_rewards]
        kind = "/".join(n.upper() for n in dense) or "per-step"
        use = "".join(f"online.algorithm={n!r} or " for n in dense)
        for name, off in (("step_reward", "none"), ("critic_init", ""), ("format_weight", 0.0)):
            if cfg.get(name, off) != off:
                raise ValueError(f"online.{name} = {cfg.get(name)!r} is a {kind} reward setting but online.algorithm "
                                 f"= {cfg.algorithm!r}; set {use}online.{name}={off!r}")
