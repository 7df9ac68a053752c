"""UI-S1 ablation: the discount γ of the step-level returns (paper Fig. 6; default 0.5).

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/ui_s1_gamma.py [--parallel 2]
"""


def get_sweep():
    return {
        "name": "ui_s1_gamma",
        "grid": {"rl.gamma": [0.0, 0.5, 0.9]},
        "seeds": [0, 1, 2],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "metrics": ["online_SR", "SOP_Score", "GR"],
    }
