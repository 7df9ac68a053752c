"""The unified step/outcome reward model on PhoneSim (UI-Genie data engine, label-token cross-entropy).

    python -m gui_jax.main --config configs/reward_model.py [--workdir runs/reward_model]
Starts from the quickstart's split, task filters and tiny model; builds reward records from the expert
episodes (expert / rule-verified / truncation / substitution / continuation; optionally hard negatives
mined with an earlier RM and potential step labels of failed trajectories), trains the RM with class
balancing (resumable: re-run the same command) and reports held-out step and outcome F1 by length bucket
and difficulty (results.md). The tiny recipe shows the last `rm.model.history_images` steps with their UI
text (0 here: older steps as text lines keep prompts short); the paper setting is 5 screenshots.
"""

import ml_collections

from gui_jax.train.rm_training import reward_model_block

from gui_jax.train.config_blocks import rm_data_block, sibling_recipe


def get_config():
    c = sibling_recipe(__file__, "quickstart").get_config()
    c.job = "reward_model"
    c.data.num_train_episodes = 300
    c.data.num_test_episodes = 60
    c.rm = ml_collections.ConfigDict({
        "model": {                       # RewardModelConfig
            "label_pos": " yes",
            "label_neg": " no",
            "history_images": 0,         # steps shown with their observation (paper: 5 screenshots)
            "max_text_history": 20,
            "rationale": False,          # GUI-Shepherd CoT variant: rationale before the label
            "rationale_max_tokens": 64,
            "system_prompt": False,
            # clicks carry their target's label ("→ 08:30 Call mom ON"): the tiny RM reads UI text, and
            # otherwise has to look the element index up among the lines
            "describe_targets": True,
            "batch_size": 32,
            "max_prompt_tokens": 8192,
            # verdict: one label token after a judge prompt (UI-Genie); policy_likelihood: the model as a
            # policy, P(candidate | the agent's own prompt), trained by (un)likelihood (gui_jax/rewards/likelihood.py)
            "scorer": "verdict",
            # policy_likelihood: the lowest of the record's score and each earlier step's (a wrong step marks
            # every later one and its trajectory)
            "history_min": False,
            # history_min: only earlier steps with P < history_gate count (1.0 = all of them)
            "history_gate": 1.0,
        },
        # expert / rule / sibling / truncation / substitution / continuation records; off by default: hard
        # negatives mined with an earlier RM (hard_negative_checkpoint) and potential labels of failed
        # trajectories (potential_labels); each field's meaning: --help or gui_jax/train/config_blocks.py RM_DATA
        "data": rm_data_block(),
        "train": reward_model_block(),
        "export_dir": "",                # write the trained RM as a Hugging Face directory here
    })
    t = c.rm.train
    t.num_steps, t.batch_size, t.micro_batch_size = 300, 16, 16
    # 1e-3: at 2e-3 a run on the fixed data collapsed to one score for every record
    t.learning_rate, t.warmup_steps, t.checkpoint_every = 1e-3, 20, 50
    t.balance = "reweight"
    return c
