"""Job: a success judge for tasks without a rule check, measured on tasks that have one.

    python -m gui_jax.main --config configs/judge_eval.py \
        --config.judge.policy_checkpoint_dir=runs/quickstart/sft/checkpoints \
        --config.judge.rm_checkpoint_dir=runs/reward_model/rm/checkpoints

Real apps (AndroidWorld tasks without a checker, a user's own device) have no rule that says whether an episode
succeeded; a judge model has to. Two judges ask the reward model's outcome question of each episode (the goal, the
trajectory, the final screen → P(+) of the verdict token, docs/algorithms.md §9):
  prompted  the policy backbone, zero-shot (`judge.prompted_checkpoint_dir`; '' = model.checkpoint, the base);
            `judge.prompted_scorer=policy_likelihood` asks it instead how likely it is to end the episode as it
            ended (its probability of writing the final step: rewards/likelihood.py), a confidence, no question;
  rm        the trained outcome reward model (UI-Genie / GUI-Shepherd; `judge.rm_checkpoint_dir` or rm_hf_dir),
            scored as it was trained (`rm.model.scorer`).
The policy runs the held-out PhoneSim tasks at `judge.temperature` (sampled, so successes and failures mix); each
judge calls an episode a success at P(+) ≥ `judge.threshold`, and PhoneSim's own check is the truth: agreement
(Wilson 95 %), precision, recall, F1, Cohen's κ, AUROC, judged against true success rate. Outputs results.json,
results.md, episodes.jsonl (per episode: the check's verdict and every judge's score).
Either judge can stand in for the check as online RL's task-success reward: `online.reward=rm` with
`online.rm_checkpoint_dir` set to the RM's folder, or to a policy's stage folder for the prompted judge.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import time

from gui_jax.config_check import ConfigError
from gui_jax.jobs import common

JUDGES = ("prompted", "rm")
PROMPTED_SCORERS = ("verdict", "policy_likelihood")


def check_judge_config(config) -> None:
    """ConfigError naming the first bad field (the shared blocks first, then `judge`)."""
    from gui_jax.config_check import check_config
    from gui_jax.jobs.verifier_eval import _fail, _is_int, check_rm_source, check_search_fields
    check_config(config)
    if "judge" not in config:
        raise ConfigError("config has no 'judge' block; start from configs/judge_eval.py")
    j = config.judge
    judges = j.judges
    if isinstance(judges, str) or not judges or any(x not in JUDGES for x in judges) or len(set(judges)) != len(judges):
        _fail("judge.judges", judges, f"expected distinct names from {JUDGES}, e.g. ('prompted', 'rm')")
    check_search_fields(config, "judge")
    if not _is_int(j.trials) or j.trials < 1:
        _fail("judge.trials", j.trials, "expected an integer ≥ 1")
    if j.trials > 1 and j.temperature <= 0:
        _fail("judge.trials", j.trials, "several trials of a greedy policy repeat one episode; set judge.temperature > 0")
    if not isinstance(j.threshold, (int, float)) or isinstance(j.threshold, bool) or not 0 < j.threshold < 1:
        _fail("judge.threshold", j.threshold, "expected a number in (0, 1)")
    if j.prompted_scorer not in PROMPTED_SCORERS:
        _fail("judge.prompted_scorer", j.prompted_scorer, f"expected one of {PROMPTED_SCORERS}")
    if "rm" in judges:
        check_rm_source(config, "judge")


def rollout_env(config):
    """The env block the judged episodes run on: PhoneSim at data.resolution (as the other PhoneSim jobs), else
    env.backend's own."""
    from gui_jax.envs.factory import backend_of
    env = copy.deepcopy(config.env)
    if backend_of(env) == "phonesim":
        env.resolution = tuple(config.data.resolution)
    return env


def judge_weights(config, name: str):
    """(agent, source) of a judge: the prompted backbone or the trained reward model."""
    from gui_jax.jobs.verifier_eval import load_policy, load_reward_model
    if name == "prompted":
        return load_policy(config, config.judge.prompted_checkpoint_dir, "judge.prompted_checkpoint_dir")
    return load_reward_model(config, "judge")


def format_table(judges: dict, n: int, true_rate: float) -> str:
    lines = [f"Judges against PhoneSim's success check on {n} held-out episodes (true success rate {true_rate:.3f});"
             " [lo, hi] = Wilson 95 %.", "",
             "| judge | agreement | precision | recall | F1 | κ | AUROC | judged SR | tp / fp / fn / tn |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, m in judges.items():
        lo, hi = m["agreement_ci95"]
        lines.append(f"| {name} | {m['agreement']:.3f} [{lo:.3f}, {hi:.3f}] | {m['precision']:.3f} | "
                     f"{m['recall']:.3f} | {m['f1']:.3f} | {m['kappa']:.3f} | {m['auroc']:.3f} | "
                     f"{m['judged_rate']:.3f} | {m['tp']} / {m['fp']} / {m['fn']} / {m['tn']} |")
    return "\n".join(lines)


def run(config, workdir: str) -> None:
    from gui_jax.eval.metrics import judge_agreement
    from gui_jax.eval.online_success import rollout_records
    from gui_jax.jobs.reward_model import rm_configs
    from gui_jax.jobs.verifier_eval import held_out_tasks, load_policy
    from gui_jax.train.online.rewards import RMTrajectoryScorer
    check_judge_config(config)
    os.makedirs(workdir, exist_ok=True)
    j = config.judge
    common.check_reachable(config)
    _, test_tasks, _, _ = common.prepare(config, workdir, sides=())
    tasks = held_out_tasks(config, test_tasks)
    overlaps = common.checkpoint_overlaps(tasks, policy=j.policy_checkpoint_dir,
                                          reward_model=j.rm_checkpoint_dir if "rm" in j.judges else "")
    pcfg, rcfg = rm_configs(config)
    scorers = {"prompted": j.prompted_scorer, "rm": rcfg.scorer}  # the RM scores as it was trained (rm.model.scorer)
    t0 = time.time()
    policy, policy_source = load_policy(config, j.policy_checkpoint_dir, "judge.policy_checkpoint_dir")
    print(f"judge_eval: policy {policy_source} on {len(tasks)} held-out tasks x {j.trials} at temperature "
          f"{j.temperature}; judges {tuple(j.judges)}")
    records = rollout_records(policy.policy, tasks, pcfg, rollout_env(config), trials=int(j.trials),
                              temperature=float(j.temperature), max_steps=int(j.max_steps), seed=int(j.seed))
    del policy
    done = [r for r in records if r.status == "completed"]
    if not done:
        raise RuntimeError(f"judge_eval: none of {len(records)} episodes completed (env failures): nothing to judge")
    truth = [bool(r.success) for r in done]
    results, scores = {}, {}
    for name in j.judges:
        agent, source = judge_weights(config, name)
        scorer = RMTrajectoryScorer(agent, pcfg, dataclasses.replace(rcfg, scorer=scorers[name]))
        scores[name] = scorer.outcome_scores(done).tolist()
        results[name] = {**judge_agreement(scores[name], truth, float(j.threshold)), "weights": source,
                         "scorer": scorers[name], "unscorable": scorer.unscorable}
        del agent, scorer
    with open(os.path.join(workdir, "episodes.jsonl"), "w") as f:
        for i, r in enumerate(done):
            f.write(json.dumps({"task_id": r.task_id, "trial": r.trial,
                                "template": getattr(r.task, "template", ""), "steps": len(r.steps),
                                "success": truth[i], **{f"{k}_score": v[i] for k, v in scores.items()}}) + "\n")
    true_rate = sum(truth) / len(truth)
    out = {"judges": results, "episodes": len(done), "env_failures": len(records) - len(done),
           "true_success_rate": true_rate, "policy": policy_source, "threshold": float(j.threshold),
           "temperature": float(j.temperature), "trials": int(j.trials), "seed": int(j.seed), **overlaps,
           "profile": {"seconds": round(time.time() - t0, 1)}}
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(out, f, indent=1, default=float)
    table = format_table(results, len(done), true_rate)
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(f"# Success judges on held-out {common.backend_name(config)} tasks\n\n{table}\n")
    print(table)
