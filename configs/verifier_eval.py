"""The best-of-n verifier (GUI-Shepherd Alg. 2) on held-out PhoneSim tasks: SR against n with 95 % intervals.

    python -m gui_jax.main --config configs/verifier_eval.py \
        --config.verifier.policy_checkpoint_dir=runs/quickstart/rl/checkpoints \
        --config.verifier.rm_checkpoint_dir=runs/reward_model/rm/checkpoints
The policy samples n candidates per step at `verifier.temperature`; the reward model (trained by
configs/reward_model.py, or a Hugging Face RM directory in `verifier.rm_hf_dir`) picks one. Same data,
model and prompt settings as the reward_model recipe (itself the quickstart's); the held-out tasks are
the first `data.num_test_episodes` test tasks of the split.
"""

import ml_collections

from gui_jax.train.online.config import env_block
from gui_jax.train.config_blocks import sibling_recipe


def get_config():
    c = sibling_recipe(__file__, "reward_model").get_config()
    c.job = "verifier_eval"
    c.data.num_test_episodes = 120       # ≥ 100 held-out tasks (Wilson half-width ≤ 0.09)
    c.verifier = ml_collections.ConfigDict({
        "policy_checkpoint_dir": "",     # a stage's Orbax checkpoints ('' = model.checkpoint or the untrained preset)
        "rm_checkpoint_dir": "",         # the reward_model job's rm/checkpoints
        "rm_hf_dir": "",                 # or a Hugging Face RM directory (rm.export_dir of the reward_model job)
        "rm_untrained": False,           # a random RM (smoke tests only)
        "ns": (1, 2, 4, 8),              # candidates per step (GUI-Shepherd: 1 … 16); must include 1
        "temperature": 1.0,              # sampling temperature of the candidates
        "max_steps": 6,                  # episode step limit (the quickstart's eval.max_steps)
        "seed": 0,                       # task i samples with seed + i, the same for every n
        "greedy_baseline": True,         # also the plain greedy policy (no verifier) on the same tasks
        "progress": True,
    })
    c.env = env_block()  # where online episodes run: --config.env.backend=android|androidworld|... (docs/devices.md)
    return c
