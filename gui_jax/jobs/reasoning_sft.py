"""Job: MobileRL reasoning-SFT bootstrap on the expert episodes of a split.

    python -m gui_jax.main --config configs/reasoning_sft.py --config.reasoning.init_checkpoint=runs/quickstart/sft/checkpoints
Starts from the latest Orbax checkpoint in `reasoning.init_checkpoint` (a training stage's
checkpoints folder; the model's shape and tokenizer come from `model.checkpoint`), or a Hugging Face directory in
`model.checkpoint`, or (neither) the preset's random init. Round 0 trains on PhoneSim's descriptions of the expert
steps with `reasoning.seed_thoughts=describe` (the recipe's default); a sampled round that keeps no verified
thought stops the job with a clear message. The quickstart runs the same as a stage (`reasoning_sft=True`).
"""
from __future__ import annotations

import os

from gui_jax.config_check import RunError
from gui_jax.jobs import common
from gui_jax.rl.agent import Agent
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.reasoning_sft import NoVerifiedThoughtsError, reasoning_bootstrap


def run(config, workdir: str) -> None:
    _, _, train_eps, _ = common.prepare(config, workdir, sides=("train",))
    agent = Agent(config, seed=config.seed)
    init = config.reasoning.get("init_checkpoint", "")
    if init:
        params, step = common.load_stage_params(init, field="reasoning.init_checkpoint")
        common.set_agent_params(agent, params, init)
        print(f"starting from checkpoint {os.path.abspath(init)} step {step}")
    elif config.model.get("checkpoint"):
        print(f"starting from Hugging Face weights in {os.path.abspath(config.model.checkpoint)}")
    else:
        print(f"starting from the untrained {config.model.preset} model (set reasoning.init_checkpoint or "
              f"model.checkpoint to start from trained weights)")
    pcfg = PromptConfig(**config.prompt.to_dict())
    logger = MetricsLogger(workdir)
    try:
        hist = reasoning_bootstrap(agent, train_eps, pcfg, config.reasoning, workdir=workdir, logger=logger)
    except NoVerifiedThoughtsError as e:
        raise RunError(str(e)) from None
    finally:
        logger.plot()
        logger.close()
    for h in hist:
        print(f"round {h['round']}: kept {h['kept_steps']}/{h['total_steps']} steps with verified thoughts")
