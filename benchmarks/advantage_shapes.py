"""UI-S1's advantages over a run of rollout batches whose step counts all differ, as semi-online RL makes them:
the bucketed, jitted `rl.advantages.ui_s1_semi_online` against the same math called eagerly on the unpadded
arrays (the earlier path: every op traced and compiled again for each new count).

    python -m benchmarks.advantage_shapes [--json out.json] [--batches 20] [--repeats 3]

Each batch has 90-100 trajectories of 2-4 steps in groups of 4 (the quickstart's 8 tasks x 4 rollouts, three
tries), so counts fall in two or three power-of-two buckets. Both paths first run --batches batches untimed (as a
run's first iterations warm the caches); each repeat then times --batches batches with counts not seen before. The load average
before and after is written beside the ratio; run it alone (a ratio taken while other jobs load the machine is
not a result). The work is dispatch and compilation, not arithmetic, so no FLOP/s bound applies.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np


def rollout_batches(count: int, seed: int = 0) -> list[tuple]:
    """`count` (rewards, traj_ids, step_index, group_ids, mismatch) batches, each with its own step count
    (distinct totals in 180-400 drawn without replacement, so at most 221)."""
    rng = np.random.default_rng(seed)
    batches = []
    for total in rng.permutation(np.arange(180, 401))[:count]:
        n_traj = int(rng.integers(max(90, -(-total // 4)), min(100, total // 2) + 1))
        lens = np.full(n_traj, 2)
        extra = rng.permutation(np.repeat(np.arange(n_traj), 2))[:total - 2 * n_traj]   # up to +2 a trajectory
        np.add.at(lens, extra, 1)
        traj = np.repeat(np.arange(n_traj), lens).astype(np.int32)
        step = np.concatenate([np.arange(k) for k in lens]).astype(np.int32)
        batches.append((rng.random(len(traj)).astype(np.float32), traj, step, (traj // 4).astype(np.int32),
                        rng.random(len(traj)) < 0.1))
    return batches


def run(batches: int, repeats: int) -> dict:
    import jax.numpy as jnp
    from gui_jax.rl import advantages as A
    data = rollout_batches(batches * (repeats + 1))
    eager = A._ui_s1_semi_online_padded.__wrapped__   # the math without the bucket or the jit

    def bucketed(part):
        return [np.asarray(A.ui_s1_semi_online(*b)["advantages"]) for b in part]

    def unbucketed(part):
        return [np.asarray(eager(*map(jnp.asarray, b), gamma=0.5, omega=1.0, cut_at_mismatch=True,
                                 episode_level="paper", ddof=1, eps=A.EPS)["advantages"]) for b in part]
    # the first `batches` warm both paths (a run's first iterations); each repeat then times counts not seen yet
    for got, want in zip(bucketed(data[:batches]), unbucketed(data[:batches])):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    times = {"bucketed": [], "unbucketed": []}
    for r in range(1, repeats + 1):
        part = data[r * batches:(r + 1) * batches]
        for name, fn in (("bucketed", bucketed), ("unbucketed", unbucketed)):
            t0 = time.perf_counter()
            fn(part)
            times[name].append(time.perf_counter() - t0)
    med = {k: float(np.median(v)) for k, v in times.items()}
    return {"batches": batches, "step_counts": sorted(len(b[0]) for b in data), "repeats": repeats,
            "seconds": times, "median_s": med, "per_batch_ms": {k: 1e3 * v / batches for k, v in med.items()},
            "speedup": med["unbucketed"] / med["bucketed"]}


def main(argv=None) -> dict:
    from benchmarks.timing import report
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default="")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    load_before = os.getloadavg()
    out = run(a.batches, a.repeats)
    out.update({"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                "load_average_before": load_before, "load_average_after": os.getloadavg()})
    return report(out, a.json)


if __name__ == "__main__":
    main()
