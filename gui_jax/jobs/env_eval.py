"""Job: online evaluation on any env backend for a task list given in config, with per-task success rates
and 95 % Wilson intervals (MiniWob++ pages, PhoneSim templates, an env-server fleet, devices, AndroidWorld).

    python -m gui_jax.main --config configs/miniwob_eval.py --config.eval.checkpoint_dir=runs/x/checkpoints \
        --config.env.tasks='("click-test","click-button","enter-text")' --config.env.seeds='(0,1,2,3,4)'

    ... --config.env.backend=android --config.env.serials='("emulator-5554",)' --config.env.tasks='("Settings|Open Wi-Fi",)'
Envs and tasks come from `config.env` (gui_jax/envs/factory.py, the backend table every episode job shares).
Episodes run through the rollout engine (lock-step, greedy by default) over an `EnvPool` of
`env.n_envs` envs (one per device for android), at most `eval.max_steps` steps each; env failures are retried and reported, never counted as policy failures.
Writes env_eval.json (per task: n, successes, SR, CI; overall; the rollout report), results.md (the table and the
viewer command) and the first `eval.save_trajectories` episodes under trajectories/ (gui_jax/jobs/trajectories.py;
`python -m gui_jax.view WORKDIR/trajectories --out report.html`), and prints the table.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from gui_jax.config_check import RunError


def make_tasks(ecfg) -> list:
    """The configured task list × env.seeds for the configured backend (gui_jax/envs/factory.py)."""
    from gui_jax.envs.factory import backend_tasks
    tasks = backend_tasks(ecfg)
    if not tasks:
        raise RunError(f"config.env.tasks = {tuple(ecfg.get('tasks', ()))!r}: env_eval needs the tasks to run "
                       f"on env.backend = {ecfg.get('backend')!r} (templates, pages, goals or task types)")
    return tasks


def env_factory(ecfg, max_steps: int, render: bool = True):
    """slot → env for the configured backend (the one backend table: gui_jax/envs/factory.py)."""
    from gui_jax.envs.factory import make_env_factory
    return make_env_factory(ecfg, render=render, max_steps=max_steps)


def per_task_table(records) -> dict:
    """{task name: {n, successes, SR, ci95}} over completed episodes, plus "overall" and env failures."""
    from gui_jax.eval.metrics import wilson_interval
    by_task = defaultdict(list)
    failures = 0
    for r in records:
        if r.status != "completed":
            failures += 1
            continue
        by_task[r.task.template].append(bool(r.success))
    out = {}
    for name in sorted(by_task):
        wins = by_task[name]
        out[name] = {"n": len(wins), "successes": sum(wins), "SR": sum(wins) / len(wins),
                     "ci95": list(wilson_interval(sum(wins), len(wins)))}
    allw = [w for v in by_task.values() for w in v]
    out["overall"] = {"n": len(allw), "successes": sum(allw), "SR": sum(allw) / max(len(allw), 1),
                      "ci95": list(wilson_interval(sum(allw), len(allw))) if allw else [0.0, 1.0]}
    out["env_failures"] = failures
    return out


def evaluate_on_envs(policy, make_env, tasks, pcfg, *, num_envs: int, max_steps: int, temperature: float = 0.0,
                     trials: int = 1, prompt_fn=None, parse_fn=None, seed: int = 0, env_cfg=None):
    """Runs every task `trials` times; returns (records, per-task table, rollout report). `env_cfg`: the env
    block, whose pool sizes and timeouts then apply (else `num_envs` envs with the pool's defaults)."""
    from gui_jax.envs.factory import make_pool
    from gui_jax.envs.pool import EnvPool, PoolConfig
    from gui_jax.rl.rollout import RolloutConfig, RolloutEngine, rollout_report
    pool = (make_pool(env_cfg, make_env) if env_cfg is not None
            else EnvPool(make_env, PoolConfig(n_active=num_envs, n_standby=0)))
    try:
        engine = RolloutEngine(policy, pool, pcfg, RolloutConfig(mode="sync", max_steps=max_steps,
                                                                  temperature=temperature, seed=seed),
                               prompt_fn=prompt_fn, parse_fn=parse_fn)
        records = engine.run(tasks, trials=trials)
        engine.close()
    finally:
        pool.close()
    return records, per_task_table(records), rollout_report(records)


def format_table(table: dict) -> str:
    lines = ["| task | n | SR [95 % CI] |", "|---|---|---|"]
    for name, row in table.items():
        if isinstance(row, dict):
            lo, hi = row["ci95"]
            lines.append(f"| {name} | {row['n']} | {row['SR']:.3f} [{lo:.3f}, {hi:.3f}] |")
    lines.append(f"\nenv failures (not counted): {table['env_failures']}")
    return "\n".join(lines)


def run(config, workdir: str) -> None:
    from gui_jax.envs.factory import check_reachable, pool_size
    from gui_jax.jobs.common import eval_agent, require_weights
    from gui_jax.eval.androidlab import records_report
    from gui_jax.jobs.trajectories import FOLDER, report_line, save_records, saved_count
    ecfg = config.env
    require_weights(config, "env_eval")
    check_reachable(ecfg)  # an offline device or server stops here, in one line
    tasks = make_tasks(ecfg)
    agent, pcfg = eval_agent(config)
    max_steps = int(config.eval.max_steps)
    make_env = env_factory(ecfg, max_steps, render=pcfg.observation in ("screenshot", "both"))
    records, table, report = evaluate_on_envs(agent.policy, make_env, tasks, pcfg, num_envs=pool_size(ecfg)[0],
                                              max_steps=max_steps, temperature=config.eval.temperature,
                                              trials=config.eval.trials, seed=config.seed, env_cfg=ecfg)
    saved = save_records(records, os.path.join(workdir, FOLDER), saved_count(config))
    with open(os.path.join(workdir, "env_eval.json"), "w") as f:
        json.dump({"per_task": table, "rollouts": report, "androidlab": records_report(records),
                   "trajectories_saved": saved}, f, indent=1)
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(f"# env_eval: {len(records)} episodes on env.backend = {ecfg.backend}\n\n{format_table(table)}\n\n"
                f"SR over completed episodes; [lo, hi] = Wilson 95 % interval\n\n{report_line(workdir, saved)}")
    print(format_table(table))
