"""MobileRL reasoning-SFT bootstrap on PhoneSim: verified sampled thoughts → SFT, for a few rounds.

Sample thought+action on expert steps, keep the thoughts whose action matches the expert, fine-tune
on them, repeat (MobileRL §2.1; docs/algorithms.md).

    python -m gui_jax.main --config configs/reasoning_sft.py --config.reasoning.init_checkpoint=runs/quickstart/sft/checkpoints
Starts from the quickstart's data and model settings and from `reasoning.init_checkpoint` (a
training stage's Orbax checkpoints) or `model.checkpoint` (a Hugging Face folder). A model that
never writes thoughts keeps nothing, and the job stops saying so.
"""

import ml_collections

from gui_jax.train.config_blocks import sft_block, sibling_recipe


def get_config():
    c = sibling_recipe(__file__, "quickstart").get_config()
    c.job = "reasoning_sft"
    c.reasoning = ml_collections.ConfigDict({
        "rounds": 2,                 # sample → verify → fine-tune rounds
        "samples_per_step": 4,       # thought samples per expert step and round
        "temperature": 1.0,
        "seed": 0,
        "init_checkpoint": "",       # a stage's checkpoints folder, e.g. runs/quickstart/sft/checkpoints
        "sft": sft_block(),
    })
    c.reasoning.sft.num_steps = 50
    c.model.max_new_tokens = 64
    return c
