"""Job: evaluate a trained reward model on held-out PhoneSim tasks (step / outcome P, R, F1 by length and
difficulty, docs/algorithms.md §11).

    python -m gui_jax.main --config configs/reward_eval.py --config.rm_eval.checkpoint_dir=runs/reward_model/rm/checkpoints
Weights: the latest Orbax checkpoint in `rm_eval.checkpoint_dir`, else `model.checkpoint` (a Hugging Face
directory written by the reward_model job's `rm.export_dir` or the export job). The held-out records are
built like the training job's (same data settings and seed, hard negatives and potential labels included when
`rm.data` turns them on), so results are comparable. `rm.model.scorer=policy_likelihood` scores a policy checkpoint
(e.g. the quickstart's SFT) as the implicit RM: P(candidate | the agent's prompt), no training.
"""
from __future__ import annotations

import os

import numpy as np

from gui_jax.config_check import RunError
from gui_jax.jobs import common
from gui_jax.jobs.reward_model import build_reward_data, data_sources, evaluate_rm, rm_configs
from gui_jax.rewards import data_engine as de


def run(config, workdir: str) -> None:
    from gui_jax.rl.agent import Agent
    ckpt_dir = config.rm_eval.get("checkpoint_dir", "")
    if not ckpt_dir and not config.model.get("checkpoint", ""):
        raise RunError("reward_eval needs trained weights: set rm_eval.checkpoint_dir (e.g. "
                       "runs/reward_model/rm/checkpoints, or a policy's runs/quickstart/sft/checkpoints with "
                       "rm.model.scorer=policy_likelihood) or model.checkpoint (a Hugging Face directory)")
    _, _, _, test_eps = common.prepare(config, workdir, sides=("test",))
    pcfg, rcfg = rm_configs(config)
    sources = data_sources(config, pcfg, rcfg)
    data = build_reward_data(test_eps, np.random.default_rng(config.rm.data.seed + 1), config.rm.data, **sources)
    sources.clear()
    de.write_records(os.path.join(workdir, "records_test.jsonl"), data.records)
    agent = Agent(config, seed=config.seed)
    source = {"kind": "huggingface", "path": os.path.abspath(config.model.get("checkpoint", ""))}
    if ckpt_dir:
        params, step = common.load_stage_params(ckpt_dir, field="rm_eval.checkpoint_dir")
        common.set_agent_params(agent, params, ckpt_dir)
        source = {"kind": "orbax", "path": os.path.abspath(ckpt_dir), "step": int(step)}
    what = "reward model" if rcfg.scorer == "verdict" else "a policy as the reward model (its own likelihood)"
    print(f"evaluating {what} from {source}")
    evaluate_rm(agent, data.records, list(data.episodes.values()), pcfg, rcfg, workdir, extra={"weights": source})
