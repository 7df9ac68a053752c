"""SOP Score vs online SR across evaluated checkpoints (UI-S1 Fig. 4): R² with its bootstrap interval, slope, plot.

    python -m gui_jax.main --config configs/sop_report.py --workdir runs/sop_report   # the runs named below
    python -m gui_jax.main --config configs/sop_report.py --config.report.runs='("runs/quickstart",)' \
        --config.report.checkpoints='()'
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
        # glob patterns of run directories with results.json / eval.json: the SFT, offline-RL and semi-online-RL
        # stages of experiments/compare_sft_offline_semi.py's three seeds
        "runs": ("runs/experiments/sft_vs_offline_vs_semi/semi_online_rl/seed=*",),
        # glob patterns of stage checkpoints folders (each kept step evaluated) or of step folders: the SFT along
        # its way (a quickstart run keeping every 50th step: --config.sft.checkpoint_every=50
        # --config.sft.checkpoints_kept=0 --config.rl.iterations=0 --workdir runs/sop_sft; its last step is seed 0's
        # SFT above) and the ends of experiments/online_vs_sft.py's GRPO and AdaGRPO runs
        "checkpoints": ("runs/sop_sft/sft/checkpoints/?0", "runs/sop_sft/sft/checkpoints/[1-3]?0",
                        "runs/experiments/online_vs_sft/*grpo/seed=0/online/checkpoints/240"),
        "x_metric": "SOP_Score",
        "y_metric": "online_SR",
        "skip_stages": ("untrained",),           # a random model sits at (0, 0) and inflates R²
        "bootstrap": 2000,                       # resamples of the points for R²'s 95 % interval
    })
    return c
