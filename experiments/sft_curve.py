"""Learning curve of SFT alone: step metrics on training and held-out episodes and online SR on the
held-out tasks after each of several SFT step counts (one run, continued between evaluations).
Used to tell memorisation (train grounding → 1, held-out flat) from under-training.

    python experiments/sft_curve.py WORKDIR [config.key=python_literal ...] [evals=[250,500,1000]]
        [init_from=runs/quickstart/sft/checkpoints]

init_from continues an SFT stage of the same config from its latest checkpoint (optimizer and data
order included), e.g. the quickstart's 400 steps on to 800 and 1200.

Appends one JSON line per evaluation to WORKDIR.jsonl (the quickstart config with the overrides), with
each held-out task's greedy online success for paired tests between evaluations.
"""
import ast
import json
import os
import resource
import shutil
import sys
import time

from gui_jax.core.recipe_files import recipe_config

HERE = os.path.dirname(os.path.abspath(__file__))


def load_config(overrides):
    config, evals, init_from = recipe_config(os.path.join(HERE, "..", "configs", "quickstart.py")), [], ""
    for kv in overrides:
        key, value = kv.split("=", 1)
        if key == "evals":
            evals = ast.literal_eval(value)
            continue
        if key == "init_from":
            init_from = value
            continue
        node, parts = config, key.removeprefix("config.").split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = ast.literal_eval(value)
    return config, evals or [config.sft.num_steps], init_from


def main(argv):
    from gui_jax.eval.offline import evaluate_steps
    from gui_jax.eval.online_success import online_metrics, run_online_episodes
    from gui_jax.jobs.common import prepare, write_snapshot
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.train.sft import train_sft
    workdir, overrides = argv[0], argv[1:]
    config, evals, init_from = load_config(overrides)
    _, test_tasks, train_eps, test_eps = prepare(config, workdir)
    # the run's config.json, as a job keeps it: a later stage started from these checkpoints can tell
    # which of its held-out tasks this run trained on (jobs/common.start_training_overlap)
    config.job = "sft_curve"
    write_snapshot(config, workdir)
    agent = Agent(config, seed=config.seed)
    pcfg = PromptConfig(**config.prompt.to_dict())
    shutil.rmtree(os.path.join(workdir, "sft"), ignore_errors=True)
    if init_from:
        steps = sorted(int(d) for d in os.listdir(init_from) if d.isdigit())
        if not steps:
            raise SystemExit(f"init_from={init_from}: no step folders (expected an SFT stage's checkpoints)")
        shutil.copytree(os.path.join(init_from, str(steps[-1])),
                        os.path.join(workdir, "sft", "checkpoints", str(steps[-1])))
        print(f"continuing {init_from} from step {steps[-1]}")
    with open(workdir + ".jsonl", "a") as out:
        for n in sorted(evals):
            config.sft.num_steps = n
            w, c = time.time(), time.process_time()
            train_sft(agent, train_eps, pcfg, config.sft, workdir=os.path.join(workdir, "sft"), logger=None)
            w2, c2 = time.time(), time.process_time()
            tr = evaluate_steps(agent.policy, train_eps[:60], pcfg)
            te = evaluate_steps(agent.policy, test_eps, pcfg)
            recs = run_online_episodes(agent.policy, test_tasks, pcfg, trials=1, temperature=0.0,
                                       resolution=tuple(config.data.resolution), max_steps=config.eval.max_steps)
            on = online_metrics(recs)
            rec = {"steps": n, "args": overrides, "train_GR": tr["GR"], "train_SR": tr["SR"], "test_TM": te["TM"],
                   "test_GR": te["GR"], "test_SR": te["SR"], "online_SR": on["SR"], "n_test": len(test_tasks),
                   # per task, for paired tests between evaluations (gui_jax.eval.metrics.mcnemar_exact)
                   "online_success": {r["task_id"]: bool(r["success"]) for r in recs},
                   "n_train": len(train_eps), "sft_wall_s": w2 - w, "sft_cpu_s": c2 - c,
                   "eval_wall_s": time.time() - w2, "eval_cpu_s": time.process_time() - c2,
                   "load_avg": os.getloadavg()[0],
                   "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
