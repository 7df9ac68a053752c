"""UI-S1 ablation: the history window K (screenshots in the prompt, current one included).

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/ui_s1_history.py [--parallel 2]
"""


def get_sweep():
    return {
        "name": "ui_s1_history",
        "grid": {"prompt.history_turns": [1, 2, 4]},
        "seeds": [0, 1, 2],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "metrics": ["online_SR", "SOP_Score", "GR"],
    }
