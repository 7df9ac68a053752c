"""UI-S1 ablation: the Patch Module's strategy (paper Table 1).

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/ui_s1_patch_strategy.py [--parallel 2]
"""


def get_sweep():
    return {
        "name": "ui_s1_patch_strategy",
        "grid": {"rl.patch_strategy": ['thought_free', 'off_policy', 'on_policy']},
        "seeds": [0, 1, 2],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "metrics": ["online_SR", "SOP_Score", "GR"],
    }
