"""Job `pretrain`: pretrain the small base model on the synthetic screen stream (train/pretrain.py), then
write it as a Hugging Face Qwen2.5-VL directory.

    python -m gui_jax.main --config configs/pretrain_tiny.py --workdir runs/pretrain_tiny

Re-running the same command resumes from <workdir>/checkpoints (after kill -9 or SIGTERM; checkpoints every
`pretrain.checkpoint_every` updates and every `pretrain.checkpoint_minutes`). Writes metrics.jsonl and
TensorBoard scalars (loss, reading accuracy on held-out labels, tokens/s), training_curves.png,
results.json and the exported base under <workdir>/base.
"""
from __future__ import annotations

import json
import os
import time

from gui_jax.config_check import RunError
from gui_jax.train.logger import MetricsLogger


def run(config, workdir: str) -> None:
    from gui_jax.jobs.export import export_agent
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.train.pretrain import parse_curriculum, parse_mix, train_pretrain

    cfg = config.pretrain
    try:  # configuration errors before any model is built
        stages = parse_curriculum(cfg.curriculum)
        parse_mix(cfg.mix)
        prompt_cfg = PromptConfig(**config.prompt.to_dict())
    except (TypeError, ValueError) as e:
        raise RunError(str(e)) from None
    widest = max(s.difficulty.max_lines for s in stages)
    if widest > prompt_cfg.max_ui_lines:
        raise RunError(f"pretrain.curriculum has screens of {widest} lines but prompt.max_ui_lines = "
                       f"{prompt_cfg.max_ui_lines}; raise prompt.max_ui_lines")
    os.makedirs(workdir, exist_ok=True)
    agent = Agent(config, seed=config.seed)
    logger = MetricsLogger(workdir)
    start = time.time()
    out = train_pretrain(agent, cfg, prompt_cfg, workdir=workdir, logger=logger, seed=int(config.seed))
    logger.plot()
    logger.close()
    files = export_agent(agent, os.path.join(workdir, "base"), dtype=cfg.export_dtype or None,
                         source={"job": "pretrain", "steps": out["steps"], "workdir": os.path.abspath(workdir)})
    out.update(seconds_this_run=round(time.time() - start, 1), exported=sorted(files))
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"pretrain: {out['steps']} updates; reading accuracy (held-out labels) "
          f"{out['reading'].get('reading_acc', float('nan')):.3f}; base written to {os.path.join(workdir, 'base')}")
