"""GUI-Shepherd's PRM as a best-of-n verifier (Alg. 2, docs/algorithms.md §9) from the shipped base on PhoneSim:
held-out online SR against n, each seed its own SFT, reward model and sampling.

    python -m gui_jax.experiment experiments/verifier_n.py [--parallel 2]
    python -m gui_jax.experiment experiments/verifier_n.py --point=verifier/seed=1   # after its inputs

  sft           the quickstart's SFT alone (online_vs_sft.py's `sft` arm: the runner reuses its finished points);
  export_sft    that SFT exported (configs/export.py), the reward model's starting weights;
  reward_model  the SFT's likelihood trained as the reward model (rm.model.scorer = policy_likelihood, 600 steps,
                lr 3e-4, as in prm_rewards.py; experiments/results/reward_model_from_base.md);
  verifier      configs/verifier_eval.py on the quickstart's 440 held-out tasks: at every step the SFT samples n
                candidates at temperature 1 and the reward model keeps the one it scores highest, for n = 1, 2, 4,
                8 on the same tasks and per-task sampling seeds (verifier.seed = the experiment seed), and the
                greedy policy without a verifier beside them.
  verifier_self the same with the SFT's own likelihood (untrained) as the scorer.
`n1` … `n8` and `greedy` read the verifier run's stages, `self_n1` … `self_n8` verifier_self's. The claim (n = 1,
2, 4, 8 non-decreasing, n = 8 above n = 1) is read off the adjacent comparisons and n1 -> n8. ~60 min a seed on
one core: the reward model ~31 min, each verifier run ~10-25 min (+ a 12-min SFT where no finished one is reused).
Report: experiments/results/verifier_n.{md,json,png}.
"""
import os

from gui_jax.core.recipe_files import load_python_file

HERE = os.path.dirname(os.path.abspath(__file__))
ONLINE_VS_SFT, PRM_REWARDS = os.path.join(HERE, "online_vs_sft.py"), os.path.join(HERE, "prm_rewards.py")
NS = (1, 2, 4, 8)


def get_spec():
    sft = load_python_file(ONLINE_VS_SFT).get_spec()["arms"]["sft"]
    prm_rewards = load_python_file(PRM_REWARDS)
    from_sft = {"arm": "sft", "path": "sft/checkpoints"}
    arms = {
        "sft": sft,
        **prm_rewards.reward_model_arms(from_sft),
        "verifier": {"recipe": "configs/verifier_eval.py",
                     "overrides": {**prm_rewards.LIKELIHOOD_RM, "data.num_test_episodes": 440, "verifier.ns": NS},
                     "init_from": [{**from_sft, "flag": "verifier.policy_checkpoint_dir"},
                                   {"arm": "reward_model", "path": "rm/checkpoints",
                                    "flag": "verifier.rm_checkpoint_dir"},
                                   {"arm": "export_sft", "path": "hf", "flag": "model.checkpoint"}],
                     "seed_fields": ["seed", "verifier.seed"], "report": False},
        **{f"n{n}": {"results_of": "verifier", "stage": f"n={n}"} for n in NS},
        "greedy": {"results_of": "verifier", "stage": "greedy"},
    }
    # the same selection by the SFT's own likelihood (the policy as its own implicit PRM, untrained): what the
    # reward model's training adds, and where best-of-n tends as n grows (the scorer's most likely action)
    self_scored = [init if init["flag"] != "verifier.rm_checkpoint_dir" else {**from_sft, "flag": init["flag"]}
                   for init in arms["verifier"]["init_from"]]
    arms["verifier_self"] = {**arms["verifier"], "init_from": self_scored}
    arms.update({f"self_n{n}": {"results_of": "verifier_self", "stage": f"n={n}"} for n in NS})
    return {
        "name": "verifier_n",
        "description": "Does best-of-n selection by the reward model (trained, or the SFT's own likelihood) raise "
                       "held-out online SR with n (n = 1, 2, 4, 8)?",
        "arms": arms,
        "seeds": [1, 2, 0],
        "evaluation": {"metric": "online_success"},
        "comparisons": [[f"{v}{a}", f"{v}{b}"] for v in ("n", "self_n") for a, b in zip(NS, NS[1:])]
                       + [["n1", "n8"], ["n8", "greedy"], ["self_n1", "self_n8"], ["self_n8", "n8"]],
    }
