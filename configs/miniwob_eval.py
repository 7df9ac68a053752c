"""Online evaluation on MiniWob++ pages (headless Chromium): per-task SR with 95 % Wilson intervals.

    python -m gui_jax.main --config configs/miniwob_eval.py --config.eval.checkpoint_dir=DIR \
        --config.env.tasks='("click-test","click-button")' --config.env.seeds='(0,1,2)'
The default task list is the 92-page suite AndroidWorld registers (less drag-item, which the `miniwob`
package does not ship). The tiny model reads the page's elements and acts by element index.
Any other backend of the `env` block's table, e.g. a device (docs/devices.md):
    ... --config.env.backend=android --config.env.serials='("emulator-5554",)' --config.env.tasks='("Settings|Open Wi-Fi",)'
"""
import ml_collections

from gui_jax.config_check import SAVE_TRAJECTORIES

from gui_jax.train.config_blocks import model_block, prompt_block
from gui_jax.train.online.config import env_block


def get_config():
    from gui_jax.envs.miniwob import ANDROIDWORLD_MINIWOB_TASKS
    c = ml_collections.ConfigDict()
    c.job = "env_eval"
    c.seed = 0
    c.model = model_block("tiny")
    c.model.max_new_tokens = 32
    c.prompt = prompt_block()
    c.prompt.observation = "ui_text"
    c.prompt.target = "element"
    c.prompt.history_turns = 0
    c.prompt.system_prompt = False
    c.eval = ml_collections.ConfigDict({"checkpoint_dir": "", "untrained": False, "temperature": 0.0,
                                        "trials": 1, "max_steps": 10,
                                        "save_trajectories": SAVE_TRAJECTORIES})  # episodes kept for gui_jax.view
    c.env = env_block()               # the backend table: --config.env.backend=android|androidworld|... works too
    c.env.backend = "miniwob"
    c.env.tasks = tuple(t for t in ANDROIDWORLD_MINIWOB_TASKS if t != "drag-item")
    c.env.seeds = (0, 1, 2, 3, 4)
    c.env.n_envs = 2                  # Chromium instances (each ≈ 150 MB)
    c.env.n_standby = 0
    c.env.health_interval_s = 0.0
    return c
