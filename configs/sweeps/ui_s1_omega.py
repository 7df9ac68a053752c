"""UI-S1 ablation: the weight ω of the step-level advantage in A = A^E + ω·A^S (default 1).

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/ui_s1_omega.py [--parallel 2]
"""


def get_sweep():
    return {
        "name": "ui_s1_omega",
        "grid": {"rl.omega": [0.0, 0.5, 1.0]},
        "seeds": [0, 1, 2],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "metrics": ["online_SR", "SOP_Score", "GR"],
    }
