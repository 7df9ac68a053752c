"""SOP Score vs online SR across evaluated checkpoints (UI-S1 Fig. 4): R² with its bootstrap interval, slope, plot.

    python -m gui_jax.main --config configs/sop_report.py --config.report.runs='("runs/quickstart",)'
    # every kept step of these stages evaluated here first (the quickstart's held-out split and eval settings):
    python -m gui_jax.main --config configs/sop_report.py --workdir runs/sop_report --config.report.runs='()' \
        --config.report.checkpoints='("runs/sop/sft/checkpoints","runs/sop/rl/checkpoints")'
"""
import ml_collections

from gui_jax.train.config_blocks import sibling_recipe


def get_config():
    # the quickstart's split, model, prompt and eval block: its checkpoints fit and are evaluated as it evaluates
    c = sibling_recipe(__file__, "quickstart").get_config()
    c.job = "sop_report"
    c.report = ml_collections.ConfigDict({
        "runs": ("runs/*", "runs/sweeps/*/*"),   # glob patterns of run directories with results.json / eval.json
        "checkpoints": (),                       # glob patterns of stage checkpoints folders: each kept step evaluated
        "x_metric": "SOP_Score",
        "y_metric": "online_SR",
        "skip_stages": ("untrained",),           # a random model sits at (0, 0) and inflates R²
        "bootstrap": 2000,                       # resamples of the points for R²'s 95 % interval
    })
    return c
