"""Online GRPO and AdaGRPO against their SFT start on PhoneSim (must-be-true #6 of the online-RL issue).

    python -m gui_jax.experiment experiments/online_vs_sft.py [--parallel 2]

The GRPO arm runs the online_rl job with its own short SFT; the AdaGRPO arm starts from that SFT's
checkpoints (init.checkpoint_dir), so both RL stages and the start are evaluated greedily on the same
held-out tasks. `start` is the GRPO run's evaluation before RL. Report:
experiments/results/online_vs_sft.{md,json,png} (the former script's: online_vs_sft_*.json).
"""

RUN = {"online.iterations": 12, "data.num_test_episodes": 120}  # the script's defaults


def get_spec():
    return {
        "name": "online_vs_sft",
        "description": "Does online RL (GRPO, AdaGRPO) raise greedy online success over its SFT start?",
        "arms": {
            "grpo": {"recipe": "configs/grpo_online.py", "overrides": dict(RUN)},
            "adagrpo": {"recipe": "configs/adagrpo.py", "overrides": dict(RUN),
                        "init_from": {"arm": "grpo", "path": "sft/checkpoints", "flag": "init.checkpoint_dir"}},
            "start": {"results_of": "grpo", "stage": "start"},
        },
        "seeds": [0],
        "seed_fields": ["seed", "sft.seed", "online.seed"],
        "evaluation": {"metric": "online_success"},  # online_rl: {task id: 0/1} per stage; last stage = the RL one
        "comparisons": [["start", "grpo"], ["start", "adagrpo"], ["grpo", "adagrpo"]],
    }
