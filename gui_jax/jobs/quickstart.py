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

from gui_jax.eval.suite import evaluate_agent, format_table
from gui_jax.jobs.common import prepare
from gui_jax.rl.prompting import PromptConfig
from gui_jax.rl.agent import Agent
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.semi_online import train_offline_rl, train_semi_online
from gui_jax.train.sft import train_sft


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

