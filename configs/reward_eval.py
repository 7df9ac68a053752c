"""Evaluate a trained reward model on the held-out split of configs/reward_model.py.

    python -m gui_jax.main --config configs/reward_eval.py --config.rm_eval.checkpoint_dir=runs/reward_model/rm/checkpoints
or --config.model.checkpoint=<a Hugging Face RM directory>. A policy as the implicit RM (its probability of
writing each candidate):
    python -m gui_jax.main --config configs/reward_eval.py --config.rm.model.scorer=policy_likelihood \
        --config.rm_eval.checkpoint_dir=runs/quickstart/sft/checkpoints
"""

import ml_collections

from gui_jax.train.config_blocks import sibling_recipe


def get_config():
    c = sibling_recipe(__file__, "reward_model").get_config()
    c.job = "reward_eval"
    c.rm_eval = ml_collections.ConfigDict({
        "checkpoint_dir": "",
        "history_gates": (),   # with rm.model.history_min: the metrics at each of these gates too (one scoring pass)
    })
    return c
