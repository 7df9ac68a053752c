"""AdaGRPO ablation (MobileRL Table 4 style): the full method against one component switched off at a
time (SPA advantages, AdaPR replay, FCF failure curriculum), all from one SFT start, on the same held-out
PhoneSim tasks (the quickstart's six templates, easy tasks, 216 held-out tasks).

    python -m gui_jax.experiment experiments/adagrpo_ablation.py [--parallel 2]

The `full` arm runs its own SFT; the other variants start from its SFT checkpoints. To start every
variant from an existing SFT stage instead (as the former script's --init_checkpoint_dir did, e.g.
runs/qs_a/sft/checkpoints), set START below. Report: experiments/results/adagrpo_components.{md,json,png}
(the former script's: adagrpo_ablation.md, adagrpo_long.md).
"""

START = ""  # an SFT stage's checkpoints folder shared by every variant; "" = the full arm's own SFT
COMMON = {
    "data.templates": ("messages.open_thread", "music.play", "tasks.complete", "clock.alarm_toggle",
                       "expenses.amount", "settings.storage_answer"),
    "data.difficulties": ("easy",), "data.test_seed_range": (1000, 1045), "data.num_test_episodes": 216,
    "online.iterations": 48,
}
VARIANTS = {"no_spa": {"online.spa": False}, "no_adapr": {"online.adapr": False}, "no_fcf": {"online.fcf": False}}


def get_spec():
    common = {**COMMON, **({"init.checkpoint_dir": START} if START else {})}
    shared_start = {} if START else {"init_from": {"arm": "full", "path": "sft/checkpoints",
                                                   "flag": "init.checkpoint_dir"}}
    arms = {"full": {"recipe": "configs/adagrpo.py", "overrides": common},
            "start": {"results_of": "full", "stage": "start"}}
    for name, switch in VARIANTS.items():
        arms[name] = {"recipe": "configs/adagrpo.py", "overrides": {**common, **switch}, **shared_start}
    return {
        "name": "adagrpo_components",
        "description": "Which AdaGRPO component matters: full vs without SPA / AdaPR / FCF, from one SFT start?",
        "arms": arms,
        "seeds": [0],
        "seed_fields": ["seed", "sft.seed", "online.seed"],
        "evaluation": {"metric": "online_success", "stage": "adagrpo"},
        "comparisons": [["start", v] for v in ("full", *VARIANTS)] + [["full", v] for v in VARIANTS],
    }
