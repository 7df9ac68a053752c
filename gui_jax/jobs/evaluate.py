"""Evaluation job: SOP, step metrics and online success of a trained agent on a held-out split.

    python -m gui_jax.main --config configs/evaluate.py --config.eval.checkpoint_dir=runs/quickstart/rl/checkpoints
    ... --config.env.backend=androidworld --config.env.server_urls='("http://127.0.0.1:5000",)'  # online on it
SOP and step metrics score the split's held-out expert episodes; the online episodes run on `config.env`
(gui_jax/envs/factory.py; phonesim: the split's held-out tasks at data.resolution; a backend with its own task
list: env.tasks × env.seeds).
Weights: the latest Orbax checkpoint in `eval.checkpoint_dir` (a training stage's checkpoints
folder), else `model.checkpoint` (a Hugging Face directory). Without either the job refuses to run
unless `eval.untrained=True` says to score the untrained model. It prints what it loaded.
"""
from __future__ import annotations

import json
import os

from gui_jax.config_check import RunError
from gui_jax.jobs import common


def load_stage_params(agent, checkpoint_dir: str):
    """Params of the latest checkpoint in a stage's folder (optimizer state is not needed)."""
    del agent
    return common.load_stage_params(checkpoint_dir)[0]


def run(config, workdir: str) -> None:
    from gui_jax.eval.suite import evaluate_agent, format_table
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    ckpt_dir = config.eval.get("checkpoint_dir", "")
    hf_dir = config.model.get("checkpoint", "")
    if not ckpt_dir and not hf_dir and not config.eval.get("untrained", False):
        raise RunError("evaluate needs trained weights: set eval.checkpoint_dir (e.g. runs/quickstart/rl/checkpoints) "
                       "or model.checkpoint, or eval.untrained=True to score the untrained model")
    common.check_reachable(config)  # an offline device or server stops here, in one line
    _, test_tasks, _, test_eps = common.prepare(config, workdir, sides=("test",))
    online_tasks = common.backend_or_split_tasks(config, test_tasks)
    agent = Agent(config, seed=config.seed)
    if ckpt_dir:
        params, step = common.load_stage_params(ckpt_dir)
        common.set_agent_params(agent, params, ckpt_dir)
        source = {"kind": "orbax", "path": os.path.abspath(ckpt_dir), "step": int(step),
                  "held_out_vs_checkpoint": common.report_checkpoint_overlap(ckpt_dir, test_tasks, "the checkpoint")}
        print(f"evaluating checkpoint {os.path.abspath(ckpt_dir)} step {step}")
    elif hf_dir:
        source = {"kind": "huggingface", "path": os.path.abspath(hf_dir), "step": None}
        print(f"evaluating Hugging Face weights from {os.path.abspath(hf_dir)}")
    else:
        source = {"kind": "untrained", "path": None, "step": None, "preset": config.model.preset}
        print(f"evaluating the UNTRAINED model (eval.untrained=True; preset {config.model.preset}, seed {config.seed})")
    pcfg = PromptConfig(**config.prompt.to_dict())
    result = evaluate_agent(agent, test_eps, online_tasks, pcfg, config)
    with open(os.path.join(workdir, "eval.json"), "w") as f:
        json.dump({**result, "weights": source, "online_env": common.backend_name(config)}, f, indent=1)
    print(format_table({"evaluated": result}))
