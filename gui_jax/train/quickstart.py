"""The main job: the tiny agent on PhoneSim, end to end.

expert episodes (train split) → evaluate untrained → SFT → evaluate → semi-online RL → evaluate,
each evaluation on the held-out split: SOP (PG, TSR, Score), step metrics with the expert history
(TM, GR, SR) and online success in PhoneSim. Resumable: finished stages are not redone.
Outputs in the workdir: episodes/, sft/ and rl/ checkpoints, metrics.jsonl + TensorBoard logs,
training_curves.png, results.json and results.md.
"""
from __future__ import annotations

import json
import os
import resource
import time

from absl import logging

from gui_jax.core.serialize import episode_dirs, load_episodes, save_episodes
from gui_jax.eval.offline import evaluate_sop, evaluate_steps
from gui_jax.eval.online import evaluate_online
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.agent import Agent
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.semi_online import train_offline_rl, train_semi_online
from gui_jax.train.sft import train_sft


def select_tasks(tasks, dcfg, limit: int):
    """Tasks of the configured difficulties/templates/lengths, in a seeded round-robin over
    templates so every template is represented before any repeats."""
    keep = [t for t in tasks if t.difficulty in tuple(dcfg.difficulties)
            and t.optimal_steps <= dcfg.max_optimal_steps
            and (not dcfg.templates or t.template in tuple(dcfg.templates))]
    by_template = {}
    for t in sorted(keep, key=lambda t: (t.template, t.seed)):
        by_template.setdefault(t.template, []).append(t)
    out, k = [], 0
    while len(out) < limit and any(k < len(v) for v in by_template.values()):
        out += [v[k] for v in by_template.values() if k < len(v)]
        k += 1
    return out[:limit]


def load_or_generate(tasks, folder: str, resolution):
    from gui_jax.tasks.generate import generate_episodes
    if os.path.isdir(folder) and len(episode_dirs(folder)) == len(tasks):
        return load_episodes(folder)
    eps = list(generate_episodes(tasks, resolution=tuple(resolution), progress=True))
    save_episodes(eps, folder)
    return eps


def evaluate_agent(agent, test_eps, test_tasks, pcfg, config) -> dict:
    ecfg = config.eval
    t0 = time.time()
    out = {f"SOP_{k}": v for k, v in evaluate_sop(agent.policy, test_eps, pcfg).items() if k != "episodes"}
    if ecfg.step_metrics:
        out.update(evaluate_steps(agent.policy, test_eps, pcfg))
        out.pop("steps", None)
    online = evaluate_online(agent.policy, test_tasks, pcfg, trials=ecfg.online_trials,
                             temperature=ecfg.online_temperature if ecfg.online_trials > 1 else 0.0,
                             resolution=tuple(config.data.resolution), max_steps=ecfg.max_steps)
    if ecfg.online_trials > 1:  # greedy SR on trial 0 is separate from the sampled pass@k trials
        online.update({k: v for k, v in evaluate_online(
            agent.policy, test_tasks, pcfg, trials=1, temperature=0.0,
            resolution=tuple(config.data.resolution), max_steps=ecfg.max_steps).items()})
    out.update({f"online_{k}": v for k, v in online.items()})
    out["eval_seconds"] = time.time() - t0
    return out


def format_table(results: dict, columns=("SOP_PG", "SOP_TSR", "SOP_Score", "TM", "GR", "SR", "online_SR")) -> str:
    cols = [c for c in columns if any(c in r for r in results.values())]
    lines = ["| stage | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for stage, r in results.items():
        lines.append(f"| {stage} | " + " | ".join(f"{r.get(c, float('nan')):.3f}" for c in cols) + " |")
    return "\n".join(lines)


def prepare(config, workdir):
    from gui_jax.tasks.splits import make_split
    d = config.data
    split = make_split(d.split, train_seeds=range(*d.train_seed_range), test_seeds=range(*d.test_seed_range),
                       seed=config.seed)
    print(split.report())
    train_tasks = select_tasks(split.train, d, d.num_train_episodes)
    test_tasks = select_tasks(split.test, d, d.num_test_episodes)
    if not train_tasks or not test_tasks:
        raise ValueError(f"no tasks left after filtering (difficulties={list(d.difficulties)}, "
                         f"max_optimal_steps={d.max_optimal_steps}, templates={list(d.templates)})")
    train_eps = load_or_generate(train_tasks, os.path.join(workdir, "episodes", "train"), d.resolution)
    test_eps = load_or_generate(test_tasks, os.path.join(workdir, "episodes", "test"), d.resolution)
    return train_tasks, test_tasks, train_eps, test_eps


def run(config, workdir: str) -> None:
    start = time.time()
    train_tasks, test_tasks, train_eps, test_eps = prepare(config, workdir)
    print(f"{len(train_eps)} train episodes ({sum(len(e) for e in train_eps)} steps), "
          f"{len(test_eps)} held-out episodes / online tasks")
    agent = Agent(config, seed=config.seed)
    print(f"model: {config.model.preset} ({agent.num_params() / 1e6:.2f}M params)")
    pcfg = PromptConfig(**config.prompt.to_dict())
    logger = MetricsLogger(workdir)
    results_path = os.path.join(workdir, "results.json")
    results = json.load(open(results_path)) if os.path.exists(results_path) else {}

    def stage_eval(name: str, step: int):
        if name not in results:
            results[name] = evaluate_agent(agent, test_eps, test_tasks, pcfg, config)
            json.dump(results, open(results_path, "w"), indent=1)
        logger.write(step, {k: v for k, v in results[name].items() if isinstance(v, float)}, prefix=f"eval")
        print(f"[{name}] " + ", ".join(f"{k}={v:.3f}" for k, v in results[name].items()
                                       if k in ("SOP_Score", "SR", "online_SR")))

    stage_eval("untrained", 0)
    train_sft(agent, train_eps, pcfg, config.sft, workdir=os.path.join(workdir, "sft"), logger=logger)
    stage_eval("sft", config.sft.num_steps)
    sft_params = agent.copy_params()
    if config.get("offline_rl_baseline"):
        train_offline_rl(agent, train_eps, pcfg, config.rl, workdir=os.path.join(workdir, "offline_rl"),
                         logger=logger, ref_params=sft_params)
        stage_eval("offline_rl", config.sft.num_steps + config.rl.iterations)
        agent.set_params(sft_params)  # semi-online RL starts from the same SFT weights
    train_semi_online(agent, train_eps, pcfg, config.rl, workdir=os.path.join(workdir, "rl"), logger=logger,
                      ref_params=sft_params)
    stage_eval("semi_online_rl", config.sft.num_steps + config.rl.iterations)
    logger.plot()
    logger.close()
    table = format_table(results)
    runtime = time.time() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    footer = f"\nruntime {runtime / 60:.1f} min this run, peak memory {peak_mb:.0f} MB"
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(table + footer + "\n")
    print("\n" + table + footer)
    logging.info("results in %s", workdir)

