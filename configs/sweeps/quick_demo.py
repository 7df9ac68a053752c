"""A 2 × 2 × 2-seed demonstration sweep on a shortened quickstart (minutes, not hours).

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/quick_demo.py
"""


def get_sweep():
    return {
        "name": "quick_demo",
        "grid": {"rl.gamma": [0.0, 0.5], "rl.omega": [0.0, 1.0]},
        "seeds": [0, 1],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "overrides": {"sft.num_steps": 10, "sft.checkpoint_every": 10, "sft.warmup_steps": 2, "rl.iterations": 1,
                      "rl.episodes_per_iteration": 4, "data.num_train_episodes": 12, "data.num_test_episodes": 6,
                      "data.rl_train_episodes": 0,
                      "eval.step_metrics": False, "eval.max_steps": 3},
        "metrics": ["online_SR", "SOP_Score"],
    }
