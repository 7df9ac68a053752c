"""UI-S1 ablation: the patch budget ε (0 = stop at the first mismatch, −1 = unlimited; default 1).

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/ui_s1_patch_threshold.py [--parallel 2]
"""


def get_sweep():
    return {
        "name": "ui_s1_patch_threshold",
        "grid": {"rl.patch_threshold": [0, 1, 2, -1]},
        "seeds": [0, 1, 2],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "metrics": ["online_SR", "SOP_Score", "GR"],
    }
