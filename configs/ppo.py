"""PPO with a value head and GAE (AWG / GUI-Shepherd, docs/algorithms.md §8); the tiny agent on PhoneSim.

    python -m gui_jax.main --config configs/ppo.py [--workdir runs/ppo]
    python -m gui_jax.main --config configs/ppo.py --config.online.gae_level=token
    python -m gui_jax.main --config configs/ppo.py --config.env.backend=remote \
        --config.env.server_urls='("http://127.0.0.1:8000",)'

Reward = terminal outcome (`online.outcome_reward`); a per-step reward function plugs into
`train_online(..., reward_fn=...)`. No KL (GUI-Shepherd); critic lr 10× the actor's.
PRM-PPO (GUI-Shepherd): dense r_t = prm_weight·P(+ | step t) + format_weight·[parsed] from a trained reward
model, no outcome term, the critic initialised from the RM:
    python -m gui_jax.main --config configs/ppo.py --config.online.step_reward=prm \
        --config.online.critic_init=rm --config.online.outcome_reward=0.0 --config.online.format_weight=0.1 \
        --config.online.rm_checkpoint_dir=runs/reward_model/rm/checkpoints
(experiments/prm_rewards.py compares it with outcome-reward PPO and GRPO on the same held-out tasks.)
"""

from gui_jax.train.config_blocks import sibling_recipe


def _sibling(name):
    return sibling_recipe(__file__, name)


def get_config():
    c = _sibling("grpo_online").get_config("ppo")
    c.online.kl_coef = 0.0
    c.online.learning_rate = 3e-4
    c.online.critic_learning_rate = 3e-3
    c.online.gamma = 1.0
    c.online.gae_lambda = 0.95
    c.online.gae_level = "step"
    return c
