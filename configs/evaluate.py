"""Evaluate a trained agent on the quickstart's held-out split (set eval.checkpoint_dir or model.checkpoint).

    python -m gui_jax.main --config configs/evaluate.py --config.eval.checkpoint_dir=runs/quickstart/rl/checkpoints
The data and model fields are the quickstart's, so its checkpoints fit; eval.untrained=True scores
the untrained model instead (no checkpoint).
"""

from gui_jax.train.online.config import env_block
from gui_jax.train.config_blocks import sibling_recipe


def get_config():
    c = sibling_recipe(__file__, "quickstart").get_config()
    c.job = "evaluate"
    c.eval.checkpoint_dir = ""   # a stage's checkpoints folder, e.g. runs/quickstart/rl/checkpoints
    c.eval.untrained = False     # True: score the untrained model (no checkpoint needed)
    # no training between sampler calls: padding every call to one batch size compiles a program per prompt length,
    # not per (batch bucket, length); greedy outputs are the same, ~13 % less wall time on the quickstart's SFT
    c.model.sample_batch_buckets = "full"
    c.env = env_block()  # where online episodes run: --config.env.backend=android|androidworld|... (docs/devices.md)
    return c
