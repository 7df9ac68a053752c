"""AdaGRPO ablation (MobileRL Table 4: full 71.1 on AndroidWorld; without AdaPR 63.6, without SPA 69.1, without
FCF 64.8): the full method against one component switched off at a time, from the shipped base.

    python -m gui_jax.experiment experiments/adagrpo_ablation.py [--parallel 2]

Every arm starts from the quickstart's SFT with the budget and task split of experiments/online_vs_sft.py; its
`semi_online_rl` and `adagrpo` arms are defined here with the same settings (the latter named `full`), so their
finished workdirs can be copied in and only the three switched-off variants run (~1 h each on one core).
Report: experiments/results/adagrpo_components.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file

ONLINE_VS_SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "online_vs_sft.py")
VARIANTS = {"no_spa": {"online.spa": False}, "no_adapr": {"online.adapr": False}, "no_fcf": {"online.fcf": False}}


def get_spec():
    shared = load_python_file(ONLINE_VS_SFT).get_spec()["arms"]
    full = shared["adagrpo"]
    arms = {"semi_online_rl": shared["semi_online_rl"], "full": full,
            "start": {"results_of": "full", "stage": "start"}}
    for name, switch in VARIANTS.items():
        arms[name] = {**full, "overrides": {**full["overrides"], **switch}}
    return {
        "name": "adagrpo_components",
        "description": "Which AdaGRPO component matters: full vs without SPA / AdaPR / FCF, from one SFT start?",
        "arms": arms,
        "seeds": [0],
        "evaluation": {"metric": "online_success"},
        "comparisons": [["start", v] for v in ("full", *VARIANTS)] + [["full", v] for v in VARIANTS],
    }
