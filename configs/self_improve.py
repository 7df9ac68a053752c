"""UI-Genie self-improvement: reward-guided beam search → SFT on the synthesised successes, round by round.

    python -m gui_jax.main --config configs/self_improve.py \
        --config.self_improve.rm_checkpoint_dir=runs/reward_model/rm/checkpoints [--workdir runs/self_improve]
Round 0's policy is `self_improve.policy_checkpoint_dir` (e.g. runs/quickstart/sft/checkpoints) or the tiny
model after `sft` on the expert episodes; each round evaluates online SR on the held-out tasks (Wilson 95 %,
McNemar vs round 0), synthesises successful trajectories on fresh train tasks with the reward model
(configs/reward_model.py) guiding a beam search, fine-tunes the policy on expert + synthesised episodes and
the RM on the grown reward data (rm_retrain).
Re-run the same command to resume: finished rounds are not redone.
"""

import ml_collections

from gui_jax.train.online.config import env_block
from gui_jax.train.config_blocks import sft_block, sibling_recipe
from gui_jax.train.rm_training import reward_model_block


def get_config():
    c = sibling_recipe(__file__, "reward_model").get_config()
    c.job = "self_improve"
    c.data.num_train_episodes = 300      # expert episodes in every round's SFT data
    c.data.num_test_episodes = 120       # held-out online tasks (≥ 100)
    si_sft = sft_block()                 # per-round fine-tuning, continuing from the round's policy
    si_sft.num_steps, si_sft.batch_size, si_sft.micro_batch_size = 100, 16, 16
    si_sft.learning_rate, si_sft.warmup_steps, si_sft.checkpoint_every = 5e-4, 10, 50
    si_rm = reward_model_block()         # per-round RM fine-tuning on the grown reward data
    si_rm.num_steps, si_rm.batch_size, si_rm.micro_batch_size = 100, 16, 16
    si_rm.learning_rate, si_rm.warmup_steps, si_rm.checkpoint_every = 5e-4, 10, 50
    c.self_improve = ml_collections.ConfigDict({
        "policy_checkpoint_dir": "",     # round 0's policy ('' = the model after `sft` on the expert episodes)
        "rm_checkpoint_dir": "",         # the reward_model job's rm/checkpoints
        "rm_hf_dir": "",                 # or a Hugging Face RM directory
        "rm_untrained": False,           # a random RM (smoke tests only)
        "rounds": 2,                     # R: rounds 0 … R are evaluated, R of them synthesise + fine-tune
        "tasks_per_round": 48,           # train tasks searched per round
        "synth_seed_range": (400, 1000),  # seeds of the searched tasks, a disjoint slice per round
        "templates": (),                 # () = data.templates
        # the expert episodes' templates (every round's SFT data and the RM's base records; () = data.templates):
        # fewer than data.templates leaves the search tasks no expert episode covers (held-out tasks keep data.*)
        "expert_templates": (),
        "max_optimal_steps": (3,),       # per round, the last repeats (UI-Genie: task sets grow in complexity)
        "beam_width": 5,                 # partial trajectories kept (UI-Genie: 5)
        "num_candidates": 10,            # policy samples per partial trajectory and step (UI-Genie: 10)
        "temperature": 1.0,              # sampling temperature of the candidates
        "max_steps": 6,                  # step limit of searched and evaluated episodes
        "seed": 0,                       # task i of a round searches with seed + i
        "sft": si_sft,
        # UI-Genie's co-evolution: after each round the RM is fine-tuned too, on the core reward records of the
        # expert episodes plus every round's synthesised successes and failed trajectories so far, and the next
        # round searches with it; its held-out F1 is measured every round. False = one fixed RM for all rounds.
        "rm_retrain": True,
        # rm_retrain's data: each failed searched trajectory as a negative outcome record (UI-Genie keeps them);
        # False leaves the RM's grown data to the successes (their steps, outcomes and truncations)
        "rm_failed_outcomes": True,
        "synthesise": True,              # False: the expert-only control: the same rounds of SFT on the expert
                                         # episodes alone, no search and no reward model (rm_retrain=False)
        "rm_train": si_rm,
        "progress": True,
    })
    c.env = env_block()  # where online episodes run: --config.env.backend=android|androidworld|... (docs/devices.md)
    return c
