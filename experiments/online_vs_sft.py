"""Online GRPO and AdaGRPO against their SFT start on PhoneSim, from the shipped base (AWG, MobileRL).

    python -m gui_jax.experiment experiments/online_vs_sft.py [--parallel 2]

The SFT start is the quickstart's (`builtin:tiny-base`, its expert episodes of ten easy templates and SFT steps):
the `sft` arm runs the quickstart with no RL stage (the same SFT as the quickstart run of the same seed in
compare_sft_offline_semi.py: tests/jobs/test_quickstart_determinism.py), and both online arms start from its
checkpoints with the same RL budget as semi-online RL there (240 iterations of 8 tasks x 4 rollouts, lr 1e-4) on
the same task split: 1,426 training tasks, 440 held-out tasks. The online_rl job evaluates its start and its end
greedily on those tasks (as the quickstart does, through its own PhoneSim loop), so `start` pairs with `grpo`
and `adagrpo`.
Report: experiments/results/online_vs_sft.{md,json,png}.
"""

QUICKSTART_SPLIT = {  # configs/quickstart.py's data block: the same training pool and held-out tasks
    "data.templates": ("messages.open_thread", "messages.last_message", "music.play", "music.artist",
                       "clock.alarm_toggle", "tasks.complete", "tasks.priority", "expenses.amount",
                       "settings.storage_answer", "settings.model_answer"),
    "data.difficulties": ("easy",), "data.max_optimal_steps": 4,
    "data.train_seed_range": (0, 400), "data.test_seed_range": (1000, 1060),
    "data.num_train_episodes": 1426, "data.num_test_episodes": 440,
}
BUDGET = {"online.iterations": 240, "online.episodes_per_iteration": 8, "online.num_rollouts": 4,
          "online.learning_rate": 1e-4}
# The quickstart run of compare_sft_offline_semi.py (SFT, offline RL, semi-online RL): the SFT start of the other
# specs, which compare against its RL stages too
QUICKSTART_RUN = {"recipe": "configs/quickstart.py", "overrides": {"offline_rl_baseline": True, "rl.iterations": 240},
                  "stage": "semi_online_rl", "seed_fields": ["seed", "sft.seed", "rl.seed"]}
SFT_ALONE = {"recipe": "configs/quickstart.py", "overrides": {"semi_online_rl": False, "offline_rl_baseline": False},
             "stage": "sft", "seed_fields": ["seed", "sft.seed", "rl.seed"],
             "report": False}  # the same greedy SR as `start` (the SFT as online_rl evaluates it): one row
FROM_SFT = {"init_from": {"arm": "sft", "path": "sft/checkpoints", "flag": "init.checkpoint_dir",
                          "ready": "sft"},  # starts once the SFT stage is written (an arm with RL stages after it)
            "seed_fields": ["seed", "online.seed"]}


def from_quickstart(arm: dict) -> dict:
    """An arm of this spec started from QUICKSTART_RUN's SFT (an arm named `semi_online_rl`) instead of `sft`."""
    return {**arm, "init_from": {**arm["init_from"], "arm": "semi_online_rl"}}


def get_spec():
    return {
        "name": "online_vs_sft",
        "description": "Does online RL (GRPO, AdaGRPO) raise greedy online success over its SFT start?",
        "arms": {
            "sft": SFT_ALONE,
            "grpo": {"recipe": "configs/grpo_online.py", "overrides": {**QUICKSTART_SPLIT, **BUDGET},
                     "stage": "grpo", **FROM_SFT},
            "adagrpo": {"recipe": "configs/adagrpo.py", "overrides": {**QUICKSTART_SPLIT, **BUDGET},
                        "stage": "adagrpo", **FROM_SFT},
            "start": {"results_of": "adagrpo", "stage": "start"},  # the SFT, greedy (grpo evaluates it alike)
        },
        "seeds": [0, 1, 2],
        "evaluation": {"metric": "online_success"},
        "comparisons": [["start", "grpo"], ["start", "adagrpo"], ["grpo", "adagrpo"]],
    }
