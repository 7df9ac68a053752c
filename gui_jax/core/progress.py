"""Progress bars that stay readable in a log file: the one place gui_jax makes a progress bar.

    bar = progress(total=400, desc="sft")          # or: for x in progress(items, desc="episodes")
    bar.update(1); bar.set_postfix(loss="0.412"); bar.close()

On a terminal (or in Jupyter) this is tqdm. When the bar's stream is not a terminal (`> log.txt 2>&1`,
a CI log) tqdm's carriage returns would pile up into one multi-kilobyte line, so the bar degrades to
plain lines instead: one at the first update, then at most one every `interval` seconds, and one at
close — `desc: 120/400 (30%) 12.3 it/s elapsed 0:00:10 loss=0.412`.
"""
from __future__ import annotations

import sys
import time
from typing import Iterable, TextIO

PLAIN_INTERVAL_S = 30.0  # seconds between two plain progress lines


def _in_notebook() -> bool:
    """True inside a Jupyter / Colab kernel (tqdm.auto draws a widget there). The running shell is asked, not
    sys.modules: a process that merely imported ipykernel (a notebook test runner) is no notebook."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return getattr(shell, "kernel", None) is not None


def _interactive(stream: TextIO) -> bool:
    if _in_notebook():
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


class PlainProgress:
    """tqdm's interface (the part gui_jax uses) writing whole lines, at most one per `interval` seconds."""

    def __init__(self, iterable: Iterable | None = None, *, total: int | None = None, desc: str = "",
                 unit: str = "it", initial: int = 0, disable: bool = False, stream: TextIO | None = None,
                 interval: float = PLAIN_INTERVAL_S, clock=time.monotonic):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit
        self.n = self._start_n = initial
        self.disable, self.interval, self._clock = disable, interval, clock
        self._stream = stream
        self._postfix = ""
        self._t0 = clock()
        self._last: float | None = None  # when the last line was written
        self._closed = False

    # -- tqdm's interface
    def __iter__(self):
        for x in self.iterable:
            yield x
            self.update(1)
        self.close()

    def __len__(self):
        return self.total or 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self._clock()
        if self._last is None or now - self._last >= self.interval:
            self._write(now)

    def set_postfix(self, ordered_dict=None, refresh: bool = True, **kwargs) -> None:
        items = dict(ordered_dict or {}, **kwargs)
        self._postfix = " ".join(f"{k}={v}" for k, v in items.items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self._postfix = str(s)

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or ""

    def refresh(self) -> None:
        pass

    def write(self, s: str) -> None:
        """A message line of its own (tqdm.write's role)."""
        self._emit(str(s))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.n != self._start_n or self._last is not None:  # a bar that never moved stays silent
            self._write(self._clock())

    # -- the line
    def line(self, now: float) -> str:
        elapsed = max(now - self._t0, 0.0)
        done = self.n - self._start_n
        count = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        pct = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        rate = f" {done / elapsed:.3g} {self.unit}/s" if elapsed > 0 and done > 0 else ""
        head = f"{self.desc}: " if self.desc else ""
        tail = f" {self._postfix}" if self._postfix else ""
        return f"{head}{count}{pct}{rate} elapsed {_clock(elapsed)}{tail}"[:200]

    def _write(self, now: float) -> None:
        self._last = now
        self._emit(self.line(now))

    def _emit(self, text: str) -> None:
        if self.disable:
            return
        stream = self._stream or sys.stderr
        stream.write(text + "\n")
        stream.flush()


def progress(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
             initial: int = 0, disable: bool = False, leave: bool = True, stream: TextIO | None = None):
    """A tqdm bar on a terminal or in Jupyter, a PlainProgress anywhere else (same calls)."""
    out = stream or sys.stderr
    if _interactive(out):
        from tqdm.auto import tqdm
        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, disable=disable, leave=leave,
                    dynamic_ncols=True, file=out)
    return PlainProgress(iterable, total=total, desc=desc, unit=unit, initial=initial, disable=disable,
                         stream=stream)
