"""PhoneSim throughput: steps/s without rendering, rendered observations/s, resets/s.

    python -m benchmarks.phonesim [--json out.json] [--seconds 5] [--resolution 540x1200]

Workload: round-robin over every template (seed = round index); each episode resets, replays the
oracle's actions and then a few random clicks. Rates are given per wall-clock second and per
process-CPU second (the latter is robust to other processes sharing the cores).
Targets: >= 2000 steps/s without rendering, >= 50 rendered observations/s at 540x1200.

MiniWob++ column (same run, `--no-miniwob` to skip): steps/s of the MiniWob++ backend in headless
Chromium (each step returns a screenshot and the DOM elements), replaying the scripted experts and random
clicks on their pages; resets (page loads) are not timed, as for PhoneSim. The JSON gives PhoneSim/MiniWob
ratios for PhoneSim without rendering and with screenshot + UI tree (the like-for-like observation).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time

from gui_jax.core.types import Action
from gui_jax.envs.sim import TEMPLATES, PhoneSim, make_task


def _episodes(n_rounds: int):
    for r in range(n_rounds):
        for name in sorted(TEMPLATES):
            yield make_task(name, r)


def measure(render: bool, tree_read: bool, seconds: float, resolution) -> dict:
    sim = PhoneSim(render=render, resolution=resolution, max_steps=10**6)
    rng = random.Random(0)
    plans = []
    for task in _episodes(2):  # precompute plans so the oracle is not timed
        acts = [s.action for s in sim.expert_actions(task)[:-1]]
        acts += [Action("click", x=rng.uniform(0, 1080), y=rng.uniform(0, 2400)) for _ in range(3)]
        plans.append((task, acts))
    steps = resets = 0
    step_wall = step_cpu = reset_wall = reset_cpu = 0.0
    t_end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end:
        task, acts = plans[i % len(plans)]
        i += 1
        w0, c0 = time.perf_counter(), time.process_time()
        sim.reset(task)
        w1, c1 = time.perf_counter(), time.process_time()
        reset_wall += w1 - w0
        reset_cpu += c1 - c0
        resets += 1
        for a in acts:
            obs, done, info = sim.step(a)
            if render:
                obs.screenshot
            if tree_read:
                obs.ui_xml
                obs.ui_elements
            steps += 1
        step_wall += time.perf_counter() - w1
        step_cpu += time.process_time() - c1
    return {
        "steps": steps,
        "steps_per_s": steps / step_wall,
        "steps_per_cpu_s": steps / max(step_cpu, 1e-9),
        "resets_per_s": resets / reset_wall,
        "resets_per_cpu_s": resets / max(reset_cpu, 1e-9),
    }


def measure_miniwob(seconds: float) -> dict:
    """MiniWob++ steps/s (screenshot + DOM each step) over the scripted experts' pages."""
    from gui_jax.envs.miniwob import MiniWobEnv, MiniWobTask
    from gui_jax.envs.miniwob_experts import EXPERT_TASKS, expert_actions
    env = MiniWobEnv(max_steps=10**6, max_cached_pages=len(EXPERT_TASKS))
    rng = random.Random(0)
    steps, wall, cpu, i = 0, 0.0, 0.0, 0
    try:
        for name in EXPERT_TASKS:  # start every page's Chromium before timing
            env.reset(MiniWobTask(name, 0))
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            task = MiniWobTask(EXPERT_TASKS[i % len(EXPERT_TASKS)], i)
            i += 1
            obs = env.reset(task)
            acts = [Action("click", x=rng.uniform(0, 160), y=rng.uniform(50, 210)) for _ in range(2)]
            acts += expert_actions(task, obs)
            w0, c0 = time.perf_counter(), time.process_time()
            for a in acts:
                obs, done, info = env.step(a)
                steps += 1
                if done:
                    break
            wall += time.perf_counter() - w0
            cpu += time.process_time() - c0
    finally:
        env.close()
    return {"steps": steps, "steps_per_s": steps / max(wall, 1e-9), "steps_per_cpu_s": steps / max(cpu, 1e-9),
            "pages": len(EXPERT_TASKS)}


def main(argv=None):
    ap = argparse.ArgumentParser(description="PhoneSim throughput benchmark")
    ap.add_argument("--json", default="")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--resolution", default="540x1200")
    ap.add_argument("--no-miniwob", dest="miniwob", action="store_false")
    args = ap.parse_args(argv)
    res = tuple(int(v) for v in args.resolution.lower().split("x"))
    results = {
        "no_render": measure(False, False, args.seconds, res),
        "no_render_with_xml": measure(False, True, args.seconds, res),
        "render": measure(True, False, args.seconds, res),
        "render_with_xml": measure(True, True, args.seconds, res),
    }
    ratios = {}
    if args.miniwob:
        results["miniwob"] = measure_miniwob(args.seconds)
        mw_rate = results["miniwob"]["steps_per_s"]
        ratios = {"phonesim_no_render_over_miniwob": results["no_render"]["steps_per_s"] / mw_rate,
                  "phonesim_render_with_xml_over_miniwob": results["render_with_xml"]["steps_per_s"] / mw_rate}
    out = {
        "benchmark": "phonesim",
        "resolution": list(res),
        "seconds": args.seconds,
        "results": results,
        "ratios": ratios,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        },
        "targets": {"no_render_steps_per_s": 2000, "render_obs_per_s": 50},
    }
    print(f"{'mode':22s}{'steps/s':>10s}{'steps/cpu-s':>13s}{'resets/s':>10s}")
    for k, r in results.items():
        print(f"{k:22s}{r['steps_per_s']:10.0f}{r['steps_per_cpu_s']:13.0f}{r.get('resets_per_s', float('nan')):10.1f}")
    for k, v in ratios.items():
        print(f"{k}: {v:.1f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")
    return out


if __name__ == "__main__":
    main()
