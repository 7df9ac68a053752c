"""Where each held-out episode first goes wrong, online: greedy rollouts of a checkpoint on the quickstart's
held-out tasks, each failed episode labelled by its first step that differs from the expert's.

    python experiments/first_errors.py CHECKPOINT_DIR [config.key=python_literal ...] [--out PATH.json]

CHECKPOINT_DIR is a stage's Orbax checkpoints folder (its latest step is used); the overrides are the run's,
as for sft_curve.py (e.g. "model.tokenizer='tiny_phonesim'"). Labels: wrong_app (the first step, which opens
an app in every quickstart template, differs), unparsable (the response at the first differing step does not
parse), stops_early (terminate before the expert does), wrong_step (any other difference, e.g. the look-up:
another row clicked or another value answered). A click matches when it lands in the expert's target box.
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def first_error(trace, ep) -> str:
    """The label of a failed episode from its run_online_episodes trace; see the module docstring."""
    for t, (obs, action) in enumerate(trace):
        if action is None:
            return "unparsable"
        want = ep.actions[t] if t < len(ep.actions) else None
        same = want is not None and action.type == want.type and (
            lands_in(action, obs, ep.target_bboxes[t]) if want.type in ("click", "long_press") else action == want)
        if same:
            continue
        if t == 0:
            return "wrong_app"
        if action.type == "terminate" and t < len(ep.actions) - 1:
            return "stops_early"
        return "wrong_step"
    return "wrong_step"


def lands_in(action, obs, bbox) -> bool:
    """A click (by element or point) lands inside the expert's target box: the same widget, whichever of its
    nodes (a row's label or its container) the policy named."""
    if bbox is None:
        return False
    if action.element is not None:
        e = next((e for e in obs.ui_elements if e.index == action.element), None)
        if e is None:
            return False
        x, y = (e.bounds[0] + e.bounds[2]) / 2, (e.bounds[1] + e.bounds[3]) / 2
    elif action.x is not None:
        x, y = action.x, action.y
    else:
        return False
    return bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]


def main(argv):
    from sft_curve import load_config

    from gui_jax.eval.online_success import run_online_episodes
    from gui_jax.jobs.common import load_stage_params, prepare, set_agent_params
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    out_path = next((a.split("=", 1)[1] for a in argv if a.startswith("--out=")), "")
    argv = [a for a in argv if not a.startswith("--out=")]
    if not argv:
        raise SystemExit(__doc__)
    config, _, _ = load_config(argv[1:])
    workdir = os.path.join(os.path.dirname(os.path.abspath(argv[0].rstrip("/"))), "first_errors")
    _, tasks, _, test_eps = prepare(config, workdir)
    expert = {ep.goal: ep for ep in test_eps}
    agent = Agent(config, seed=0)
    params, step = load_stage_params(argv[0], field="CHECKPOINT_DIR")
    set_agent_params(agent, params, argv[0])
    pcfg = PromptConfig(**config.prompt.to_dict())
    recs = run_online_episodes(agent.policy, tasks, pcfg, trials=1, temperature=0.0,
                               resolution=tuple(config.data.resolution), max_steps=config.eval.max_steps,
                               keep_trace=True)
    by_template = collections.defaultdict(collections.Counter)
    for task, r in zip(tasks, recs):
        label = "success" if r["success"] else first_error(r["trace"], expert[task.goal])
        by_template[task.task_id.split("#")[0]][label] += 1
    total = sum((c for c in by_template.values()), collections.Counter())
    result = {"checkpoint": os.path.abspath(argv[0]), "step": int(step), "tasks": len(recs), "all": dict(total),
              "by_template": {k: dict(v) for k, v in sorted(by_template.items())}}
    print(json.dumps(result))
    if out_path:
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
