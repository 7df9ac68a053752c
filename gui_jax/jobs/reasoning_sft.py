"""Job: MobileRL reasoning-SFT bootstrap on the expert episodes of a split.

    python -m gui_jax.main --config configs/reasoning_sft.py
"""
from __future__ import annotations

from gui_jax.jobs.common import prepare
from gui_jax.rl.agent import Agent
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.reasoning_sft import reasoning_bootstrap


def run(config, workdir: str) -> None:
    _, _, train_eps, _ = prepare(config, workdir)
    agent = Agent(config, seed=config.seed)
    pcfg = PromptConfig(**config.prompt.to_dict())
    logger = MetricsLogger(workdir)
    hist = reasoning_bootstrap(agent, train_eps, pcfg, config.reasoning, workdir=workdir, logger=logger)
    logger.plot()
    logger.close()
    for h in hist:
        print(f"round {h['round']}: kept {h['kept_steps']}/{h['total_steps']} steps with verified thoughts")
