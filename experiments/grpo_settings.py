"""Which settings let trajectory GRPO (and AdaGRPO) beat their SFT start here: AWG's group size, the KL weight and
twice the iteration budget.

    python -m gui_jax.experiment experiments/grpo_settings.py [--parallel 2]

online_vs_sft.py's GRPO arm uses 8 tasks x 4 rollouts an iteration and AWG's KL weight β = 0.05, where AWG
samples 8 rollouts per task (2 tasks a step) and MobileRL's AdaGRPO (which does beat the SFT there) runs with
β = 1e-4. Same start (online_vs_sft's `sft` arm; the runner reuses its finished points), same budget of 32
rollouts an iteration for 240 iterations at lr 1e-4, one setting changed an arm:
  grpo          online_vs_sft's arm (its finished points are reused);
  grpo_group8   8 rollouts of 4 tasks an iteration (AWG's group size);
  grpo_kl_low   β = 1e-4 (AdaGRPO's);
  grpo_long     480 iterations (twice the budget: the training reward was still rising at 240);
  adagrpo_long  online_vs_sft's AdaGRPO arm at 480 iterations.
The long arms keep a checkpoint every 40 iterations (`python -m gui_jax.jobs.paired_checkpoints` reads the curve).
~25 min an arm on one core, ~50 the long ones. Report: experiments/results/grpo_settings.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file
from gui_jax.experiment_spec import variant_arms

ONLINE_VS_SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "online_vs_sft.py")
LONG = {"online.iterations": 480, "online.checkpoint_every": 40, "online.checkpoints_kept": 0}
VARIANTS = {"grpo_group8": {"online.num_rollouts": 8, "online.episodes_per_iteration": 4},
            "grpo_kl_low": {"online.kl_coef": 1e-4}, "grpo_long": LONG}


def get_spec():
    arms = dict(load_python_file(ONLINE_VS_SFT).get_spec()["arms"])
    grpo, adagrpo = arms["grpo"], arms["adagrpo"]
    # each arm against the start it evaluated itself: online_vs_sft's seed-0 GRPO point started from an SFT of an
    # earlier code version (the same settings, other float rounding: greedy SR 0.680 against 0.698)
    variants = {**variant_arms(grpo, VARIANTS), **variant_arms(adagrpo, {"adagrpo_long": LONG})}
    starts = {f"start_{v}": {"results_of": v, "stage": "start"} for v in variants}
    arms = {"sft": arms["sft"], "grpo": grpo, "start": {"results_of": "grpo", "stage": "start"}, **starts, **variants}
    return {
        "name": "grpo_settings",
        "description": "Does GRPO beat its SFT start with AWG's group size (8), AdaGRPO's KL weight (1e-4) or twice "
                       "the iterations (480; AdaGRPO too)?",
        "arms": arms,
        "seeds": [0, 1, 2],
        "evaluation": {"metric": "online_success"},
        "comparisons": [["start", "grpo"]] + [[f"start_{v}", v] for v in variants] + [["grpo", v] for v in VARIANTS]
                       + [["grpo_long", "adagrpo_long"]],
    }
