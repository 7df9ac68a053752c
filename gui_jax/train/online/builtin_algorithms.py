"""The built-in online algorithms (docs/algorithms.md §6–§8), registered in `gui_jax.rl.algorithms`.

- grpo: trajectory GRPO advantages (§6), PPO-clip + β·KL; FCF off by default.
- adagrpo: SPA or GRPO advantages (`online.spa`), AdaPR replay buffer (`online.adapr`), negative pruning
  (`online.prune_negatives`) in its selection hook (§7).
- ppo: a critic and GAE in its samples hook (§8), per-step rewards; no KL, curriculum or FCF by default.

Importing this module registers them; `online/config.py` imports it, so every trainer sees them. The hooks
import the trainer code they call when first called: config recipes import this module to read the
names and defaults without loading JAX.
"""
from __future__ import annotations

from gui_jax.rl.algorithms import OnlineAlgorithm, algorithm_names, get_algorithm, register_algorithm

__all__ = ["algorithm_names", "get_algorithm"]


# ------------------------------------------------------------------------------------------- GRPO
def _grpo_defaults(c) -> None:
    c.fcf = False


# ------------------------------------------------------------------------------------------- AdaGRPO
def _adagrpo_advantage(cfg) -> str:
    return "spa" if cfg.spa else "grpo"


def _adagrpo_replay(cfg):
    from gui_jax.rl.adagrpo import AdaPRBuffer
    return AdaPRBuffer(cfg.adapr_capacity, cfg.adapr_tau, cfg.adapr_fraction) if cfg.get("adapr") else None


def _adagrpo_select(run, trajs, cfg, rng) -> tuple[list, dict]:
    """Negative pruning + AdaPR replay on trajectories whose advantages are set (`select_adagrpo`)."""
    from gui_jax.train.online.selection import select_adagrpo
    sel = select_adagrpo(trajs, run.buffer, rng, nominal_batch=cfg.episodes_per_iteration * cfg.num_rollouts,
                         prune=cfg.prune_negatives, max_neg_per_pos=cfg.max_neg_per_pos)
    return sel.trajs, {"pruned": sel.pruned, "replayed": sel.replayed, "buffer_inserted": sel.inserted,
                       "buffer_size": len(run.buffer) if run.buffer is not None else 0}


# ------------------------------------------------------------------------------------------- PPO
def _ppo_defaults(c) -> None:
    c.kl_coef = 0.0
    c.curriculum = False
    c.fcf = False


def _ppo_critic(agent, cfg, *, params=None, reward_model=None):
    from gui_jax.train.online.ppo import Critic
    if params is None and cfg.get("critic_init", "") == "rm":
        from gui_jax.train.online.rewards import critic_params_from_rm
        params = critic_params_from_rm(agent, reward_model)
    return Critic(agent, cfg, params=params)


def _ppo_samples(run, trajs, cfg, *, reward_fn=None) -> tuple[list, dict]:
    from gui_jax.train.online.ppo import ppo_samples
    return ppo_samples(run.critic, trajs, cfg, reward_fn=reward_fn)


def _register_builtins() -> None:
    # Registration order is the order error messages list the names in.
    for name, algo in (
            ("grpo", OnlineAlgorithm(advantage="grpo", defaults=_grpo_defaults)),
            ("adagrpo", OnlineAlgorithm(advantage=_adagrpo_advantage, replay=_adagrpo_replay,
                                        select=_adagrpo_select)),
            ("ppo", OnlineAlgorithm(advantage=None, dense_rewards=True, defaults=_ppo_defaults,
                                    make_critic=_ppo_critic, samples=_ppo_samples))):
        if name not in algorithm_names():  # a module reload must not fail on its own names
            register_algorithm(name, algo)


_register_builtins()
