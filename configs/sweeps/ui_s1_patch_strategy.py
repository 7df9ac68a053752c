"""UI-S1 ablation: the Patch Module's strategy (paper Table 1).

    python -m gui_jax.sweep --config configs/quickstart.py --sweep configs/sweeps/ui_s1_patch_strategy.py \
        --set rl.patch_aux_checkpoint=DIR [--parallel 2]

The off-policy points take their patch thoughts from an auxiliary model (a Hugging Face Qwen2.5-VL folder,
DIR); without it the sweep stops before any point runs.
"""


def get_sweep():
    return {
        "name": "ui_s1_patch_strategy",
        "grid": {"rl.patch_strategy": ['thought_free', 'off_policy', 'on_policy']},
        "seeds": [0, 1, 2],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "metrics": ["online_SR", "SOP_Score", "GR"],
    }
