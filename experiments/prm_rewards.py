"""The reward model as a reward (GUI-Shepherd, docs/algorithms.md §8-§9), from the shipped base on PhoneSim: PRM-PPO
against ORM-PPO and GRPO, and offline GRPO with the RM's reward against the oracle (rule) reward, one SFT start.

    python -m gui_jax.experiment experiments/prm_rewards.py [--parallel 2]

The start is the quickstart's SFT (QUICKSTART_RUN of experiments/online_vs_sft.py, same settings, so
the runner reuses its finished points); the online arms have that spec's budget at half the iterations (PPO_ITERATIONS =
120 of 8 tasks x 4 rollouts, actor lr 1e-4) on its task split (1,426 training tasks, 440 held-out tasks); the
offline arms have the quickstart's 240.
  export_sft     the SFT exported (configs/export.py), the reward model's starting weights;
  reward_model   the SFT's likelihood trained as the reward model (rm.model.scorer = policy_likelihood, 600 steps,
                 lr 3e-4; from the update-19,547 base: held-out step F1 0.84, outcome F1 0.73, reward_model_from_base.md);
  orm_ppo        outcome-reward PPO: the env's rule check on the last step, critic from the policy;
  prm_ppo        GUI-Shepherd's PRM-PPO: r_t = P(step t's action | the agent's prompt) under the reward model
                 + 0.1·[response parsed], no outcome term. GUI-Shepherd initialises the critic from its verdict
                 PRM; a likelihood RM has no verdict head, so the critic starts from the policy as in orm_ppo;
  grpo           trajectory GRPO (online_vs_sft's arm at PPO_ITERATIONS);
  offline_oracle UI-S1's offline-RL baseline inside the `semi_online_rl` run: single-step GRPO over the expert
                 steps, rewarded by the rule check against the expert action (GUI-Shepherd's oracle reward);
  offline_rm     the same offline GRPO rewarded by the reward model's score of each sampled action
                 (rl.offline_reward = rm); its quickstart run repeats the SFT with the same settings (the weights
                 match to float rounding, not bit for bit across code versions: `offline_rm_sft` is its own).
`start` is the orm_ppo run's greedy evaluation of the SFT before PPO (every online arm evaluates the same start on
the same tasks); `sft` is the same SFT in the quickstart's own (greedy) evaluation, the
start of the offline arms. Report: experiments/results/prm_rewards.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file

ONLINE_VS_SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "online_vs_sft.py")
LIKELIHOOD_RM = {"rm.model.scorer": "policy_likelihood"}
# PPO trains on every step of every rollout with a backbone-sized critic beside the actor: ~30-45 s an iteration on
# one core against GRPO's ~10, so the three online arms here get half online_vs_sft's budget (120 iterations of
# 8 tasks x 4 rollouts). Full size: PPO_ITERATIONS = 240 (~3 h an arm on one core).
PPO_ITERATIONS = 120
REWARDS = {
    "orm_ppo": {"online.step_reward": "none", "online.outcome_reward": 1.0},
    "prm_ppo": {"online.step_reward": "prm", "online.outcome_reward": 0.0, "online.prm_weight": 1.0,
                "online.format_weight": 0.1, **LIKELIHOOD_RM},
}


def reward_model_arms(sft_source: dict) -> dict:
    """`export_sft` and `reward_model` (the SFT's likelihood trained as the RM) from an SFT's checkpoints
    (`sft_source`: {arm, path[, ready]} of init_from), as this spec and verifier_n.py train them."""
    return {
        "export_sft": {"recipe": "configs/export.py", "init_from": {**sft_source, "flag": "export.checkpoint_dir"},
                       "report": False},
        "reward_model": {"recipe": "configs/reward_model.py",
                         "overrides": {**LIKELIHOOD_RM, "rm.train.learning_rate": 3e-4, "rm.train.num_steps": 600},
                         "init_from": {"arm": "export_sft", "path": "hf", "flag": "model.checkpoint"},
                         "report": False},
    }


def get_spec():
    online_vs_sft = load_python_file(ONLINE_VS_SFT)
    shared = online_vs_sft.get_spec()["arms"]
    from_sft = {"arm": "semi_online_rl", "path": "sft/checkpoints", "flag": "init.checkpoint_dir", "ready": "sft"}
    arms = {
        "semi_online_rl": online_vs_sft.QUICKSTART_RUN,
        **reward_model_arms(from_sft),
        "start": {"results_of": "orm_ppo", "stage": "start"},
        "sft": {"results_of": "semi_online_rl", "stage": "sft"},
        "offline_oracle": {"results_of": "semi_online_rl", "stage": "offline_rl"},
        "offline_rm_sft": {"results_of": "offline_rm", "stage": "sft"},
        "offline_rm": {"recipe": "configs/quickstart.py", "stage": "offline_rl",
                       "overrides": {**online_vs_sft.QUICKSTART_RUN["overrides"], "semi_online_rl": False,
                                     "rl.offline_reward": "rm", "rl.rm_scorer": "policy_likelihood"},
                       "init_from": {"arm": "reward_model", "path": "rm/checkpoints", "flag": "rl.rm_checkpoint_dir"},
                       "seed_fields": online_vs_sft.QUICKSTART_RUN["seed_fields"]},
    }
    split, budget = online_vs_sft.QUICKSTART_SPLIT, {**online_vs_sft.BUDGET, "online.iterations": PPO_ITERATIONS}
    grpo = online_vs_sft.from_quickstart(shared["grpo"])
    arms["grpo"] = {**grpo, "overrides": {**grpo["overrides"], **budget}}
    for name, reward in REWARDS.items():
        inits = [from_sft]
        if name == "prm_ppo":
            inits.append({"arm": "reward_model", "path": "rm/checkpoints", "flag": "online.rm_checkpoint_dir"})
        arms[name] = {"recipe": "configs/ppo.py", "overrides": {**split, **budget, **reward}, "stage": "ppo",
                      "init_from": inits if len(inits) > 1 else inits[0], "seed_fields": ["seed", "online.seed"]}
    return {
        "name": "prm_rewards",
        "description": "Does the reward model help as a reward: PRM-PPO against outcome-reward PPO (ORM) and GRPO, "
                       "and offline GRPO with the RM's reward against the oracle reward, from one SFT start?",
        "arms": arms,
        "seeds": [0],
        "evaluation": {"metric": "online_success"},
        "comparisons": [["start", "orm_ppo"], ["start", "prm_ppo"], ["start", "grpo"], ["orm_ppo", "prm_ppo"],
                        ["grpo", "prm_ppo"], ["grpo", "orm_ppo"],
                        ["sft", "offline_oracle"], ["offline_rm_sft", "offline_rm"], ["offline_oracle", "offline_rm"]],
    }
