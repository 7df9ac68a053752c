"""Few-shot adaptation (AWG): k demonstrations of unseen apps (app split), per-app and all-app
fine-tunes, online evaluation on other instances; the tiny agent on in-process PhoneSim.

    python -m gui_jax.main --config configs/few_shot.py [--workdir runs/few_shot]
    python -m gui_jax.main --config configs/few_shot.py --config.init.checkpoint_dir=runs/grpo_online/sft/checkpoints
    python -m gui_jax.main --config configs/few_shot.py --config.env.backend=remote \
        --config.env.server_urls='("http://127.0.0.1:8000",)'
"""

import ml_collections

from gui_jax.train.config_blocks import sft_block, sibling_recipe


def _sibling(name):
    return sibling_recipe(__file__, name)


def get_config():
    c = _sibling("grpo_online").get_config("grpo")
    c.job = "few_shot"
    c.data.split = "app"                  # the test apps are never seen in training
    c.data.templates = ()
    c.data.difficulties = ("easy", "medium")
    c.data.max_optimal_steps = 4
    c.data.num_test_episodes = 120
    c.few_shot = ml_collections.ConfigDict({
        "k": 5,                           # demonstrations per unseen app
        "demo_seed_range": (2000, 2050),  # disjoint from the train and test seeds
        "modes": ("zero_shot", "per_app", "all_app"),
        "sft": sft_block(),
    })
    c.few_shot.sft.num_steps = 40
    c.few_shot.sft.batch_size = 8
    c.few_shot.sft.micro_batch_size = 8
    c.few_shot.sft.learning_rate = 1e-3
    c.few_shot.sft.warmup_steps = 0
    c.few_shot.sft.checkpoint_every = 40
    return c
