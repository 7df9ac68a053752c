"""Several trained checkpoints on the same held-out tasks: online SR of each with its 95 % interval, and
each checkpoint after the first against the first, paired by task. Use it to re-test a gain on more
held-out tasks without retraining, or to compare checkpoints that no experiment spec produced.

    python -m gui_jax.jobs.paired_checkpoints --config configs/grpo_online.py \
        --stage sft=runs/quickstart/sft/checkpoints --stage rl=runs/grpo/online/checkpoints \
        [--set "data.test_seed_range=(1000,1135)" --set data.num_test_episodes=648] \
        [--temperature 1.0 --trials 4] [--test mcnemar|bootstrap] --out experiments/results/NAME

Each --stage NAME=DIR is a training stage's Orbax checkpoints folder: its latest step, or with NAME=DIR@STEP that
step (the curve along one run: `--stage it120=runs/grpo/online/checkpoints@120 --stage it240=...@240`). The
recipe gives the model, prompt, env and eval settings and the held-out split; --set overrides its fields
(python literals). Greedy by default (0/1 per task, Wilson intervals); `--trials K --temperature T`
samples K episodes per task (per-task success rates, intervals by bootstrap over tasks).

The paired test is gui_jax.eval.suite.paired_test (exact McNemar, or `--test bootstrap`); on sampled
success rates, where McNemar does not apply, the exact sign test over tasks whose rate rose or fell
(gui_jax.eval.metrics.sign_test, equal to McNemar on 0/1 outcomes). Δ SR carries its paired-bootstrap
95 % interval. Writes OUT.json (with every per-task outcome) and OUT.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time

TESTS = ("mcnemar", "bootstrap")
KEPT = ("online_SR", "online_SR_ci95", "n", "checkpoint", "step", "eval_wall_s", "online_success",
        "held_out_vs_checkpoint")


def parse_stages(items) -> list:
    """[(name, checkpoints folder, step or None = the latest)] from NAME=DIR[@STEP] arguments; names unique, in
    the order given."""
    out = []
    for item in items:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            raise ValueError(f"--stage {item!r}: expected NAME=CHECKPOINT_DIR or NAME=CHECKPOINT_DIR@STEP")
        step = None
        head, at, text = folder.rpartition("@")
        if at and "/" not in text:  # an '@' inside the path (runs/a@b/checkpoints) is not a step
            if not text.isdigit() or not head:
                raise ValueError(f"--stage {item!r}: the step after '@' must be a whole number, got {text!r}")
            folder, step = head, int(text)
        if name in {n for n, _, _ in out}:
            raise ValueError(f"--stage {name}: given twice")
        out.append((name, folder, step))
    return out


def paired_against_first(outcomes: dict, *, test: str = "mcnemar", seed: int = 0) -> dict:
    """{"<name> vs <first>": test result} for each stage after the first, on the tasks both completed.

    `outcomes` is {stage: {task id: 0/1 or a success rate}} in stage order. A task gained or lost is one
    whose outcome rose or fell; p is McNemar (or the paired bootstrap) on 0/1 outcomes and the sign test
    on rates."""
    from gui_jax.eval.metrics import paired_bootstrap, sign_test
    from gui_jax.eval.suite import paired_test
    if test not in TESTS:
        raise ValueError(f"unknown paired test {test!r}; known: {', '.join(TESTS)}")
    names = list(outcomes)
    first = names[0]
    out = {}
    for name in names[1:]:
        a, b = outcomes[first], outcomes[name]
        tasks = sorted(set(a) & set(b))
        if not tasks:
            out[f"{name} vs {first}"] = {"tasks": 0}
            continue
        xa, xb = [float(a[t]) for t in tasks], [float(b[t]) for t in tasks]
        counts = sign_test(xa, xb)
        binary = all(v in (0.0, 1.0) for v in xa + xb)
        if test == "bootstrap" or binary:
            p = paired_test({"online_task_ids": tasks, "online_success": xa},
                            {"online_task_ids": tasks, "online_success": xb}, method=test, seed=seed)
            how = test
        else:
            p, how = counts["p"], "sign"
        boot = paired_bootstrap(xa, xb, seed=seed)
        out[f"{name} vs {first}"] = {"tasks": len(tasks), "gained": counts["gained"], "lost": counts["lost"],
                                     "p": p, "test": how, "diff": boot["diff"], "diff_ci95": [boot["lo"], boot["hi"]],
                                     "unpaired": len(set(a) ^ set(b))}
    return out


def evaluate_stages(config, stages, workdir: str, *, temperature: float = 0.0, trials: int = 1) -> tuple:
    """(results per stage, number of held-out tasks): each checkpoint's online evaluation on the config's
    held-out tasks through the env pool, with the overlap between those tasks and its run's training split."""
    from gui_jax.config_check import RunError, checkpoint_dir_problem, checkpoint_steps
    from gui_jax.jobs.common import load_stage_params, prepare, report_checkpoint_overlap, set_agent_params
    from gui_jax.jobs.online_rl import evaluate_online_pool
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    for name, folder, step in stages:  # every folder (and step) checked before minutes of work
        problem = checkpoint_dir_problem(folder)
        if not problem and step is not None and step not in (held := checkpoint_steps(folder)):
            problem = f"no step {step} there (it holds {held})"
        if problem:
            raise RunError(f"--stage {name}={folder}: {problem}")
    _, test_tasks, _, _ = prepare(config, workdir, sides=())
    agent = Agent(config, seed=config.seed)
    pcfg = PromptConfig(**config.prompt.to_dict())
    results = {}
    for name, folder, at_step in stages:
        params, step = load_stage_params(folder, field=f"--stage {name}", step=at_step)
        set_agent_params(agent, params, folder)
        t0 = time.time()
        if "env" in config:
            r = evaluate_online_pool(agent, test_tasks, pcfg, config, seed=config.seed, temperature=temperature,
                                     trials=trials)
        else:  # recipes without an env block (the quickstart) run PhoneSim in this process, as their job does
            r = evaluate_in_process(agent, test_tasks, pcfg, config, temperature=temperature, trials=trials)
        r.update({"checkpoint": folder, "step": int(step), "eval_wall_s": round(time.time() - t0, 1),
                  "held_out_vs_checkpoint": report_checkpoint_overlap(folder, test_tasks, f"stage {name}")})
        results[name] = r
        lo, hi = r["online_SR_ci95"]
        print(f"{name}: SR {r['online_SR']:.3f} [{lo:.3f}, {hi:.3f}] n={r['n']}", flush=True)
    return results, len(test_tasks)


def evaluate_in_process(agent, tasks, pcfg, config, *, temperature: float, trials: int) -> dict:
    """Online SR of the held-out tasks on PhoneSim in this process (lock-step batches, the quickstart's own
    online evaluation) at the recipe's screenshot resolution and `eval.max_steps`."""
    from gui_jax.eval.online_success import run_online_episodes
    from gui_jax.jobs.online_rl import success_summary
    records = run_online_episodes(agent.policy, tasks, pcfg, trials=trials, temperature=temperature,
                                  resolution=tuple(config.data.resolution), max_steps=int(config.eval.max_steps),
                                  seed=config.seed)
    by_task: dict = {}
    for r in records:
        by_task.setdefault(r["task_id"], []).append(int(r["success"]))
    return success_summary(by_task, trials=trials, temperature=temperature, seed=config.seed)


def row_cells(summary: dict, paired: dict | None, *, first: bool) -> str:
    """A table row's cells after its name: SR [95 % CI] | n | gained / lost | Δ SR [bootstrap] | p (test) |."""
    lo, hi = summary["online_SR_ci95"]
    cells = f" {summary['online_SR']:.3f} [{lo:.3f}, {hi:.3f}] | {summary['n']} |"
    if paired and paired["tasks"]:
        lo, hi = paired["diff_ci95"]
        return cells + (f" {paired['gained']} / {paired['lost']} | {paired['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
                        f"{paired['p']:.3g} ({paired['test']}) |")
    return cells + (" | | |" if first else " no common task | | |")


def markdown(report: dict) -> str:
    """The report as markdown: the command, one row per stage, the overlap line of each checkpoint."""
    from gui_jax.jobs.common import overlap_line
    trials, temperature = report["trials"], report["temperature"]
    how = ("greedy, Wilson 95 % intervals" if trials == 1 else
           f"{trials} episodes per task at temperature {temperature}, 95 % intervals by bootstrap over tasks")
    lines = [f"Command: `{report['command']}`", "",
             f"Online SR on {report['held_out_tasks']} held-out tasks ({how}); each stage against the first, "
             "paired by task (gained / lost: tasks whose success rose / fell); Δ SR with its paired-bootstrap "
             "95 % interval.", "",
             "| stage | online SR [95 % CI] | episodes | vs first: tasks gained / lost | Δ SR [95 % bootstrap] | p (test) |",
             "|---|---|---|---|---|---|"]
    stages = report["stages"]
    first = next(iter(stages))
    for name, r in stages.items():
        lines.append(f"| {name} |" + row_cells(r, report["paired_vs_first"].get(f"{name} vs {first}"),
                                               first=name == first))
    lines.append("")
    lines += [overlap_line(r.get("held_out_vs_checkpoint"), f"stage {name}") for name, r in stages.items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m gui_jax.jobs.paired_checkpoints",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="the recipe: model, prompt, env, eval and held-out split")
    ap.add_argument("--stage", action="append", required=True, metavar="NAME=CHECKPOINT_DIR[@STEP]")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="a field of the recipe")
    ap.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    ap.add_argument("--trials", type=int, default=1, help="episodes per task (several need a temperature > 0)")
    ap.add_argument("--test", choices=TESTS, default="mcnemar")
    ap.add_argument("--workdir", default="runs/paired_checkpoints", help="where the held-out task lists go")
    ap.add_argument("--out", required=True, help="output path without extension (.json and .md are written)")
    a = ap.parse_args(argv)
    try:
        stages = parse_stages(a.stage)
    except ValueError as e:
        ap.error(str(e))
    if len(stages) < 2:
        ap.error("give at least two --stage NAME=DIR: each is compared with the first")
    if a.trials < 1 or (a.trials > 1 and a.temperature <= 0):
        ap.error(f"--trials {a.trials} --temperature {a.temperature}: trials must be >= 1, and several trials "
                 "need a temperature > 0 (greedy episodes repeat)")
    from gui_jax.jobs import literal_overrides, load_config
    try:
        config = load_config(a.config, **literal_overrides(a.set))
        results, n_tasks = evaluate_stages(config, stages, a.workdir, temperature=a.temperature, trials=a.trials)
    except (KeyError, ValueError) as e:  # an unknown field, a bad value (ConfigError, RunError), no checkpoint
        print(f"error: {e}", file=sys.stderr)
        return 2
    report = {"command": shlex.join(["python", "-m", "gui_jax.jobs.paired_checkpoints"] + argv),
              "held_out_tasks": n_tasks, "temperature": a.temperature, "trials": a.trials, "load_avg": os.getloadavg(),
              "stages": {k: {f: v.get(f) for f in KEPT} for k, v in results.items()},
              "paired_vs_first": paired_against_first({k: v["online_success"] for k, v in results.items()},
                                                      test=a.test)}
    write_report(a.out, report, markdown(report))
    return 0


def write_report(out: str, report: dict, md: str) -> None:
    """OUT.json (the report) and OUT.md (its markdown, also printed); OUT's folder made if missing."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".json", "w") as f:
        json.dump(report, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    sys.exit(main())
