"""Config blocks of the online RL trainers (docs/algorithms.md §5–§8): `online` and `env`.

The `online` block holds the shared policy-loss / optimizer / checkpoint fields of `rl_block` (so
`RLRun` reads it directly) plus the rollout, curriculum and per-algorithm switches. Every knob a
paper ablates is a field: `spa`, `adapr`, `prune_negatives`, `fcf`, the curriculum, the GAE level.
`online.algorithm` is any name registered in `gui_jax.rl.algorithms` (built-ins: `online/builtin_algorithms.py`);
the algorithm's own defaults and checks come from its `defaults` / `validate` hooks.
"""
from __future__ import annotations

import ml_collections

from gui_jax.core.config_schema import Block
from gui_jax.core.config_schema import Field as F
from gui_jax.core.config_schema import boolean, choice, int_tuple, integer, number, strings, text
from gui_jax.train.config_blocks import RL, build
from gui_jax.train.online.builtin_algorithms import algorithm_names, get_algorithm

GAE_LEVELS = ("step", "token")
REWARDS = ("rule", "rm")
STEP_REWARDS = ("none", "prm")
CRITIC_INITS = ("", "rm")
ROLLOUT_MODES = ("sync", "async")

# Fields of rl_block the online trainers use (loss, optimizer, checkpoints): the same declarations.
_SHARED = ("seed", "iterations", "clip_low", "clip_high", "dual_clip", "kl_coef", "kl_kind", "aggregation",
           "learning_rate", "warmup_steps", "weight_decay", "max_grad_norm", "micro_batch_size",
           "num_mini_batches", "recompute_old_logprobs", "checkpoint_every", "checkpoints_kept",
           "stop_after_steps")

ONLINE = Block("online", [
    *RL.select(_SHARED),
    F("algorithm", "grpo", "online algorithm (gui_jax.rl.algorithms registry): grpo | adagrpo | ppo | ...",
      choice(algorithm_names)),
    # --- rollouts (AWG §3.3 / MobileRL): N rollouts of each of `episodes_per_iteration` tasks
    F("episodes_per_iteration", 8, "tasks per iteration", integer(1)),
    F("num_rollouts", 8, "N: trajectories per task = one GRPO group", integer(1)),
    F("max_steps", 15, "agent steps per episode", integer(1)),
    F("temperature", 1.0, "sampling temperature", number(0.0)),
    F("rollout_mode", "sync", "sync (lock-step, deterministic) | async (first-come-first-serve)",
      choice(ROLLOUT_MODES)),
    F("batch_cap", 64, "most prompts per sampler call", integer(1)),
    F("max_wait_s", 0.005, "sampler batching: longest wait to fill a batch (seconds)", number(0.0)),
    F("max_staleness", 1, "async: policy updates a trained group's first step may lag (None = unbounded)",
      integer(0, optional=True)),
    F("policy_timeout_s", 3600.0, "bound on one policy answer in seconds (async: includes waiting out an update)",
      number(0.0, lo_open=True)),
    F("max_episode_retries", 2, "re-runs on another env after an env fault, then env_failure", integer(0)),
    F("skip_zero_advantage", True, "steps with A = 0 carry no gradient: not trained", boolean()),
    # --- curriculum (AWG): easy → easy+medium → all
    F("curriculum", True, "difficulty curriculum: easy → easy+medium → all", boolean()),
    F("curriculum_switch_iterations", (50, 100), "iterations at which medium, then hard tasks join", int_tuple(0)),
    F("curriculum_success_threshold", None, "switch earlier once the training success rate reaches this "
      "(None = at the iterations only)", number(0.0, 1.0, optional=True), nullable=float),
    # --- AdaGRPO (MobileRL, docs/algorithms.md §7); each a switch (only read when algorithm=adagrpo)
    F("spa", True, "adagrpo: SPA (shortest-path reward adjustment) advantages; False = GRPO's", boolean()),
    F("spa_alpha", 1.0, "SPA: α in r̃ = 1 − α·(T − T_min)/T for a success of T steps", number(0.0)),
    F("adapr", True, "adagrpo: AdaPR (adaptive positive replay) buffer", boolean()),
    F("adapr_capacity", 256, "AdaPR: buffer size (trajectories)", integer(0)),
    F("adapr_tau", 1.0, "AdaPR: τ_adv, least advantage of a trajectory put in the buffer", number()),
    F("adapr_fraction", 0.25, "AdaPR: λ, at most this fraction of the update batch from the buffer",
      number(0.0, 1.0)),
    F("prune_negatives", True, "adagrpo: drop surplus negatives (lowest advantages first)", boolean()),
    F("max_neg_per_pos", 2.0, "pruning: most negatives kept per positive", number(0.0)),
    F("fcf", True, "FCF failure curriculum: tasks that keep failing cool down, then leave (also with grpo)",
      boolean()),
    F("fcf_fail_epochs", 2, "FCF: epochs in a row with every rollout at 0 before a cooldown", integer(1)),
    F("fcf_cooldown_epochs", 3, "FCF: cooldown length (epochs)", integer(0)),
    F("fcf_decay", 0.5, "FCF: sampling weight decay^k in a cooldown (k = failing epochs in a row)",
      number(0.0, 1.0)),
    F("fcf_remove_after", 6, "FCF: a task leaves the pool at k ≥ this", integer(1)),
    # --- PPO (docs/algorithms.md §8)
    F("gamma", 1.0, "ppo: γ, GAE discount", number(0.0, 1.0)),
    F("gae_lambda", 0.95, "ppo: λ of GAE", number(0.0, 1.0)),
    F("gae_level", "step", "ppo: GAE over agent steps (step) | response tokens (token)", choice(GAE_LEVELS)),
    F("critic_learning_rate", 1e-5, "ppo: critic learning rate", number(0.0, lo_open=True)),
    F("critic_warmup_steps", 0, "ppo: critic linear warm-up steps", integer(0)),
    F("critic_max_grad_norm", 1.0, "ppo: critic gradient-norm clip", number(0.0, lo_open=True)),
    F("critic_updates", 1, "ppo: critic optimizer steps per iteration", integer(0)),
    F("normalize_advantages", True, "ppo: batch-standardise the GAE advantages", boolean()),
    F("outcome_reward", 1.0, "ppo: weight of the terminal success reward (0: reward_fn only)", number(finite=True)),
    # --- reward models (docs/algorithms.md §9); the RM comes from `rm_checkpoint_dir`
    F("reward", "rule", "task success: rule (the env's check) | rm (P(+) of terminate(success))", choice(REWARDS)),
    F("rm_checkpoint_dir", "", "the reward_model job's rm/checkpoints (Orbax stage folder)", text()),
    F("rm_threshold", 0.5, "reward = rm: success iff P(+) >= this", number(0.0, 1.0)),
    F("step_reward", "none", "ppo: none | prm (dense r_t from the RM's step score, GUI-Shepherd)",
      choice(STEP_REWARDS)),
    F("prm_weight", 1.0, "w_p: r_t += w_p·P(+ | step t) (step_reward = prm)", number(finite=True)),
    F("format_weight", 0.0, "w_f: r_t += w_f·[the response parsed] (ppo)", number(finite=True)),
    F("critic_init", "", "ppo: '' (the policy's backbone) | rm (the RM's backbone + label head)",
      choice(CRITIC_INITS)),
])

# Where episodes run (gui_jax/envs/factory.py builds each): the one backend table of every job that runs episodes
ENV_BACKENDS = ("phonesim", "remote", "miniwob", "android", "androidworld")

ENV = Block("env", [
    F("backend", "phonesim", f"where episodes run: {' | '.join(ENV_BACKENDS)} (remote: gui_jax env servers; "
      "android: uiautomator2 devices; androidworld: AndroidWorld env servers)", choice(ENV_BACKENDS)),
    F("server_urls", (), "remote / androidworld: server URLs, round robin over the env slots; "
      "'dns://name:port' = every address the name resolves to (re-resolved on failover)", strings()),
    F("serials", (), "android: adb serials (or host:port), one device per env slot, e.g. ('emulator-5554',)",
      strings()),
    F("tasks", (), "tasks of a backend with its own list: miniwob pages, androidworld task types (() = the "
      "server's list), android goals ('App|goal' launches App first); phonesim/remote: templates (() = the split)",
      strings()),
    F("seeds", (0,), "miniwob / androidworld / android: instance seeds (androidworld: task_idx) of online_rl's "
      "training tasks; env_eval, evaluate, verifier_eval: of the evaluated tasks", int_tuple(0)),
    F("eval_seeds", (1,), "miniwob / androidworld / android: instance seeds of online_rl's and self_improve's "
      "held-out tasks", int_tuple(0)),
    F("connect_timeout_s", 10.0, "bound on reaching a device (uiautomator2 connect) or an env server (TCP connect)",
      number(0.0, lo_open=True)),
    F("settle_s", 0.5, "android: seconds to let the screen settle after an action", number(0.0)),
    F("token", "", "bearer token (or read from the env var named by token_env)", text()),
    F("token_env", "GUI_JAX_ENV_TOKEN", "env var holding the bearer token", text()),
    F("n_envs", 8, "active envs", integer(1)),
    F("n_standby", 0, "warm spare envs (GUI-Shepherd: 8 + 8)", integer(0)),
    F("call_timeout_s", 60.0, "timeout of one env call (seconds)", number(0.0, lo_open=True)),
    F("reset_timeout_s", 120.0, "timeout of an env reset (seconds)", number(0.0, lo_open=True)),
    F("lease_timeout_s", 600.0, "a leased env is reclaimed after this long (seconds)", number(0.0, lo_open=True)),
    F("health_interval_s", 30.0, "seconds between env health checks (0 = off)", number(0.0)),
    F("resolution", (540, 1200), "PhoneSim screen (width, height) in pixels", int_tuple(1, length=2)),
    F("sim_max_steps", 30, "PhoneSim episode step limit", integer(1)),
])
ENV_BACKEND_NEEDS = {"remote": "server_urls", "androidworld": "server_urls", "android": "serials"}


def env_problem(env) -> "tuple[str, str] | None":
    """(field, problem) for an env block whose backend lacks what it needs or has what it cannot use;
    None when consistent (config_check reports it as `config.env.<field> = <value>: <problem>`)."""
    backend = env.get("backend", "phonesim")
    need = ENV_BACKEND_NEEDS.get(backend)
    if need is not None and not env.get(need):
        example = {"server_urls": "('http://127.0.0.1:8765',) or ('dns://env-fleet.default.svc:8765',)",
                   "serials": "('emulator-5554',)"}[need]
        return need, f"env.backend = {backend!r} needs at least one, e.g. {example}"
    if backend in ("phonesim", "miniwob", "android") and env.get("server_urls"):
        return "server_urls", (f"env.backend = {backend!r} runs no env server; set env.backend='remote' (gui_jax "
                               "env servers) or 'androidworld' (AndroidWorld servers), or server_urls=()")
    for url in env.get("server_urls", ()) or ():
        scheme, sep, rest = url.partition("://")
        host, _, port = rest.rstrip("/").rpartition(":")
        if scheme not in ("http", "https", "dns") or not sep or not rest:
            return "server_urls", f"{url!r} is not an http://, https:// or dns://name:port URL"
        if scheme == "dns" and (not host or not port.isdigit()):
            return "server_urls", f"{url!r}: a dns:// URL names a host and a port, e.g. dns://env-fleet.default.svc:8765"
    return None


def online_block(algorithm: str = "grpo") -> ml_collections.ConfigDict:
    """The `online` block of a registered algorithm: declared defaults, then the algorithm's `defaults` hook."""
    algo = get_algorithm(algorithm)  # unknown name: one-line error listing the registered ones
    c = build(ONLINE, algorithm=algorithm)
    if algo.defaults is not None:
        algo.defaults(c)
    return c


def env_block() -> ml_collections.ConfigDict:
    """Where episodes run (`backend`): in-process PhoneSim (default), gui_jax env servers, MiniWob++ pages,
    uiautomator2 devices or AndroidWorld env servers, with the pool's sizes and timeouts."""
    return build(ENV)


def _check_declared(cfg, names) -> None:
    """ValueError `online.<name> = <value>: <problem>` for the first of `names` whose declared check fails
    (fields the block lacks are skipped: their declared defaults are valid)."""
    for name in names:
        if name in cfg:
            problem = ONLINE[name].check(cfg[name])
            if problem:
                raise ValueError(f"online.{name} = {cfg[name]!r}: {problem}")


def validate_online(cfg) -> None:
    """Clear errors for the fields the trainer dispatches on, then the algorithm's own `validate` hook."""
    algo = get_algorithm(cfg.algorithm)
    _check_declared(cfg, ("gae_level", "rollout_mode", "num_rollouts", "episodes_per_iteration", "max_staleness"))
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
    _check_declared(cfg, ("reward", "step_reward", "critic_init", "rm_threshold", "prm_weight", "format_weight"))
    if not get_algorithm(cfg.algorithm).dense_rewards:
        dense = [n for n in algorithm_names() if get_algorithm(n).dense_rewards]
        kind = "/".join(n.upper() for n in dense) or "per-step"
        use = "".join(f"online.algorithm={n!r} or " for n in dense)
        for name, off in (("step_reward", "none"), ("critic_init", ""), ("format_weight", 0.0)):
            if cfg.get(name, off) != off:
                raise ValueError(f"online.{name} = {cfg.get(name)!r} is a {kind} reward setting but online.algorithm "
                                 f"= {cfg.algorithm!r}; set {use}online.{name}={off!r}")
