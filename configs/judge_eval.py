"""Success judges for tasks without a rule check, measured against PhoneSim's check on held-out tasks.

    python -m gui_jax.main --config configs/judge_eval.py \
        --config.judge.policy_checkpoint_dir=runs/quickstart/sft/checkpoints \
        --config.judge.rm_checkpoint_dir=runs/reward_model/rm/checkpoints
The policy's sampled episodes are judged by the policy backbone asked zero-shot (`prompted`) and by the trained
outcome reward model (`rm`), with the reward model recipe's prompt settings; agreement, precision, recall, F1,
κ and AUROC against the check (gui_jax/jobs/judge_eval.py).
"""

import ml_collections

from gui_jax.train.config_blocks import sibling_recipe
from gui_jax.train.online.config import env_block


def get_config():
    c = sibling_recipe(__file__, "reward_model").get_config()
    c.job = "judge_eval"
    c.data.num_test_episodes = 440       # the quickstart's held-out tasks (Wilson half-width ≤ 0.05)
    c.judge = ml_collections.ConfigDict({
        "policy_checkpoint_dir": "",     # whose episodes are judged: a stage's Orbax checkpoints ('' = model.checkpoint)
        "temperature": 1.0,              # sampled episodes: successes and failures mix
        "trials": 1,                     # episodes per task
        "max_steps": 6,                  # episode step limit (the quickstart's eval.max_steps)
        "seed": 0,
        "judges": ("prompted", "rm"),    # prompted: the backbone zero-shot; rm: the trained outcome RM
        "prompted_checkpoint_dir": "",   # the prompted judge's weights: a stage's Orbax checkpoints ('' = model.checkpoint)
        "prompted_scorer": "verdict",    # verdict: P(" yes") to the outcome question | policy_likelihood: P(its final step)
        "rm_checkpoint_dir": "",         # the rm judge: the reward_model job's rm/checkpoints
        "rm_hf_dir": "",                 # or a Hugging Face RM directory
        "rm_untrained": False,           # a random RM (smoke tests only)
        "threshold": 0.5,                # P(+) at or above it: judged a success
    })
    c.env = env_block()  # where the judged episodes run (docs/devices.md)
    return c
