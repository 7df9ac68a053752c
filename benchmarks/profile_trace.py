"""Where a jitted call's device time goes: one call traced with jax.profiler, its kernels summed by name.

`profile_call(fn, workdir)` runs `fn` once (already compiled) under `jax.profiler.trace` and returns
`summarize_trace(<the Perfetto JSON it wrote>, wall_s)`: device busy time against the call's wall time, each
kernel category's share (matmul, attention, copy, collective, other) and the top kernels by summed time. On a
CPU backend there is no device track; the host's XLA-op events are summed instead (the summary says which).
"""
from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import re
import time

# kernel-name patterns -> category (first match wins); names are cuBLAS / CUTLASS / cuDNN / XLA fusion names
CATEGORIES = (
    ("attention", re.compile(r"cudnn|fmha|flash|sdpa|attention", re.I)),
    ("matmul", re.compile(r"gemm|cublas|cutlass|nvjet|sm\d+_xmma|wgmma|dot|matmul", re.I)),
    ("copy", re.compile(r"memcpy|memset|copy|transpose", re.I)),
    ("collective", re.compile(r"nccl|all-reduce|all-gather|reduce-scatter", re.I)),
)
ENCLOSING_LINES = re.compile(r"Module|Step|Launch Stats|Source|Framework|Scope", re.I)
HOST_SKIP = re.compile(r"^\$|profiler|PjitFunction|Await|Execute|Allocate|ParseArguments|Handle inputs|"
                       r"ThreadPool", re.I)


def category(name: str) -> str:
  for label, pattern in CATEGORIES:
    if pattern.search(name):
      return label
  return "other"


def trace_events(path: str) -> list[dict]:
  opener = gzip.open if path.endswith(".gz") else open
  with opener(path, "rt") as f:
    data = json.load(f)
  return data["traceEvents"] if isinstance(data, dict) else data


def summarize_trace(events: list[dict], wall_s: float, top: int = 15) -> dict:
  """events: Chrome/Perfetto trace events (ph 'X' complete events carry dur in microseconds)."""
  process = {e["pid"]: e.get("args", {}).get("name", "") for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
  thread = {(e["pid"], e.get("tid")): e.get("args", {}).get("name", "") for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"}
  device_pids = {pid for pid, name in process.items() if re.search(r"/device:(GPU|TPU)", name)}
  track = "device" if device_pids else "host XLA ops (no device track)"
  # a device's summary lines (modules, steps) enclose its kernels: only the kernel lines are summed
  per_thread: collections.Counter = collections.Counter()
  by_name: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
  for e in events:
    if e.get("ph") != "X" or "dur" not in e:
      continue
    if device_pids:
      if e["pid"] not in device_pids:
        continue
      line = thread.get((e["pid"], e.get("tid")), "")
      per_thread[f"{process[e['pid']]} {line}".strip()] += e["dur"] * 1e-6
      if ENCLOSING_LINES.search(line):
        continue
    elif HOST_SKIP.search(e.get("name", "")):
      continue
    entry = by_name[e["name"]]
    entry[0] += e["dur"] * 1e-6
    entry[1] += 1
  busy = sum(s for s, _ in by_name.values())
  shares = collections.Counter()
  for name, (s, _) in by_name.items():
    shares[category(name)] += s
  ranked = sorted(by_name.items(), key=lambda kv: -kv[1][0])[:top]
  return {
      "track": track, "wall_s": wall_s, "busy_s": busy, "kernels": sum(n for _, n in by_name.values()),
      "busy_fraction_of_wall": busy / wall_s if wall_s else None,
      "category_s": {k: shares[k] for k in sorted(shares)}, "device_lines_s": dict(per_thread),
      "top": [{"name": n[:160], "category": category(n), "total_s": s, "calls": c,
               "share_of_busy": s / busy if busy else None} for n, (s, c) in ranked]}


def profile_call(fn, workdir: str, reference_s: float | None = None, top: int = 15) -> dict:
  """Traces one call of `fn` (compiled already; it must block until its results are ready) and summarises it
  against `reference_s` (the call's untraced median time; the traced wall time, tracing included, if None)."""
  import jax
  os.makedirs(workdir, exist_ok=True)
  t0 = time.perf_counter()
  with jax.profiler.trace(workdir, create_perfetto_trace=True):
    fn()
  traced_wall = time.perf_counter() - t0
  paths = sorted(glob.glob(os.path.join(workdir, "**", "perfetto_trace.json.gz"), recursive=True),
                 key=os.path.getmtime)
  if not paths:
    raise FileNotFoundError(f"jax.profiler.trace wrote no perfetto_trace.json.gz under {workdir}")
  summary = summarize_trace(trace_events(paths[-1]), reference_s or traced_wall, top)
  return dict(summary, traced_wall_s=traced_wall)
