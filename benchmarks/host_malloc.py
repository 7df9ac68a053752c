"""The quickstart's SFT update under the two host allocator policies (gui_jax/host_malloc.py): glibc's defaults
(`system`) and the jobs' `keep` (one heap, no mmap, no trimming).

    python -m benchmarks.host_malloc [--json out.json] [--batches 15] [--rounds 2] [--repeats 2]

A policy is fixed when a process starts its threads, so each measurement is a child process running
benchmarks/sft_packing.py with GUI_JAX_HOST_MALLOC set, the policies alternating, `--repeats` children each.
Reported per policy: seconds an update of `512_even` (the quickstart's packing; the median over children of each
child's median round; `512_fixed` beside it), and each child's user / system CPU seconds, minor page faults and
peak resident memory. The load average before and after and the CPU's float32 FMA peak are written beside the
ratio: run it alone.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

from benchmarks.pretrain import cpu_fma_peak
from benchmarks.timing import report

POLICIES = ("system", "keep")
VARIANT = "512_even"


def run_child(policy: str, batches: int, rounds: int) -> dict:
    """One sft_packing run under `policy`: its update seconds and the child's own CPU, fault and memory figures
    (os.wait4's rusage of that child alone)."""
    with tempfile.TemporaryDirectory(prefix="host_malloc_") as tmp:
        out = os.path.join(tmp, "out.json")
        env = dict(os.environ, GUI_JAX_HOST_MALLOC=policy)
        child = subprocess.Popen([sys.executable, "-m", "benchmarks.sft_packing", "--batches", str(batches),
                                  "--rounds", str(rounds), "--json", out], env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise RuntimeError(f"benchmarks.sft_packing under {policy} exited with {child.returncode}")
        with open(out) as f:
            variants = json.load(f)["variants"]
    return {"update_s": {k: v["update_s"] for k, v in variants.items()},
            "first_pass_s": {k: v["first_pass_s"] for k, v in variants.items()}, "user_s": usage.ru_utime,
            "system_s": usage.ru_stime, "minor_faults": usage.ru_minflt, "peak_rss_mb": usage.ru_maxrss / 1024}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default="")
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args(argv)
    load_before = os.getloadavg()
    runs = {p: [] for p in POLICIES}
    for _ in range(a.repeats):
        for policy in POLICIES:
            runs[policy].append(run_child(policy, a.batches, a.rounds))
    update_s = {p: statistics.median(r["update_s"][VARIANT] for r in rs) for p, rs in runs.items()}
    result = {"benchmark": "host_malloc", "machine": platform.processor() or platform.machine(),
              "variant": VARIANT, "batches": a.batches, "rounds": a.rounds, "runs": runs, "update_s": update_s,
              "speedup_keep_over_system": update_s["system"] / update_s["keep"],
              "load_avg_before": load_before, "load_avg_after": os.getloadavg(), "cpu": cpu_fma_peak()}
    return report(result, a.json)


if __name__ == "__main__":
    main()
