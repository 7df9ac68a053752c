"""AdaGRPO ablation (MobileRL Table 4: full 71.1 on AndroidWorld; without AdaPR 63.6, without SPA 69.1, without
FCF 64.8): the full method against one component switched off at a time, from the shipped base.

    python -m gui_jax.experiment experiments/adagrpo_ablation.py [--parallel 2]

Every arm starts from the quickstart's SFT with the budget and task split of experiments/online_vs_sft.py; the
SFT comes from the quickstart run of compare_sft_offline_semi.py (`semi_online_rl`, the same settings, so the
runner reuses its finished points), and `full` is online_vs_sft's `adagrpo` arm started from it; only the three
switched-off variants then run (~30 min each on one core).
Report: experiments/results/adagrpo_components.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file
from gui_jax.experiment_spec import variant_arms

ONLINE_VS_SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "online_vs_sft.py")
VARIANTS = {"no_spa": {"online.spa": False}, "no_adapr": {"online.adapr": False}, "no_fcf": {"online.fcf": False}}


def get_spec():
    online_vs_sft = load_python_file(ONLINE_VS_SFT)
    full = online_vs_sft.from_quickstart(online_vs_sft.get_spec()["arms"]["adagrpo"])
    arms = {"semi_online_rl": online_vs_sft.QUICKSTART_RUN, "full": full,
            "start": {"results_of": "full", "stage": "start"}, **variant_arms(full, VARIANTS)}
    return {
        "name": "adagrpo_components",
        "description": "Which AdaGRPO component matters: full vs without SPA / AdaPR / FCF, from one SFT start?",
        "arms": arms,
        "seeds": [0],
        "evaluation": {"metric": "online_success"},
        "comparisons": [["start", v] for v in ("full", *VARIANTS)] + [["full", v] for v in VARIANTS],
    }
