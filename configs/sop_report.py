"""SOP Score vs online SR across evaluated checkpoints (UI-S1 Fig. 4): R², slope, plot.

    python -m gui_jax.main --config configs/sop_report.py --config.report.runs='("runs/quickstart",)'
"""
import ml_collections


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "sop_report"
    c.report = ml_collections.ConfigDict({
        "runs": ("runs/*", "runs/sweeps/*/*"),   # glob patterns of run directories
        "x_metric": "SOP_Score",
        "y_metric": "online_SR",
        "skip_stages": ("untrained",),           # a random model sits at (0, 0) and inflates R²
    })
    return c
