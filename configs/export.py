"""Export a trained agent as a Hugging Face Qwen2.5-VL directory (weights, config, tokenizer, processor).

    python -m gui_jax.main --config configs/export.py \
        --config.export.checkpoint_dir=runs/quickstart/rl/checkpoints --config.export.out_dir=runs/export/hf
The model block must describe the trained model (the quickstart's by default).
"""
import importlib.util
import os

import ml_collections


def get_config():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quickstart.py")
    spec = importlib.util.spec_from_file_location("quickstart_config", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.job = "export"
    c.export = ml_collections.ConfigDict({
        "checkpoint_dir": "",     # a stage's Orbax checkpoints folder, e.g. runs/quickstart/rl/checkpoints
        "out_dir": "",            # default: <workdir>/hf
        "dtype": "",              # storage dtype (bfloat16 | float32); default: the params' own
        "overwrite": False,
    })
    return c
