"""MobileRL reasoning-SFT bootstrap on PhoneSim: verified sampled thoughts → SFT, for a few rounds.

Sample thought+action on expert steps, keep the thoughts whose action matches the expert, fine-tune
on them, repeat (MobileRL §2.1; docs/algorithms.md).

    python -m gui_jax.main --config configs/reasoning_sft.py --config.reasoning.init_checkpoint=runs/quickstart/sft/checkpoints
Starts from the quickstart's data and model settings (its `reasoning` block) and from `reasoning.init_checkpoint`
(a training stage's Orbax checkpoints; the model's shape and tokenizer still come from `model.checkpoint`) or
`model.checkpoint` (a Hugging Face folder). With `reasoning.seed_thoughts=''` a model that never writes thoughts
keeps nothing, and the job stops saying so. Evaluated, as a stage between SFT and RL:
`configs/quickstart.py --config.reasoning_sft=True` (experiments/reasoning_sft.py).
"""

from gui_jax.train.config_blocks import sibling_recipe


def get_config():
    c = sibling_recipe(__file__, "quickstart").get_config()
    c.job = "reasoning_sft"
    del c["reasoning_sft"]      # the quickstart's stage switch; this job is the stage alone
    c.model.max_new_tokens = 48
    return c
