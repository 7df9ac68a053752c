"""PRM-PPO against ORM-PPO on PhoneSim (GUI-Shepherd, docs/algorithms.md §8–§9): the same SFT start, the same
reward model, the same held-out tasks (the quickstart's six easy templates, 216 tasks).

    python -m gui_jax.experiment experiments/prm_ppo.py [--parallel 2]

Both arms run the online_rl job (configs/ppo.py) from START's SFT checkpoints:
  orm_ppo  the outcome-reward baseline: the env's rule check on the last step + w_f·[response parsed] per step,
           critic from the policy;
  prm_ppo  GUI-Shepherd: r_t = w_p·P(+ | step t) of the reward model + w_f·[response parsed], no outcome term,
           critic initialised from the reward model.
`start` is the orm_ppo run's evaluation before PPO (both arms evaluate the same start on the same tasks).
START and RM are the outputs of earlier runs: a quickstart's SFT stage and a reward_model job's RM. Report:
experiments/results/prm_vs_orm_ppo.{md,json,png} (the former script of this name wrote prm_ppo.md, with the
training curves too).
"""

START = "runs/qs_default/sft/checkpoints"  # python -m gui_jax.main --config configs/quickstart.py --workdir runs/qs_default
RM = "runs/rm_sftinit/rm/checkpoints"      # the reward_model job's RM (experiments/results/reward_model_sft_init.md)
COMMON = {
    "init.checkpoint_dir": START, "online.rm_checkpoint_dir": RM, "online.iterations": 24,
    "online.prm_weight": 1.0, "online.format_weight": 0.1,
    "data.templates": ("messages.open_thread", "music.play", "tasks.complete", "clock.alarm_toggle",
                       "expenses.amount", "settings.storage_answer"),
    "data.difficulties": ("easy",), "data.test_seed_range": (1000, 1045), "data.num_test_episodes": 216,
}
REWARDS = {  # orm_ppo keeps the recipe's online.critic_init "": its critic starts from the policy
    "orm_ppo": {"online.step_reward": "none", "online.outcome_reward": 1.0},
    "prm_ppo": {"online.step_reward": "prm", "online.outcome_reward": 0.0, "online.critic_init": "rm"},
}


def get_spec():
    arms = {name: {"recipe": "configs/ppo.py", "overrides": {**COMMON, **reward}} for name, reward in REWARDS.items()}
    arms["start"] = {"results_of": "orm_ppo", "stage": "start"}
    return {
        "name": "prm_vs_orm_ppo",
        "description": "Does PPO with the reward model's dense step reward (PRM) beat outcome-reward PPO (ORM) "
                       "from the same SFT start?",
        "arms": arms,
        "seeds": [0],
        "seed_fields": ["seed", "online.seed"],
        "evaluation": {"metric": "online_success", "stage": "ppo"},  # online_rl: {task id: 0/1} per stage
        "comparisons": [["start", "orm_ppo"], ["start", "prm_ppo"], ["orm_ppo", "prm_ppo"]],
    }
