"""Online RL job (GRPO / AdaGRPO / PPO on live envs): SFT start → online RL → held-out online eval.

    python -m gui_jax.main --config configs/grpo_online.py [--workdir runs/grpo_online]
    ... --config.env.backend=remote --config.env.server_urls='("http://127.0.0.1:8000",)'  # env servers
    ... --config.env.backend=android --config.env.serials='("emulator-5554",)' --config.env.tasks='("Settings|Turn on Wi-Fi",)'
    ... --config.env.backend=androidworld --config.env.server_urls='("http://127.0.0.1:5000",)'  # its suite

Envs come from `config.env` (gui_jax/envs/factory.py: one backend table for every job that runs episodes).

The starting point is `init.checkpoint_dir` (a training stage's checkpoints folder) or a short SFT on
expert episodes of the train split. Held-out evaluation runs greedy episodes through the same env
pool (in process or remote) before and after RL: success rate with its Wilson 95 % interval over
completed episodes, the paired exact McNemar test on tasks completed in both, and the rollout
report (completed / retried / env_failure). Resumable: finished stages are not redone.
Reward models (online.reward = rm, online.step_reward = prm, online.critic_init = rm): the RM is loaded
from online.rm_checkpoint_dir with the prompt settings of the config's `rm.model` block.
Outputs: sft/, online/ (checkpoints + critic), results.json, results.md, metrics.jsonl, and the first
`eval.save_trajectories` held-out episodes of each evaluation under trajectories/<stage>/ (gui_jax.view).
"""
from __future__ import annotations

import json
import os

from gui_jax.config_check import RunError
from gui_jax.eval.androidlab import records_report
from gui_jax.eval.metrics import bootstrap_mean_interval, sign_test, wilson_interval
from gui_jax.jobs.common import checkpoint_overlaps, overlap_lines, prepare, starting_point, without_held_out
from gui_jax.jobs.trajectories import FOLDER, report_line, save_records, saved_count
from gui_jax.rl.agent import Agent
from gui_jax.rl.prompting import PromptConfig
from gui_jax.rl.rollout import RolloutConfig, RolloutEngine, rollout_report
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.online import make_env_factory, make_pool, train_online


def evaluate_online_pool(agent, tasks, pcfg, config, *, seed: int = 0, temperature: float = 0.0,
                         trials: int = 1, save_to: str = "", reward_model=None) -> dict:
    """Held-out episodes through an env pool built from `config.env` (greedy by default; `trials`
    episodes per task at `temperature`): SR over completed episodes with a 95 % interval (Wilson for
    one trial per task; a bootstrap over tasks for several, whose trials are not independent),
    per-task outcomes for paired tests (0/1, or the success rate over the task's completed trials)
    and the rollout report. `save_to`: a folder for the first `eval.save_trajectories` episodes (the viewer's
    trajectory folders; with the reward model's outcome score when `reward_model` is given)."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if trials > 1 and temperature <= 0:
        raise ValueError(f"{trials} trials per task at temperature {temperature} repeat one greedy episode; "
                         "set a temperature > 0")
    render = pcfg.observation in ("screenshot", "both")
    max_steps = int(config.eval.max_steps)
    pool = make_pool(config.env, make_env_factory(config.env, render=render, max_steps=max_steps))
    rcfg = RolloutConfig(mode=config.online.rollout_mode, max_steps=max_steps, temperature=temperature,
                         batch_cap=config.online.batch_cap, max_staleness=None,
                         max_episode_retries=config.online.max_episode_retries, seed=seed)
    with pool, RolloutEngine(agent.policy, pool, pcfg, rcfg) as engine:
        records = engine.run(tasks, trials=trials)
    rep = rollout_report(records)
    saved = 0
    if save_to:
        kept = records[:saved_count(config)]
        scores = reward_model.outcome_scores(kept).tolist() if reward_model is not None and kept else None
        saved = save_records(kept, save_to, len(kept), rm_scores=scores)
    by_task: dict = {}
    for r in records:
        if r.status == "completed":
            by_task.setdefault(r.task_id, []).append(int(r.success))
    return {**success_summary(by_task, trials=trials, temperature=temperature, seed=seed), "rollout_report": rep,
            "androidlab": records_report(records), "trajectories_saved": saved}


def success_summary(by_task: dict, *, trials: int, temperature: float, seed: int = 0) -> dict:
    """{task_id: [0/1 per completed episode]} -> online SR over the episodes with its 95 % interval (Wilson for one
    trial per task; a bootstrap over tasks for several, whose trials are not independent) and the per-task
    outcomes for paired tests (0/1, or the task's success rate)."""
    k = sum(sum(v) for v in by_task.values())
    n = sum(len(v) for v in by_task.values())
    if trials == 1:
        per_task = {t: v[0] for t, v in by_task.items()}
        lo, hi = wilson_interval(k, n)
    else:
        per_task = {t: sum(v) / len(v) for t, v in by_task.items()}
        lo, hi = bootstrap_mean_interval(list(per_task.values()), seed=seed)
    return {"online_SR": k / n if n else float("nan"), "online_SR_ci95": [lo, hi], "n": n,
            "trials": trials, "temperature": temperature, "online_success": per_task}


def paired_p(before: dict, after: dict) -> float:
    """Exact sign test over the tasks completed (not env_failure) in both evaluations (exact McNemar
    when each task has one 0/1 outcome)."""
    common = sorted(set(before["online_success"]) & set(after["online_success"]))
    return sign_test([before["online_success"][t] for t in common], [after["online_success"][t] for t in common])["p"]


def format_results(results: dict) -> str:
    lines = ["| stage | online SR | 95 % CI | n | env_failure | retried | p (McNemar vs start) |",
             "|---|---|---|---|---|---|---|"]
    start = results.get("start")
    for name, r in results.items():
        p = "" if name == "start" or start is None else f"{paired_p(start, r):.3g}"
        rep = r["rollout_report"]
        lines.append(f"| {name} | {r['online_SR']:.3f} | [{r['online_SR_ci95'][0]:.3f}, {r['online_SR_ci95'][1]:.3f}] "
                     f"| {r['n']} | {rep['env_failure']} | {rep['retried']} | {p} |")
    return "\n".join(lines)


def load_trajectory_rm(config, pcfg):
    """The trained reward model the online block asks for (online.reward = rm, step_reward = prm or
    critic_init = rm), loaded from online.rm_checkpoint_dir with the RM prompt settings of `rm.model`
    (the reward_model recipe's block, as the RM was trained); None when no RM is needed."""
    from gui_jax.config_check import ConfigError
    from gui_jax.train.online.config import needs_reward_model, validate_online
    o = config.online
    try:
        validate_online(o)  # every online field before any work (its messages name "online.<field>")
    except ValueError as e:
        raise ConfigError(f"config.{e}") from None
    if not needs_reward_model(o):
        return None
    if not o.get("rm_checkpoint_dir"):
        raise ConfigError(f"config.online.rm_checkpoint_dir = {o.get('rm_checkpoint_dir', '')!r}: online.reward = "
                          f"{o.get('reward')!r}, step_reward = {o.get('step_reward')!r}, critic_init = "
                          f"{o.get('critic_init')!r} need a trained reward model: set it to the reward_model job's "
                          "rm/checkpoints (e.g. runs/reward_model/rm/checkpoints)")
    if "rm" not in config or "model" not in config.rm:
        raise ConfigError("config.rm.model is missing: the reward model's prompt settings (RewardModelConfig "
                          "fields, as in configs/reward_model.py) are needed to score with online.rm_checkpoint_dir")
    from gui_jax.jobs.verifier_eval import load_policy
    from gui_jax.rewards.rm_scoring import RewardModelConfig
    from gui_jax.train.online.rewards import RMTrajectoryScorer
    rm_agent, _ = load_policy(config, o.rm_checkpoint_dir, "online.rm_checkpoint_dir")
    return RMTrajectoryScorer(rm_agent, pcfg, RewardModelConfig(**config.rm.model.to_dict()))


def episode_tasks(config, workdir: str) -> tuple[list, list, list]:
    """(train tasks, held-out tasks, SFT episodes). Backends with their own task list (env.tasks; android,
    androidworld, miniwob) train on env.seeds and hold out env.eval_seeds of those tasks (PhoneSim's env.tasks less
    every held-out instance, which other seeds repeat); PhoneSim and env servers without env.tasks use the data
    split. The SFT start trains on the split's PhoneSim expert episodes either way."""
    from gui_jax.envs.factory import backend_tasks
    init_ckpt = config.init.checkpoint_dir if config.get("init") else ""
    sides = () if init_ckpt else ("train",)
    train_tasks, test_tasks, train_eps, _ = prepare(config, workdir, sides=sides)
    own = backend_tasks(config.env)
    if own is not None:
        train_tasks, test_tasks = own, backend_tasks(config.env, config.env.eval_seeds)
        # PhoneSim repeats instances across seeds
        train_tasks = without_held_out(train_tasks, test_tasks, "train tasks (env.tasks × env.seeds)")
        if not train_tasks:
            raise RunError(f"env.seeds: every train task ({len(own)}) repeats a held-out instance of "
                           f"env.eval_seeds; pick other seeds")
    return train_tasks, test_tasks, train_eps


def run(config, workdir: str) -> None:
    from gui_jax.envs.factory import check_reachable
    check_reachable(config.env)  # an offline device or server stops here, in one line, before any work
    init_ckpt = config.init.checkpoint_dir if config.get("init") else ""
    train_tasks, test_tasks, train_eps = episode_tasks(config, workdir)
    agent = Agent(config, seed=config.seed)
    pcfg = PromptConfig(**config.prompt.to_dict())
    logger = MetricsLogger(workdir)
    path = os.path.join(workdir, "results.json")
    results = json.load(open(path)) if os.path.exists(path) else {}

    def save():
        with open(path, "w") as f:
            json.dump(results, f, indent=1)

    reward_model = load_trajectory_rm(config, pcfg)  # before any work: a missing RM fails at once
    if init_ckpt and config.env.get("backend", "phonesim") in ("phonesim", "remote"):  # PhoneSim held-out tasks
        results.update(checkpoint_overlaps(test_tasks, start=init_ckpt))  # "held_out_vs_start"
        save()
    starting_point(agent, config, workdir, train_eps, pcfg, logger)
    start_params = agent.copy_params()
    if "start" not in results:
        results["start"] = evaluate_online_pool(agent, test_tasks, pcfg, config, seed=config.seed,
                                                save_to=os.path.join(workdir, FOLDER, "start"),
                                                reward_model=reward_model)
        save()
    algo = config.online.algorithm
    summary = train_online(agent, train_tasks, pcfg, config.online, env_cfg=config.env,
                           workdir=os.path.join(workdir, "online"), logger=logger, prefix=algo,
                           ref_params=start_params, reward_model=reward_model)
    if algo not in results:
        results[algo] = evaluate_online_pool(agent, test_tasks, pcfg, config, seed=config.seed,
                                             save_to=os.path.join(workdir, FOLDER, algo), reward_model=reward_model)
        results[algo]["train_rollout_report"] = summary["rollout_report"]
        save()
    logger.close()
    table = format_results({k: v for k, v in results.items() if k != "held_out_vs_start"})
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(table + f"\n\ngreedy online SR on {len(test_tasks)} held-out tasks; Wilson 95 % intervals over "
                        "completed episodes; p = exact McNemar on tasks completed in both\n")
        f.write(overlap_lines(results))
        saved = sum(r.get("trajectories_saved", 0) for r in results.values() if isinstance(r, dict))
        f.write("\n" + report_line(workdir, saved))
    print("\n" + table)
