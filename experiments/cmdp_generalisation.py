"""How far do SFT and RL carry from the base? AndroidWorld-Generalization's CMDP levels on PhoneSim: unseen
instances, unseen templates of the trained apps, unseen apps (the paper: 7B GRPO over SFT +26.1 / +15.7 / +8.3).

    python -m gui_jax.experiment experiments/cmdp_generalisation.py [--parallel 2]

The policies are those of experiments/online_vs_sft.py (its QUICKSTART_RUN and its `grpo` arm started from it,
same settings as adagrpo_ablation.py's and prm_rewards.py's: the runner reuses their finished points): the
quickstart's SFT, semi-online RL from it (`semi_online_rl`) and online GRPO from it (`grpo`), trained on ten
easy templates of six apps. Unseen instances are their own held-out tasks (greedy, in those runs); the other two
levels are evaluate-job arms on 440 held-out tasks of easy templates (<= 4 expert steps) they never trained on.
Few-shot adaptation (configs/few_shot.py): the SFT fine-tuned on k = 5 demonstrations of each unseen app (one
fine-tune per app, and one on all apps), against its zero-shot self on the unseen-app tasks.
Report: experiments/results/cmdp_generalisation.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file

ONLINE_VS_SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "online_vs_sft.py")
LEVELS = {  # easy templates with <= 4 expert steps outside the quickstart's ten
    "template": ("clock.alarm_count", "clock.stopwatch_start", "expenses.total", "settings.airplane_on",
                 "settings.bluetooth_on", "settings.brightness", "settings.dark_theme_on", "settings.volume",
                 "settings.wifi_off", "settings.wifi_on", "tasks.clear_done", "tasks.count_open"),
    "app": ("calendar.event_location", "calendar.event_time", "contacts.phone_answer", "files.count", "files.size",
            "notes.count", "notes.read", "recipes.prep_time", "recipes.servings", "recorder.duration"),
}
# policy: (source arm, checkpoints path, the source's stage after which that path is final)
POLICIES = {"sft": ("semi_online_rl", "sft/checkpoints", "sft"),
            "semi_online_rl": ("semi_online_rl", "rl/checkpoints", "semi_online_rl"),
            "grpo": ("grpo", "online/checkpoints", None)}


def get_spec():
    online_vs_sft = load_python_file(ONLINE_VS_SFT)
    shared = online_vs_sft.get_spec()["arms"]
    split = online_vs_sft.QUICKSTART_SPLIT
    arms = {"semi_online_rl": online_vs_sft.QUICKSTART_RUN, "grpo": online_vs_sft.from_quickstart(shared["grpo"]),
            "sft_instance": {"results_of": "semi_online_rl", "stage": "sft"},
            "semi_online_rl_instance": {"results_of": "semi_online_rl", "stage": "semi_online_rl"},
            "grpo_instance": {"results_of": "grpo", "stage": "grpo"}}
    for level, templates in LEVELS.items():
        for policy, (source, path, ready) in POLICIES.items():
            init = {"arm": source, "path": path, "flag": "eval.checkpoint_dir", **({"ready": ready} if ready else {})}
            arms[f"{policy}_{level}"] = {"recipe": "configs/evaluate.py", "overrides": {"data.templates": templates},
                                         "init_from": init, "seed_fields": ["seed"]}
    # Few-shot adaptation on the unseen apps (AWG): the SFT fine-tuned on k demonstrations of each unseen app
    # (per app, and all apps at once), evaluated on the same 440 held-out tasks as the `*_app` arms.
    arms["few_shot_per_app"] = {
        "recipe": "configs/few_shot.py", "overrides": {**split, "data.templates": LEVELS["app"],
                                                       "data.split": "instance"},
        "init_from": {"arm": "semi_online_rl", "path": "sft/checkpoints", "flag": "init.checkpoint_dir",
                      "ready": "sft"},
        "stage": "per_app", "seed_fields": ["seed"]}
    arms["few_shot_all_app"] = {"results_of": "few_shot_per_app", "stage": "all_app"}
    arms["zero_shot_app"] = {"results_of": "few_shot_per_app", "stage": "start"}
    levels = ("instance", *LEVELS)
    return {
        "name": "cmdp_generalisation",
        "description": "Does RL's gain over SFT carry to unseen instances, templates and apps (AWG's CMDP levels)?",
        "arms": arms,
        "seeds": [0],
        "evaluation": {"metric": "online_success"},
        "comparisons": [[f"sft_{lv}", f"{rl}_{lv}"] for lv in levels for rl in ("semi_online_rl", "grpo")]
        + [["zero_shot_app", "few_shot_per_app"], ["zero_shot_app", "few_shot_all_app"]],
    }
