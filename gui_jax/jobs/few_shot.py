"""Few-shot test-time adaptation (AWG): fine-tune on k expert demonstrations of unseen apps, then
evaluate online on other instances of those apps.

    python -m gui_jax.main --config configs/few_shot.py [--workdir runs/few_shot]

Starting point: `init.checkpoint_dir`, or an SFT on the train split's expert episodes (the app split
keeps the test apps unseen). For each unseen app, k demonstrations are the oracle episodes of k of
its tasks (seeds from `few_shot.demo_seed_range`, disjoint from the evaluation seeds). Modes:
- zero_shot: the starting point as it is;
- per_app: one fine-tune per app on that app's k demonstrations, evaluated on that app's tasks;
- all_app: one fine-tune on every unseen app's demonstrations together, evaluated on all of them.
Each row: greedy online SR with its Wilson 95 % interval (over completed episodes), the rollout report,
and the exact McNemar p against zero-shot on the same tasks. Outputs: results.json, results.md.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict

from gui_jax.eval.metrics import wilson_interval
from gui_jax.jobs.common import prepare, starting_point, without_held_out
from gui_jax.jobs.episode_cache import load_or_generate
from gui_jax.jobs.online_rl import evaluate_online_pool, format_results
from gui_jax.rl.agent import Agent
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.sft import train_sft

MODES = ("zero_shot", "per_app", "all_app")


def demo_tasks(config, test_tasks) -> dict:
    """app -> k demonstration tasks: the unseen apps' templates at seeds of few_shot.demo_seed_range, none of an
    instance a held-out task has."""
    from gui_jax.envs.sim import make_task
    fs = config.few_shot
    by_app: dict = defaultdict(list)
    templates = sorted({t.template for t in test_tasks})
    for seed in range(*fs.demo_seed_range):
        for task in without_held_out([make_task(name, seed) for name in templates], test_tasks):
            if len(by_app[task.app]) < fs.k:
                by_app[task.app].append(task)
    return dict(by_app)


def _merge(parts: list[dict]) -> dict:
    """One evaluation row from per-app evaluations (pooled counts, pooled per-task outcomes)."""
    out = {"online_success": {}, "rollout_report": defaultdict(int)}
    for p in parts:
        out["online_success"].update(p["online_success"])
        for k, v in p["rollout_report"].items():
            if isinstance(v, int):
                out["rollout_report"][k] += v
    n = len(out["online_success"])
    k = sum(out["online_success"].values())
    out.update({"online_SR": k / n if n else float("nan"), "online_SR_ci95": list(wilson_interval(k, n)), "n": n,
                "rollout_report": dict(out["rollout_report"])})
    return out


def run(config, workdir: str) -> None:
    fs = config.few_shot
    bad = [m for m in fs.modes if m not in MODES]
    if bad:
        raise ValueError(f"few_shot.modes has unknown modes {bad}; known: {MODES}")
    init_ckpt = config.init.checkpoint_dir if config.get("init") else ""
    train_tasks, test_tasks, train_eps, _ = prepare(config, workdir, sides=() if init_ckpt else ("train",))
    agent = Agent(config, seed=config.seed)
    pcfg = PromptConfig(**config.prompt.to_dict())
    logger = MetricsLogger(workdir)
    starting_point(agent, config, workdir, train_eps, pcfg, logger)
    base = agent.copy_params()
    demos = demo_tasks(config, test_tasks)
    eval_by_app: dict = defaultdict(list)
    for t in test_tasks:
        eval_by_app[t.app].append(t)
    apps = sorted(a for a in eval_by_app if a in demos)
    demo_eps = {a: load_or_generate(demos[a], os.path.join(workdir, "episodes", f"demos_{a}"), config.data.resolution)
                for a in apps}
    path = os.path.join(workdir, "results.json")
    results = json.load(open(path)) if os.path.exists(path) else {}

    def save():
        with open(path, "w") as f:
            json.dump(results, f, indent=1)

    def adapt(name, eps):
        agent.set_params(jax_copy(base))
        train_sft(agent, eps, pcfg, fs.sft, workdir=os.path.join(workdir, name), logger=logger)

    if "zero_shot" in fs.modes and "start" not in results:
        agent.set_params(jax_copy(base))
        results["start"] = _merge([evaluate_online_pool(agent, eval_by_app[a], pcfg, config, seed=config.seed)
                                   for a in apps])
        save()
    if "per_app" in fs.modes and "per_app" not in results:
        parts = []
        for a in apps:
            adapt(f"per_app_{a}", demo_eps[a])
            parts.append(evaluate_online_pool(agent, eval_by_app[a], pcfg, config, seed=config.seed))
        results["per_app"] = _merge(parts)
        save()
    if "all_app" in fs.modes and "all_app" not in results:
        adapt("all_app", [e for a in apps for e in demo_eps[a]])
        results["all_app"] = _merge([evaluate_online_pool(agent, eval_by_app[a], pcfg, config, seed=config.seed)
                                     for a in apps])
        save()
    logger.close()
    table = format_results(results).replace("| start |", "| zero_shot |")
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(table + f"\n\nunseen apps {apps}; k = {fs.k} demonstrations per app; greedy online SR, Wilson 95 % "
                        "intervals over completed episodes; p = exact McNemar vs zero-shot\n")
    print("\n" + table)


def jax_copy(params):
    import jax
    import jax.numpy as jnp
    return jax.tree.map(jnp.copy, params)


__all__ = ["run", "demo_tasks", "MODES"]
