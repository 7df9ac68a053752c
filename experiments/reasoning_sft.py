"""MobileRL's reasoning SFT between SFT and RL on PhoneSim, from the shipped base: does it raise online success
over its reasoning-free SFT start, and does RL from it end higher than RL from that SFT?

    python -m gui_jax.experiment experiments/reasoning_sft.py [--parallel 2]
    python -m gui_jax.experiment experiments/reasoning_sft.py --point=reasoning/seed=0   # one arm, one seed

Each seed trains one SFT (online_vs_sft.py's `sft` arm; the runner reuses its finished points). Arms:
  reasoning          the quickstart's reasoning stage from that SFT (`reasoning_sft=True`, the recipe's
                     `reasoning` block: round 0 fine-tunes 150 steps on PhoneSim's descriptions of the expert
                     steps as thoughts, in place of MobileRL's instruct model; round 1 samples 4 thoughts per
                     expert step, keeps those whose action matches the expert, fine-tunes 150 more steps);
  rl_from_sft        semi-online RL from the SFT for 120 iterations (rl_task_draw.py's `uniform` arm, reused);
  rl_from_reasoning  the same RL from the reasoning stage's weights.
Responses with a thought run up to ~40 tokens, so the arms that sample them decode up to 48. One seed: seed 0
resolved the reasoning stage's effect (0.705 -> 0.386, p 5e-30); add seeds to `seeds` to pool more.
About 25 min (reasoning) and 35 min (RL) a point on one core. Report: experiments/results/reasoning_sft.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file

HERE = os.path.dirname(os.path.abspath(__file__))
RL_ITERATIONS = 120   # rl_task_draw.py's budget: its `uniform` points are this spec's rl_from_sft


def get_spec():
    sft = load_python_file(os.path.join(HERE, "online_vs_sft.py")).get_spec()["arms"]["sft"]
    uniform = load_python_file(os.path.join(HERE, "rl_task_draw.py")).get_spec()["arms"]["uniform"]
    reasoning = {"recipe": "configs/quickstart.py", "stage": "reasoning_sft",
                 "init_from": {"arm": "sft", "path": "sft/checkpoints", "flag": "init.checkpoint_dir", "ready": "sft"},
                 "overrides": {"reasoning_sft": True, "semi_online_rl": False, "model.max_new_tokens": 48},
                 "seed_fields": ["seed", "reasoning.seed"]}
    last_round = "reasoning/round_1/checkpoints"   # the recipe's 2 rounds
    rl_from_reasoning = {"recipe": "configs/quickstart.py", "stage": "semi_online_rl",
                         "init_from": {"arm": "reasoning", "path": last_round, "flag": "init.checkpoint_dir",
                                       "ready": "reasoning_sft"},
                         "overrides": {"rl.iterations": RL_ITERATIONS, "model.max_new_tokens": 48},
                         "seed_fields": ["seed", "rl.seed"]}
    return {
        "name": "reasoning_sft",
        "description": "Does MobileRL's reasoning SFT raise online SR over its SFT start, and RL's end point?",
        "arms": {"sft": sft, "start": {"results_of": "reasoning", "stage": "sft"}, "reasoning": reasoning,
                 "rl_from_sft": uniform, "rl_from_reasoning": rl_from_reasoning},
        "seeds": [0],
        "evaluation": {"metric": "online_success"},
        "comparisons": [["start", "reasoning"], ["rl_from_sft", "rl_from_reasoning"], ["reasoning", "rl_from_reasoning"],
                        ["start", "rl_from_sft"]],
    }
