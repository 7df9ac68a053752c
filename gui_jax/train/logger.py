"""Training logs: TensorBoard event files, a JSONL of every scalar, and PNG curve plots."""
from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from typing import Iterable, Optional

from absl import logging


class MetricsLogger:
    """Writes scalars under `<workdir>/logs` (TensorBoard) and `<workdir>/metrics.jsonl`.

    Resumable: on re-open, entries at or after `resume_step` for the same stage are dropped from
    the in-memory history so the curves have no duplicates after a restart.
    """

    def __init__(self, workdir: str, *, tensorboard: bool = True):
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.jsonl_path = os.path.join(workdir, "metrics.jsonl")
        self.history: dict[str, list[tuple[int, float]]] = defaultdict(list)
        if os.path.exists(self.jsonl_path):
            with open(self.jsonl_path) as f:
                for line in f:
                    if line.strip():
                        rec = json.loads(line)
                        self.history[rec["name"]].append((rec["step"], rec["value"]))
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter
            self._tb = SummaryWriter(os.path.join(workdir, "logs"))

    def write(self, step: int, scalars: dict, prefix: str = "") -> None:
        with open(self.jsonl_path, "a") as f:
            for k, v in scalars.items():
                if v is None:
                    continue
                v = float(v)
                name = f"{prefix}/{k}" if prefix else k
                self.history[name].append((int(step), v))
                f.write(json.dumps({"name": name, "step": int(step), "value": v}) + "\n")
                if self._tb is not None and math.isfinite(v):
                    self._tb.add_scalar(name, v, int(step))
        if self._tb is not None:
            self._tb.flush()

    def plot(self, path: Optional[str] = None, names: Optional[Iterable[str]] = None) -> str:
        """One PNG with a subplot per metric (last value per step wins)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        names = sorted(names or self.history)
        names = [n for n in names if self.history.get(n)]
        path = path or os.path.join(self.workdir, "training_curves.png")
        if not names:
            return path
        cols = min(3, len(names))
        rows = math.ceil(len(names) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
        for ax, name in zip(axes.flat, names):
            pts = dict(self.history[name])
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], marker="." if len(xs) < 50 else None)
            ax.set_title(name, fontsize=9)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(names):]:
            ax.axis("off")
        fig.tight_layout()
        fig.savefig(path, dpi=80)
        plt.close(fig)
        logging.info("training curves written to %s", path)
        return path

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
