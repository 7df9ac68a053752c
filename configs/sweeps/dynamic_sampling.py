"""DAPO-style dynamic sampling on / off (UI-S1 keeps tasks whose early returns vary).

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/dynamic_sampling.py [--parallel 2]
"""


def get_sweep():
    return {
        "name": "dynamic_sampling",
        "grid": {"rl.dynamic_sampling": [True, False]},
        "seeds": [0, 1, 2],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "metrics": ["online_SR", "SOP_Score", "GR"],
    }
