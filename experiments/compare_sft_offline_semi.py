"""SFT vs offline RL vs semi-online RL (UI-S1 Table 3 in miniature) on PhoneSim, over 3 seeds.

    python -m gui_jax.experiment experiments/compare_sft_offline_semi.py [--parallel 3]

One quickstart run per seed (from the shipped base) with the offline-RL baseline switched on: both RL
methods start from the same SFT weights, run the same 240 iterations of 8 tasks (the budget at which
semi-online RL's gain over SFT became significant) and are evaluated on the same 440 held-out tasks. The `sft`
and `offline_rl` arms read those stages of the same runs. Report:
experiments/results/sft_vs_offline_vs_semi.{md,json,png} (the former script of this name wrote
compare_sft_offline_semi.md, with SOP and step metrics too).
"""
import os

from gui_jax.core.recipe_files import load_python_file

ONLINE_VS_SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "online_vs_sft.py")


def get_spec():
    return {
        "name": "sft_vs_offline_vs_semi",
        "description": "Does semi-online RL beat offline RL and SFT from the same SFT start (UI-S1 Table 3)?",
        "arms": {
            "semi_online_rl": load_python_file(ONLINE_VS_SFT).QUICKSTART_RUN,  # shared with the other specs
            "offline_rl": {"results_of": "semi_online_rl", "stage": "offline_rl"},
            "sft": {"results_of": "semi_online_rl", "stage": "sft"},
        },
        "seeds": [0, 1, 2],
        "seed_fields": ["seed", "sft.seed", "rl.seed"],
        "evaluation": {"metric": "online_success"},  # quickstart: 0/1 list beside online_task_ids
        "comparisons": [["sft", "semi_online_rl"], ["sft", "offline_rl"], ["offline_rl", "semi_online_rl"]],
    }
