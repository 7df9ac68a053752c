"""Export a trained agent as a Hugging Face Qwen2.5-VL directory (weights, config, tokenizer, processor).

    python -m gui_jax.main --config configs/export.py \
        --config.export.checkpoint_dir=runs/quickstart/rl/checkpoints --config.export.out_dir=runs/export/hf
The model block must describe the trained model (the quickstart's by default).
"""

import ml_collections

from gui_jax.train.config_blocks import sibling_recipe


def get_config():
    c = sibling_recipe(__file__, "quickstart").get_config()
    c.job = "export"
    c.export = ml_collections.ConfigDict({
        "checkpoint_dir": "",     # a stage's Orbax checkpoints folder, e.g. runs/quickstart/rl/checkpoints
        "out_dir": "",            # default: <workdir>/hf
        "dtype": "",              # storage dtype (bfloat16 | float32); default: the params' own
        "overwrite": False,
    })
    return c
