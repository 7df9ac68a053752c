"""Where a policy's held-out episodes fail, greedy, in two views:

- steps: every step of every held-out expert episode with the expert history before it; exact match per
  (template, step, expert action type), with up to 3 wrong responses per cell (goal, expert, policy);
- online: the policy's own episodes in PhoneSim; each failed episode labelled by its first step that differs
  from the expert's (`first_error`): wrong_app (the first step, which opens an app in every quickstart
  template), unparsable (the response there does not parse), stops_early (terminates before the expert
  does), wrong_step (any other difference, e.g. the look-up: another row clicked, another value answered).

    python -m gui_jax.jobs.failure_report CHECKPOINT [--config configs/quickstart.py] [--set FIELD=VALUE ...]
        [--views steps,online] [--workdir runs/failure_report] [--out PATH]

CHECKPOINT is a stage's Orbax checkpoints folder (its latest step) or a Hugging Face directory (configs/export.py
writes one; its tokenizer is used). The recipe and --set give the checkpoint's run settings (e.g.
"model.tokenizer='tiny_phonesim'"): the held-out split and the prompt must be the ones it was trained for.
Prints the tables; --out also writes PATH.json and PATH.md.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shlex
import sys

VIEWS = ("steps", "online")
LABELS = ("success", "wrong_app", "unparsable", "stops_early", "wrong_step")
EXAMPLES_PER_CELL = 3
SCREEN_CHARS = 300  # of an example's screen texts kept in the report
GENERATE_CHUNK = 64


# ------------------------------------------------------------------------------------------ first errors

def _tap_point(action, obs):
    if action.element is not None:
        e = next((e for e in obs.ui_elements if e.index == action.element), None)
        return None if e is None else ((e.bounds[0] + e.bounds[2]) / 2, (e.bounds[1] + e.bounds[3]) / 2)
    return (action.x, action.y) if action.x is not None else None


def lands_in(action, obs, bbox, expert=None) -> bool:
    """A click, by element or by point, reaches the expert's widget, whichever of its nodes (a row's label or
    its container) the policy named: the same element a tap there reaches (core.matcher.hit_element) when the
    expert's click reaches one, else inside the expert's target box (a switch in the row is another widget)."""
    from gui_jax.core.matcher import same_receiver
    p = _tap_point(action, obs)
    if p is None:
        return False
    q = _tap_point(expert, obs) if expert is not None else None
    same = same_receiver(obs.ui_elements, p, q, expert.type == "long_press") if q is not None else None
    if same is not None:
        return same
    return bbox is not None and bbox[0] <= p[0] <= bbox[2] and bbox[1] <= p[1] <= bbox[3]


def first_error(trace, ep) -> tuple:
    """(label, step) of a failed episode from its trace [(observation, action or None if unparsable)] against
    the expert episode of the same task (see the module docstring); step is the trace index labelled."""
    from gui_jax.core.matcher import text_match
    for t, (obs, action) in enumerate(trace):
        if action is None:
            return "unparsable", t
        want = ep.actions[t] if t < len(ep.actions) else None
        same = want is not None and action.type == want.type and (
            lands_in(action, obs, ep.target_bboxes[t], want) if want.type in ("click", "long_press")
            # an answer is read stripped and case-blind (prompt.answer_spaced writes " v" for the expert's "v")
            else text_match(action.text, want.text, rule="exact") if want.type == "answer"
            # expert steps carry a description (`action_desc`) that a policy's parsed action never has
            else action.replace(action_desc=None) == want.replace(action_desc=None))
        if same:
            continue
        if t == 0:
            return "wrong_app", t
        if action.type == "terminate" and t < len(ep.actions) - 1:
            return "stops_early", t
        return "wrong_step", t
    # followed the expert throughout and still failed (e.g. ran out of steps): labelled at the step after
    return "wrong_step", len(trace)


def error_example(trace, ep, step: int) -> dict:
    """What the policy did at its first differing step: {goal, step, expert, policy, screen} (actions as
    `Action.__str__`, "unparsable" / "none" where there is no action; screen: the texts on it, top first)."""
    obs, action = trace[step] if step < len(trace) else (None, None)
    want = ep.actions[step] if step < len(ep.actions) else None
    texts = [] if obs is None else [e.text for e in obs.ui_elements if e.text]
    return {"goal": ep.goal, "step": step, "expert": "none" if want is None else str(want.replace(action_desc=None)),
            "policy": "none" if step >= len(trace) else ("unparsable" if action is None else str(action)),
            "screen": " | ".join(texts)[:SCREEN_CHARS]}


def count_labels(labelled) -> dict:
    """{"all": {label: n}, "by_template": {template: {label: n}}} from [(template, label)]."""
    by_template = collections.defaultdict(collections.Counter)
    for template, label in labelled:
        by_template[template][label] += 1
    total = sum(by_template.values(), collections.Counter())
    return {"all": dict(total), "by_template": {k: dict(v) for k, v in sorted(by_template.items())}}


def experts_of(tasks, test_eps) -> list:
    """Each task's expert episode, by task id (`template#seed`; goals repeat within a template, e.g. "What is
    the model number of this phone?")."""
    by_id = {ep.episode_id: ep for ep in test_eps}
    missing = [t.task_id for t in tasks if t.task_id not in by_id]
    if missing:
        raise ValueError(f"no expert episode for {len(missing)} held-out task(s), e.g. {missing[0]!r}")
    return [by_id[t.task_id] for t in tasks]


def online_view(agent, tasks, test_eps, pcfg, config) -> dict:
    """Greedy rollouts of every held-out task, each labelled success or by its first error, with up to
    EXAMPLES_PER_CELL examples (`error_example`) per (template, label)."""
    from gui_jax.eval.online_success import run_online_episodes
    expert = experts_of(tasks, test_eps)
    recs = run_online_episodes(agent.policy, tasks, pcfg, trials=1, temperature=0.0,
                               resolution=tuple(config.data.resolution), max_steps=config.eval.max_steps,
                               keep_trace=True)
    labelled, examples = [], collections.defaultdict(list)
    for task, ep, r in zip(tasks, expert, recs):
        if r["success"]:
            labelled.append((task.template, "success"))
            continue
        label, step = first_error(r["trace"], ep)
        labelled.append((task.template, label))
        cell = examples[f"{task.template} {label}"]
        if len(cell) < EXAMPLES_PER_CELL:
            cell.append(error_example(r["trace"], ep, step))
    return {"tasks": len(recs), **count_labels(labelled), "examples": dict(sorted(examples.items()))}


# ------------------------------------------------------------------------------------------ step matches

def count_steps(judged) -> list:
    """Rows {template, step, type, right, total, wrong} from [(template, step, expert action type, right,
    (goal, expert response, policy response))], sorted; at most EXAMPLES_PER_CELL wrong examples a row."""
    cells: dict = {}
    for template, t, kind, right, example in judged:
        c = cells.setdefault((template, t, kind), {"template": template, "step": t, "type": kind, "right": 0,
                                                    "total": 0, "wrong": []})
        c["right"] += int(right)
        c["total"] += 1
        if not right and len(c["wrong"]) < EXAMPLES_PER_CELL:
            c["wrong"].append(list(example))
    return [cells[k] for k in sorted(cells)]


def steps_view(agent, test_eps, pcfg) -> list:
    """Greedy responses at every step of the held-out expert episodes, judged by exact match."""
    from gui_jax.rl.prompting import build_messages, expert_response
    from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, expert_element, judge_step
    from gui_jax.train.sft import expert_history
    scfg = SemiOnlineConfig(reward_preset="paper")
    items = [(ep, t) for ep in test_eps for t in range(len(ep.actions))]
    judged = []
    for start in range(0, len(items), GENERATE_CHUNK):
        chunk = items[start:start + GENERATE_CHUNK]
        prompts = [build_messages(ep.goal, expert_history(ep, t, pcfg), ep.observations[t], pcfg) for ep, t in chunk]
        for (ep, t), g in zip(chunk, agent.policy.generate(prompts, temperature=0.0, seed=0)):
            right = judge_step(g.text, ep, t, pcfg, scfg).exact_match
            expert = expert_response(ep.actions[t], ep.observations[t], pcfg, element=expert_element(ep, t))
            judged.append((ep.template, t, ep.actions[t].type, right, (ep.goal, expert, g.text)))
    return count_steps(judged)


# ------------------------------------------------------------------------------------------ report

def markdown(report: dict) -> str:
    lines = [f"Command: `{report['command']}`", "", f"Checkpoint `{report['checkpoint']}`; greedy.", ""]
    if "steps" in report:
        lines += ["Exact match per step, expert history (right / steps):", "",
                  "| template | step | expert action | right / steps |", "|---|---|---|---|"]
        lines += [f"| {c['template']} | {c['step']} | {c['type']} | {c['right']} / {c['total']} |"
                  for c in report["steps"]]
        lines.append("")
    if "online" in report:
        o = report["online"]
        head = [label for label in LABELS if label in o["all"]]
        lines += [f"Online, {o['tasks']} held-out tasks: each failed episode's first step that differs from the "
                  "expert's.", "", "| template | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
        for name, counts in [*o["by_template"].items(), ("all", o["all"])]:
            lines.append(f"| {name} | " + " | ".join(str(counts.get(label, 0)) for label in head) + " |")
        lines.append("")
        if o.get("examples"):
            lines += ["First differing steps, up to 3 per template and label (step: expert -> policy; the screen's "
                      "texts):", ""]
            lines += [f"- {cell} step {e['step']}: {e['goal']!r}: {e['expert']} -> {e['policy']}; screen: {e['screen']}"
                      for cell, found in o["examples"].items() for e in found]
            lines.append("")
    return "\n".join(lines)


def load_agent(config, checkpoint: str):
    """(agent, prompt config): a stage's Orbax folder goes to eval.checkpoint_dir, a Hugging Face directory to
    model.checkpoint with its own tokenizer."""
    from gui_jax.config_check import RunError, checkpoint_dir_problem
    from gui_jax.jobs.common import eval_agent
    problem = checkpoint_dir_problem(checkpoint)
    if problem is None:
        config.eval.checkpoint_dir = checkpoint
    elif os.path.isfile(os.path.join(checkpoint, "config.json")):
        config.model.checkpoint, config.model.tokenizer = checkpoint, "auto"
    else:
        raise RunError(f"CHECKPOINT {checkpoint!r}: neither a stage's checkpoints folder ({problem}) nor a Hugging "
                       "Face directory (no config.json)")
    return eval_agent(config)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m gui_jax.jobs.failure_report", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="a stage's Orbax checkpoints folder or a Hugging Face directory")
    ap.add_argument("--config", default="configs/quickstart.py", help="the recipe the checkpoint was trained with")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="a field of the recipe")
    ap.add_argument("--views", default=",".join(VIEWS), help="steps, online or both (comma-separated)")
    ap.add_argument("--workdir", default="runs/failure_report", help="where the held-out episodes are generated")
    ap.add_argument("--out", default="", help="also write OUT.json and OUT.md")
    a = ap.parse_args(argv)
    views = [v for v in a.views.split(",") if v]
    if not views or any(v not in VIEWS for v in views):
        ap.error(f"--views {a.views!r}: choose from {', '.join(VIEWS)}")
    from gui_jax.jobs import literal_overrides, load_config
    from gui_jax.jobs.common import prepare
    try:
        config = load_config(a.config, **literal_overrides(a.set))
        agent, pcfg = load_agent(config, a.checkpoint)
        _, tasks, _, test_eps = prepare(config, a.workdir, sides=("test",))
    except (KeyError, ValueError) as e:  # an unknown field, a bad value or checkpoint (RunError)
        print(f"error: {e}", file=sys.stderr)
        return 2
    report = {"command": shlex.join(["python", "-m", "gui_jax.jobs.failure_report"] + argv),
              "checkpoint": os.path.abspath(a.checkpoint)}
    if "steps" in views:
        report["steps"] = steps_view(agent, test_eps, pcfg)
    if "online" in views:
        report["online"] = online_view(agent, tasks, test_eps, pcfg, config)
    md = markdown(report)
    print(md)
    if "steps" in report:  # the wrong responses, too long for the table
        for c in report["steps"]:
            for goal, expert, got in c["wrong"]:
                print(f"{c['template']} step {c['step']}: {goal!r}: expert {expert!r}, policy {got!r}")
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out + ".json", "w") as f:
            json.dump(report, f, indent=1)
        with open(a.out + ".md", "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
