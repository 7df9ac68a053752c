"""The online RL trainers (docs/algorithms.md §5–§9): trajectory GRPO, AdaGRPO, PPO with GAE.

    trainer.py             the loop: rollouts → rewards → advantages → PPO-clip updates (`train_online`)
    config.py              the `online` and `env` config blocks (import-light: no JAX)
    builtin_algorithms.py  grpo / adagrpo / ppo, registered in `gui_jax.rl.algorithms` (import-light)
    selection.py           host-side steps: group advantages, AdaPR mixing, FCF task sampling, samples
    ppo.py                 PPO's critic and GAE
    rewards.py             reward models in the loop: RM outcome reward, PRM step reward, critic from RM

`from gui_jax.train.online import train_online` (and the trainer's other public names) resolves lazily, so
importing `gui_jax.train.online.config` for a recipe or config check does not load the trainer or JAX.
"""
from __future__ import annotations

import importlib

_TRAINER_NAMES = ("OnlineRun", "REPORT_KEYS", "advantage_step", "grpo_samples", "make_env_factory", "make_pool",
                  "records_to_trajs", "rollout_config", "train_online")

__all__ = list(_TRAINER_NAMES)


def __getattr__(name: str):
    if name in _TRAINER_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.trainer"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_TRAINER_NAMES))
