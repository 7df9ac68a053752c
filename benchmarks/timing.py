"""Timing of repeated calls, shared by the benchmarks.

    t = time_calls(lambda: step(batch), repeats=5, sync=jax.block_until_ready, warmup=1)
    t.first_call_s   # the first call alone: compilation (JAX) or lazy initialisation (torch) included
    t.times_s        # `repeats` timed calls after the first call and `warmup` untimed ones
    t.median_s       # median of times_s; t.as_dict() is what the benchmarks write to JSON

Each timed call is synchronised (`sync(result)`) before the clock stops, so asynchronous dispatch is not
mistaken for speed. Process CPU time is recorded beside wall time (on a CPU backend the two say whether the
cores were busy).
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable, Optional


@dataclasses.dataclass
class Timing:
  first_call_s: Optional[float]   # None when the caller made the first call itself
  warmup: int                     # untimed calls between the first call and the timed ones
  times_s: list[float]
  cpu_times_s: list[float]

  @property
  def median_s(self) -> float:
    return statistics.median(self.times_s)

  @property
  def median_cpu_s(self) -> float:
    return statistics.median(self.cpu_times_s)

  def as_dict(self) -> dict:
    return {"first_call_s": self.first_call_s, "warmup_calls": self.warmup, "repeats": len(self.times_s),
            "times_s": list(self.times_s), "median_s": self.median_s}


def time_calls(fn: Callable[[], Any], repeats: int, *, sync: Callable[[Any], Any] = lambda x: x,
               warmup: int = 0, first_call: bool = True) -> Timing:
  """Times `repeats` calls of `fn` (each synchronised with `sync`). first_call: time one call apart first
  (compilation); then `warmup` untimed calls."""
  if repeats < 1:
    raise ValueError(f"repeats must be >= 1, got {repeats}")
  first = None
  if first_call:
    t0 = time.perf_counter()
    sync(fn())
    first = time.perf_counter() - t0
  for _ in range(warmup):
    sync(fn())
  walls, cpus = [], []
  for _ in range(repeats):
    w0, c0 = time.perf_counter(), time.process_time()
    sync(fn())
    walls.append(time.perf_counter() - w0)
    cpus.append(time.process_time() - c0)
  return Timing(first, warmup, walls, cpus)


def report(out: dict, path: str = "") -> dict:
  """Prints a benchmark's result as JSON and writes it to `path` when given; returns it."""
  import json
  print(json.dumps(out, indent=1))
  if path:
    with open(path, "w") as f:
      json.dump(out, f, indent=1)
  return out
