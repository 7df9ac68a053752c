"""Training logs: TensorBoard event files, a JSONL of every scalar, and PNG curve plots."""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections import defaultdict
from typing import Iterable, Optional

from absl import logging


def _summary_writer_class():
    """tensorboardX's SummaryWriter, imported without PyTorch: tensorboardX imports torch when it is installed
    (for tensor types we never pass: we log Python floats), which costs every job process seconds at start-up."""
    if "tensorboardX" in sys.modules or "torch" in sys.modules:
        from tensorboardX import SummaryWriter
        return SummaryWriter
    sys.modules["torch"] = None   # makes `import torch` raise ImportError, which tensorboardX handles
    try:
        from tensorboardX import SummaryWriter
    finally:
        del sys.modules["torch"]
    return SummaryWriter


class MetricsLogger:
    """Writes scalars under `<workdir>/logs` (TensorBoard) and `<workdir>/metrics.jsonl`.

    Each (name, step) is written once across restarts: on open the existing metrics.jsonl is read
    (a line torn by a kill is dropped), and a later write of an already logged (name, step) — a
    resumed run redoing the steps after its last checkpoint, or a cached evaluation re-reported —
    is skipped in both the JSONL and TensorBoard (the first value stays; resumed training repeats
    it exactly). TensorBoard events go out after the JSONL line, so they are never ahead of it.
    """

    def __init__(self, workdir: str, *, tensorboard: bool = True):
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.jsonl_path = os.path.join(workdir, "metrics.jsonl")
        self.history: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self._logged: set[tuple[str, int]] = set()
        self.skipped = 0  # writes dropped as already logged (this session)
        if os.path.exists(self.jsonl_path):
            self._load_existing()
        self._tb = None
        self._tensorboard = tensorboard

    def _load_existing(self) -> None:
        with open(self.jsonl_path, "rb") as f:
            raw = f.read()
        kept, changed = [], False
        lines = raw.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            changed = True  # the last line has no newline: torn by a kill mid-write
            lines.pop()
        for line in lines:
            try:
                rec = json.loads(line)
                key = (rec["name"], int(rec["step"]))
                value = float(rec["value"])
            except (ValueError, KeyError, TypeError):
                changed = True
                continue
            if key in self._logged:
                changed = True  # a duplicate left by an older version: keep the first
                continue
            self._logged.add(key)
            self.history[key[0]].append((key[1], value))
            kept.append(line)
        if changed:
            tmp = self.jsonl_path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(b"".join(ln + b"\n" for ln in kept))
            os.replace(tmp, self.jsonl_path)

    def _open_tensorboard(self):
        SummaryWriter = _summary_writer_class()
        # A unique file per writer: two writers in the same second (a quick restart) would
        # otherwise share tensorboardX's default file name and the second would truncate the first.
        return SummaryWriter(os.path.join(self.workdir, "logs"),
                             filename_suffix=f".{os.getpid()}.{time.time_ns()}")

    def logged(self, name: str, step: int) -> bool:
        return (name, int(step)) in self._logged

    def write(self, step: int, scalars: dict, prefix: str = "") -> None:
        step = int(step)
        fresh = []
        for k, v in scalars.items():
            if v is None:
                continue
            name = f"{prefix}/{k}" if prefix else k
            if (name, step) in self._logged:
                self.skipped += 1
                continue
            fresh.append((name, float(v)))
        if not fresh:
            return
        with open(self.jsonl_path, "a") as f:
            f.write("".join(json.dumps({"name": n, "step": step, "value": v}) + "\n" for n, v in fresh))
        if self._tensorboard and self._tb is None:
            self._tb = self._open_tensorboard()
        for name, v in fresh:
            self._logged.add((name, step))
            self.history[name].append((step, v))
            if self._tb is not None and math.isfinite(v):
                self._tb.add_scalar(name, v, step)
        if self._tb is not None:
            self._tb.flush()

    def plot(self, path: Optional[str] = None, names: Optional[Iterable[str]] = None) -> str:
        """One PNG with a subplot per metric (last value per step wins)."""
        # a bare Figure (no pyplot: no global figure registry or GUI backend) and fixed margins instead of
        # tight_layout's text measuring: cheaper, and every job plots
        from matplotlib.figure import Figure
        names = sorted(names or self.history)
        names = [n for n in names if self.history.get(n)]
        path = path or os.path.join(self.workdir, "training_curves.png")
        if not names:
            return path
        cols = min(3, len(names))
        rows = math.ceil(len(names) / cols)
        width, height = 5.0 * cols, 3.2 * rows
        fig = Figure(figsize=(width, height))
        axes = fig.subplots(rows, cols, squeeze=False)
        for ax, name in zip(axes.flat, names):
            pts = dict(self.history[name])
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], marker="." if len(xs) < 50 else None)
            ax.set_title(name, fontsize=9)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(names):]:
            ax.axis("off")
        # margins in inches (titles above, tick labels left and below), as fractions of this figure
        fig.subplots_adjust(left=0.75 / width, right=1 - 0.15 / width, bottom=0.35 / height, top=1 - 0.3 / height,
                            wspace=0.35, hspace=0.45)
        fig.savefig(path, dpi=80)
        logging.info("training curves written to %s", path)
        return path

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
