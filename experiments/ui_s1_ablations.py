"""UI-S1's ablations from one SFT start: the discount γ of the step returns (paper Fig. 6), the weight ω of the
step-level advantage in A = A^E + ω·A^S, and the Patch Module's budget ε (0 = no patch: a rollout stops at its
first mismatch with the expert; −1 = unlimited; paper Table 1 compares patching against none).

    python -m gui_jax.experiment experiments/ui_s1_ablations.py [--parallel 2]
    python -m gui_jax.experiment experiments/ui_s1_ablations.py --point=gamma_0/seed=0   # one arm, one seed

Each seed trains one SFT (online_vs_sft.py's `sft` arm: the quickstart with no RL stage); every arm is the
quickstart's semi-online RL started from that SFT's checkpoints (`init.checkpoint_dir`, no SFT of its own) with
online_vs_sft's budget (240 iterations of 8 tasks x 4 rollouts, lr 1e-4), one setting changed. The patch
strategy's thought variants need a model that writes thoughts (the tiny base does not), so only the budget ε is
ablated here. About 30 min an arm on one core; 6 arms x 3 seeds is the full size.
Report: experiments/results/ui_s1_ablations.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file
from gui_jax.experiment_spec import variant_arms

ONLINE_VS_SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "online_vs_sft.py")
VARIANTS = {"default": {}, "gamma_0": {"rl.gamma": 0.0}, "gamma_0.9": {"rl.gamma": 0.9},
            "omega_0": {"rl.omega": 0.0}, "no_patch": {"rl.patch_threshold": 0},
            "patch_unlimited": {"rl.patch_threshold": -1}}


def get_spec():
    online_vs_sft = load_python_file(ONLINE_VS_SFT)
    sft = online_vs_sft.get_spec()["arms"]["sft"]
    from_sft = {"arm": "sft", "path": "sft/checkpoints", "flag": "init.checkpoint_dir", "ready": "sft"}
    semi = {"recipe": "configs/quickstart.py", "stage": "semi_online_rl", "init_from": from_sft,
            "overrides": {"rl.iterations": 240}, "seed_fields": ["seed", "rl.seed"]}
    arms = {"sft": sft, "start": {"results_of": "default", "stage": "sft"}, **variant_arms(semi, VARIANTS)}
    return {
        "name": "ui_s1_ablations",
        "description": "Which parts of UI-S1's semi-online RL matter here: γ, ω and the patch budget, from one SFT?",
        "arms": arms,
        "seeds": [0, 1, 2],
        "evaluation": {"metric": "online_success"},
        "comparisons": [["start", "default"]] + [["default", v] for v in VARIANTS if v != "default"],
    }
