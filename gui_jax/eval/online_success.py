"""Online evaluation: success rate (greedy), pass@k over trials, by difficulty.

PhoneSim (env.backend = phonesim, or no env block): all (task, trial) episodes run in lock-step in process so the
policy samples one batch per step. Any other `env.backend` (devices, AndroidWorld, env servers, MiniWob++): the
episodes run through that backend's env pool (gui_jax/envs/factory.py) and the rollout engine. A response that
does not parse is a wasted step (the phone is left as it is; the step still counts).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Optional, Sequence

import numpy as np
from gui_jax.core.progress import progress as progress_bar

from gui_jax.core.dialects import ActionParseError, parse_response, scale_action_to_screen
from gui_jax.eval.androidlab import androidlab_report, expert_steps, reasonable_step, subgoals, trajectory_fields
from gui_jax.eval.metrics import mean_steps_to_success, pass_at_k, success_by_bucket
from gui_jax.rl.policy import Policy
from gui_jax.rl.prompting import PromptConfig, build_messages


def run_online_episodes(policy: Policy, tasks: Sequence, pcfg: PromptConfig, *, trials: int = 1,
                        temperature: float = 0.0, resolution=(540, 1200), max_steps: int = 15,
                        seed: int = 0, progress: bool = False, keep_trace: bool = False,
                        env_cfg=None) -> list[dict]:
    """One record per (task, trial): success, steps, invalid responses. keep_trace: also "trace", the
    (observation, action in screen pixels, or None for an unparsable response) of every step. `env_cfg`: the
    job's `env` block; a backend other than phonesim runs the episodes on it (`run_backend_episodes`)."""
    from gui_jax.envs.factory import backend_of
    if env_cfg is not None and backend_of(env_cfg) != "phonesim":
        if keep_trace:
            raise ValueError(f"keep_trace is PhoneSim-only; env.backend = {backend_of(env_cfg)!r}")
        return run_backend_episodes(policy, tasks, pcfg, env_cfg, trials=trials, temperature=temperature,
                                    max_steps=max_steps, seed=seed)
    from gui_jax.envs.sim.phonesim import PhoneSim  # envs sit below eval; imported lazily (heavy)
    render = pcfg.observation in ("screenshot", "both")
    runs = []
    for ti, task in enumerate(tasks):
        for k in range(trials):
            sim = PhoneSim(render=render, resolution=resolution, max_steps=max_steps, tree=True)
            runs.append({"task": task, "trial": k, "sim": sim, "obs": sim.reset(task), "history": [],
                         "done": False, "success": False, "steps": 0, "unparsable": 0, "trace": [],
                         "reasonable_ops": 0, "subgoals": None})
    pbar = progress_bar(total=max_steps, desc="online eval", disable=not progress, leave=False)
    for t in range(max_steps):
        live = [r for r in runs if not r["done"]]
        if not live:
            break
        prompts = [build_messages(r["task"].goal, r["history"], r["obs"], pcfg) for r in live]
        gens = policy.generate(prompts, temperature=temperature, seed=seed * 7907 + t)
        for r, g in zip(live, gens):
            obs = r["obs"]
            r["history"].append((obs, g.text))
            r["steps"] += 1
            try:
                _, action = parse_response(g.text, pcfg.dialect)
                if action.x is not None and render:
                    # Coordinates are pixels of the screenshot the model saw; without a
                    # screenshot in the prompt they are screen pixels already.
                    image_size = (obs.screenshot.shape[1], obs.screenshot.shape[0])
                    action = scale_action_to_screen(action, image_size, obs.screen_size)
                r["trace"].append((obs, action))
                r["obs"], done, info = r["sim"].step(action)
                r["reasonable_ops"] += reasonable_step(obs, action, r["obs"])
                r["subgoals"] = subgoals(info) or r["subgoals"]
            except ActionParseError:
                r["trace"].append((obs, None))
                r["unparsable"] += 1
                done = r["steps"] >= max_steps
                info = {"success": False}
            if done:
                r["done"], r["success"] = True, bool(info.get("success", False))
        pbar.update(1)
    pbar.close()
    return [{"task_id": r["task"].task_id, "difficulty": r["task"].difficulty, "trial": r["trial"],
             "success": r["success"], "steps": r["steps"], "unparsable": r["unparsable"],
             "reasonable_ops": r["reasonable_ops"], "expert_steps": expert_steps(r["task"]), "subgoals": r["subgoals"],
             **({"trace": r["trace"]} if keep_trace else {})} for r in runs]


def episode_row(record) -> dict:
    """A rollout engine's TrajectoryRecord as one record of `run_online_episodes` (plus its status: completed |
    env_failure; an env failure counts as no success)."""
    return {"task_id": record.task_id, "difficulty": getattr(record.task, "difficulty", None) or "none",
            "trial": record.trial, "success": bool(record.success) and record.status == "completed",
            "steps": len(record.steps), "unparsable": sum(s.action is None for s in record.steps),
            "status": record.status, **trajectory_fields(record)}


def run_backend_episodes(policy: Policy, tasks: Sequence, pcfg: PromptConfig, env_cfg, *, trials: int = 1,
                         temperature: float = 0.0, max_steps: int = 15, seed: int = 0) -> list[dict]:
    """The (task, trial) episodes on `env_cfg.backend` through its env pool and the rollout engine (lock-step),
    in task order."""
    return [episode_row(r) for r in rollout_records(policy, tasks, pcfg, env_cfg, trials=trials,
                                                    temperature=temperature, max_steps=max_steps, seed=seed)]


def rollout_records(policy: Policy, tasks: Sequence, pcfg: PromptConfig, env_cfg, *, trials: int = 1,
                    temperature: float = 0.0, max_steps: int = 15, seed: int = 0) -> list:
    """The rollout engine's TrajectoryRecords (steps with screens and actions, final screen, success, status) of
    the (task, trial) episodes on `env_cfg.backend` (phonesim included), lock-step, in task order."""
    from gui_jax.envs.factory import make_env_factory, make_pool
    from gui_jax.rl.rollout import RolloutConfig, RolloutEngine
    render = pcfg.observation in ("screenshot", "both")
    pool = make_pool(env_cfg, make_env_factory(env_cfg, render=render, max_steps=max_steps))
    rcfg = RolloutConfig(mode="sync", max_steps=max_steps, temperature=temperature, seed=seed)
    with pool, RolloutEngine(policy, pool, pcfg, rcfg) as engine:
        return engine.run(tasks, trials=trials)


def online_metrics(records: Sequence[dict], k: Optional[int] = None) -> dict[str, float]:
    """SR over trial 0, pass@k over all trials, SR by difficulty, mean steps to success; AndroidLab's SubSR, RRR,
    ROR and subgoal_episodes over trial 0 (eval/androidlab.py) when the records carry their fields."""
    first = [r for r in records if r["trial"] == 0]
    out = {"SR": float(np.mean([r["success"] for r in first])) if first else float("nan")}
    for d, v in success_by_bucket([r["success"] for r in first], [r["difficulty"] for r in first]).items():
        out[f"SR_{d}"] = v
    by_task = defaultdict(list)
    for r in records:
        by_task[r["task_id"]].append(r["success"])
    n = min(len(v) for v in by_task.values()) if by_task else 0
    if n > 1:
        kk = k or n
        out[f"pass@{kk}"] = pass_at_k(np.array([v[:n] for v in by_task.values()]), kk)
    out["steps_to_success"] = mean_steps_to_success([r["success"] for r in first], [r["steps"] for r in first])
    out["unparsable_rate"] = (float(sum(r["unparsable"] for r in first)) / max(sum(r["steps"] for r in first), 1))
    if first and all("reasonable_ops" in r for r in first):
        lab = androidlab_report(first)
        out.update({k: lab[k] for k in ("SubSR", "RRR", "ROR", "subgoal_episodes")})
    return out


def evaluate_online(policy: Policy, tasks: Sequence, pcfg: PromptConfig, *, trials: int = 1,
                    temperature: float = 0.0, resolution=(540, 1200), max_steps: int = 15,
                    seed: int = 0, progress: bool = False) -> dict[str, float]:
    recs = run_online_episodes(policy, tasks, pcfg, trials=trials, temperature=temperature,
                               resolution=resolution, max_steps=max_steps, seed=seed, progress=progress)
    return online_metrics(recs)
