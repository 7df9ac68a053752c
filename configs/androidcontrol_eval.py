"""AndroidControl offline evaluation (AC-High / AC-Low step metrics and SOP) of a Qwen2.5-VL agent.

    python -m gui_jax.main --config configs/androidcontrol_eval.py \
        --config.androidcontrol.paths='("/data/android_control/android_control-*",)' \
        --config.androidcontrol.split_file=/data/android_control/splits.json \
        --config.model.checkpoint=/path/to/Qwen2.5-VL-7B-or-a-gui_jax-export
Screenshots + pixel coordinates in the ui_s1 dialect (the paper recipe's prompt).
"""
import ml_collections

from gui_jax.train.config_blocks import model_block, prompt_block


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "androidcontrol_eval"
    c.seed = 0
    c.model = model_block("7b")
    c.model.max_new_tokens = 256
    c.prompt = prompt_block()
    c.eval = ml_collections.ConfigDict({"checkpoint_dir": "", "untrained": False})
    c.androidcontrol = ml_collections.ConfigDict({
        "paths": ("android_control/android_control-*",),  # GZIP TFRecord shards (glob patterns)
        "split_file": "",          # splits.json of the release (empty = every episode read)
        "split": "test",
        "max_episodes": 0,         # 0 = all
        "levels": ("high", "low"),  # AC-High: the goal at every step; AC-Low: each step's instruction
        "sop": True,
        "ui_trees": False,         # parse the accessibility forests (needed for ui_text prompts)
    })
    return c
