"""Where a training loop's wall time goes, as lines in its log: the wait for the first batch, each update that
compiled a new micro-batch shape, and every `every` updates the seconds spent waiting for data, building
micro-batches on the host, and in the update itself (device work + its one host sync). On an accelerator these
say what bounds a run: the data workers, the host's batching, or the device."""
from __future__ import annotations

import time
from typing import Callable, Optional


def compiled_count(updater) -> int:
    """Executables the updater's jitted functions hold (jax's per-function cache; 0 where it cannot be read)."""
    total = 0
    for name in ("zeros_jit", "accumulate_jit", "apply_jit"):
        size = getattr(getattr(updater, name, None), "_cache_size", None)
        total += size() if callable(size) else 0
    return total


class StepTiming:
    """Call `begin()`, `data_done()`, `batching_done(micro)`, `update_done(step)` in that order each update; the
    time between an update's end and the next begin() (logging, evaluations, checkpoints) is counted as other."""

    def __init__(self, prefix: str, updater, write: Callable[[str], None], every: int = 100,
                 clock: Callable[[], float] = time.perf_counter):
        self.prefix, self.updater, self.write, self.every, self.clock = prefix, updater, write, int(every), clock
        self.started = self.mark = clock()
        self.totals = {"data": 0.0, "batching": 0.0, "update": 0.0, "other": 0.0}
        self.updates, self.first_batch_s = 0, None
        self.compiled = compiled_count(updater)
        self._micro: list = []                         # this update's micro-batches (read only when it compiled)
        self._compiled_shapes: Optional[list] = None   # their array shapes at the last update that compiled

    def _lap(self, key: str) -> float:
        now = self.clock()
        dt, self.mark = now - self.mark, now
        self.totals[key] += dt
        return dt

    def begin(self) -> None:
        self._lap("other")

    def data_done(self) -> None:
        self._lap("data")
        if self.first_batch_s is None:
            self.first_batch_s = self.mark - self.started
            self.write(f"{self.prefix}: first batch after {self.first_batch_s:.1f} s")

    def batching_done(self, micro_batches) -> None:
        self._lap("batching")
        self._micro = micro_batches

    def _describe(self, shapes: list) -> str:
        """The micro-batches' input_ids shapes, and the other arrays whose shapes are new since the last compile
        for a reason other than the row length (an array whose shape holds its micro-batch's row length follows
        input_ids)."""
        text = f"micro-batches {[s.get('input_ids') for s in shapes]}"
        seen = {(k, v) for s in (self._compiled_shapes or []) for k, v in s.items()}
        changed = sorted({f"{k}={v}" for s in shapes for k, v in s.items()
                          if k != "input_ids" and self._compiled_shapes is not None and (k, v) not in seen
                          and s.get("input_ids", (0, 0))[-1] not in v})
        return text + (f" (other shapes new: {', '.join(changed)})" if changed else "")

    def update_done(self, step: int) -> None:
        dt = self._lap("update")
        self.updates += 1
        compiled = compiled_count(self.updater)
        if compiled > self.compiled:
            shapes = [{k: tuple(v.shape) for k, v in mb.items() if hasattr(v, "shape")} for mb in self._micro]
            self.write(f"{self.prefix}: update {step} compiled {compiled - self.compiled} new executable(s) for "
                       f"{self._describe(shapes)} in {dt:.1f} s")
            self.compiled, self._compiled_shapes = compiled, shapes
        if self.every and self.updates % self.every == 0:
            t = self.totals
            self.write(f"{self.prefix}: updates {step - self.every + 1}-{step}: data wait {t['data']:.1f} s, "
                       f"host batching {t['batching']:.1f} s, update {t['update']:.1f} s, other (logs, evaluations, "
                       f"checkpoints) {t['other']:.1f} s")
            self.totals = dict.fromkeys(t, 0.0)
