"""Evaluate a trained reward model on the held-out split of configs/reward_model.py.

    python -m gui_jax.main --config configs/reward_eval.py --config.rm_eval.checkpoint_dir=runs/reward_model/rm/checkpoints
or --config.model.checkpoint=<a Hugging Face RM directory>.
"""
import importlib.util
import os

import ml_collections


def get_config():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reward_model.py")
    spec = importlib.util.spec_from_file_location("reward_model_config", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.job = "reward_eval"
    c.rm_eval = ml_collections.ConfigDict({"checkpoint_dir": ""})
    return c
