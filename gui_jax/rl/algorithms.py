"""Online RL algorithms registered by name (docs/algorithms.md §6–§8): what `online.algorithm` selects.

An `OnlineAlgorithm` names its pieces instead of the trainer branching on the algorithm string:
- `advantage`: a group-advantage estimator in `advantages.GROUP_ADVANTAGES` (or cfg -> such a name);
- `policy_loss`: a policy loss in `losses.POLICY_LOSSES` (the PPO-clip + β·KL of §5 by default);
- hooks for what only some algorithms have: config defaults and validation, a replay buffer and a
  batch selection (AdaGRPO), a critic and a sample builder that replaces the group advantages (PPO).

    register_algorithm("my_algo", OnlineAlgorithm(advantage="my_adv", policy_loss="my_loss"))
    config.online = online_block("my_algo")      # then train_online / the online_rl job as usual

GRPO, AdaGRPO and PPO are registered by `gui_jax/train/online/builtin_algorithms.py` (their hooks use the
trainer's critic and selection code, which lives in train/; this module imports nothing heavy so that
config recipes can read the registered names).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Union

# hook types (cfg = the `online` config block; run = the trainer's OnlineRun; trajs = train/online/selection.Traj)
DefaultsFn = Callable[[Any], None]                         # edits a fresh online block in place
ValidateFn = Callable[[Any], None]                         # raises ValueError naming "online.<field>"
ReplayFn = Callable[[Any], Optional[Any]]                  # cfg -> replay buffer (run.buffer, checkpointed)
SelectFn = Callable[..., tuple]                            # (run, trajs, cfg, rng) -> (trained trajs, metrics)
CriticFn = Callable[..., Optional[Any]]                    # (agent, cfg, *, params, reward_model) -> critic
SamplesFn = Callable[..., tuple]                           # (run, trajs, cfg, *, reward_fn) -> (samples, metrics)


@dataclasses.dataclass(frozen=True)
class OnlineAlgorithm:
    """What one online algorithm does differently; every hook is optional (None: the GRPO path).

    advantage: name of a `GROUP_ADVANTAGES` estimator, or cfg -> name when a config switch picks it
      (AdaGRPO's `online.spa`); unused when `samples` is set.
    policy_loss: name of a `POLICY_LOSSES` loss (the actor's loss on one micro-batch).
    dense_rewards: the algorithm takes per-step rewards (`online.step_reward`, `format_weight`,
      `critic_init` and the trainer's `reward_fn(trajectory, t)` hook); others reject those fields.
    defaults(cfg): per-algorithm defaults applied by `online_block(name)` (may add fields).
    validate(cfg): extra checks run by `validate_online` after the shared ones.
    replay(cfg): a replay buffer kept in the checkpoint as the run's `buffer` (AdaPR), or None.
    select(run, trajs, cfg, rng) -> (trajs, metrics): which trajectories (advantages set) train.
    make_critic(agent, cfg, *, params, reward_model): a critic saved and restored with the run.
    samples(run, trajs, cfg, *, reward_fn) -> (TrainSamples, metrics): replaces advantage + select.
    """
    advantage: Union[str, Callable[[Any], str], None] = "grpo"
    policy_loss: str = "ppo_clip"
    dense_rewards: bool = False
    defaults: Optional[DefaultsFn] = None
    validate: Optional[ValidateFn] = None
    replay: Optional[ReplayFn] = None
    select: Optional[SelectFn] = None
    make_critic: Optional[CriticFn] = None
    samples: Optional[SamplesFn] = None
    name: str = ""  # set by register_algorithm

    def advantage_name(self, cfg) -> str:
        """The group-advantage estimator this config uses."""
        name = self.advantage(cfg) if callable(self.advantage) else self.advantage
        if not name:
            raise ValueError(f"online.algorithm = {self.name!r} has no advantage estimator and no samples hook")
        return name


ONLINE_ALGORITHMS: dict[str, OnlineAlgorithm] = {}  # in registration order (the order errors list them)


def register_algorithm(name: str, algo: OnlineAlgorithm) -> OnlineAlgorithm:
    """Register `algo` as `online.algorithm = name` (registering a name twice is an error)."""
    if not isinstance(algo, OnlineAlgorithm):
        raise TypeError(f"register_algorithm({name!r}, ...) needs an OnlineAlgorithm, got {type(algo).__name__}")
    if name in ONLINE_ALGORITHMS:
        raise ValueError(f"online algorithm {name!r} is already registered")
    algo = dataclasses.replace(algo, name=name)
    ONLINE_ALGORITHMS[name] = algo
    return algo


def algorithm_names() -> tuple[str, ...]:
    """The registered `online.algorithm` values, in registration order."""
    return tuple(ONLINE_ALGORITHMS)


def get_algorithm(name: str) -> OnlineAlgorithm:
    """The algorithm registered as `name`; a one-line ValueError listing the registered names otherwise."""
    try:
        return ONLINE_ALGORITHMS[name]
    except (KeyError, TypeError):
        raise ValueError(f"online.algorithm = {name!r}; known: {algorithm_names()}") from None
