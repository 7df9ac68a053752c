"""Does drawing semi-online RL's tasks by template learnability give the quickstart its RL gain in half the budget?

    python -m gui_jax.experiment experiments/rl_task_draw.py [--parallel 2]
    python -m gui_jax.experiment experiments/rl_task_draw.py --point=learnability/seed=0   # one arm, one seed

From the quickstart's SFT most rollout groups are uniform (every rollout right: reward mean 0.92), dynamic
sampling drops them and draws again (~3 tries an iteration), so 240 iterations (~26 min with SFT on 2 cores) were
needed for a significant gain. `rl.template_sampling=learnability` draws templates in proportion to their rate of
informative groups, learnt as the run goes (gui_jax/rl/selective.py). Each seed trains one SFT (online_vs_sft.py's
`sft` arm; the runner reuses its finished points), and each arm is the quickstart's semi-online RL from it
(`init.checkpoint_dir`) for 120 iterations of 8 tasks x 4 rollouts, lr 1e-4, the task draw changed:
  uniform        the shuffled draw (the recipe's default);
  learnability   templates by their informative-group rate (floor 0.2 uniform).
About 15 min an arm on one core. Report: experiments/results/rl_task_draw.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file
from gui_jax.experiment_spec import variant_arms

ONLINE_VS_SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "online_vs_sft.py")
ITERATIONS = 120
VARIANTS = {"uniform": {}, "learnability": {"rl.template_sampling": "learnability"}}


def get_spec():
    sft = load_python_file(ONLINE_VS_SFT).get_spec()["arms"]["sft"]
    from_sft = {"arm": "sft", "path": "sft/checkpoints", "flag": "init.checkpoint_dir", "ready": "sft"}
    semi = {"recipe": "configs/quickstart.py", "stage": "semi_online_rl", "init_from": from_sft,
            "overrides": {"rl.iterations": ITERATIONS}, "seed_fields": ["seed", "rl.seed"]}
    return {
        "name": "rl_task_draw",
        "description": "Does a learnability-weighted task draw give semi-online RL its gain in 120 iterations?",
        "arms": {"sft": sft, "start": {"results_of": "uniform", "stage": "sft"}, **variant_arms(semi, VARIANTS)},
        "seeds": [0, 1, 2],
        "evaluation": {"metric": "online_success"},
        "comparisons": [["start", "uniform"], ["start", "learnability"], ["uniform", "learnability"]],
    }
