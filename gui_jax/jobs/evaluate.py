"""Evaluation job: SOP, step metrics and online success of a trained agent on a held-out split.

    python -m gui_jax.main --config configs/evaluate.py --config.eval.checkpoint_dir=runs/quickstart/rl/checkpoints
Weights come from `model.checkpoint` (a Hugging Face directory) and, if set, the latest Orbax
checkpoint in `eval.checkpoint_dir` (a training stage's checkpoints folder).
"""
from __future__ import annotations

import json
import os


def load_stage_params(agent, checkpoint_dir: str):
    """Params of the latest checkpoint in a stage's folder (optimizer state is not needed)."""
    import orbax.checkpoint as ocp
    mgr = ocp.CheckpointManager(os.path.abspath(checkpoint_dir))
    step = mgr.latest_step()
    if step is None:
        raise FileNotFoundError(f"no checkpoint in {checkpoint_dir}")
    tree = mgr.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))
    mgr.close()
    return tree["state"]["params"]


def run(config, workdir: str) -> None:
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.eval.suite import evaluate_agent, format_table
    from gui_jax.jobs.common import prepare
    from gui_jax.rl.agent import Agent
    _, test_tasks, _, test_eps = prepare(config, workdir)
    agent = Agent(config, seed=config.seed)
    if config.eval.get("checkpoint_dir"):
        import jax
        restored = load_stage_params(agent, config.eval.checkpoint_dir)
        leaves = jax.tree.leaves(restored)
        want = jax.tree.leaves(agent.params)
        if len(leaves) != len(want) or any(a.shape != b.shape for a, b in zip(leaves, want)):
            raise ValueError(f"checkpoint in {config.eval.checkpoint_dir} does not match the model "
                             f"({len(leaves)} vs {len(want)} arrays)")
        agent.set_params(jax.tree.unflatten(jax.tree.structure(agent.params),
                                            [a.astype(b.dtype) for a, b in zip(leaves, want)]))
    pcfg = PromptConfig(**config.prompt.to_dict())
    result = evaluate_agent(agent, test_eps, test_tasks, pcfg, config)
    with open(os.path.join(workdir, "eval.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(format_table({"evaluated": result}))
