"""Does the cheap offline metric predict the expensive online one? (UI-S1 Fig. 4: SOP vs online SR.)"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def linear_fit(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    """Least-squares y ≈ slope·x + intercept over n ≥ 3 points; R² = 1 − SS_res/SS_tot and Pearson r.

    x, y: [n] floats. R² is NaN when y is constant (nothing to explain); slope is NaN when x is constant.
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
    n = x.size
    if n < 3:
        raise ValueError(f"a fit needs at least 3 points, got {n}")
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy, sxy = float(dx @ dx), float(dy @ dy), float(dx @ dy)
    slope = sxy / sxx if sxx > 0 else float("nan")
    intercept = float(y.mean() - slope * x.mean()) if sxx > 0 else float("nan")
    if sxx > 0 and syy > 0:
        resid = y - (slope * x + intercept)
        r2 = 1.0 - float(resid @ resid) / syy
        r = sxy / np.sqrt(sxx * syy)
    else:
        r2 = r = float("nan")
    return {"n": n, "slope": slope, "intercept": intercept, "r2": r2, "pearson_r": float(r)}


def r2_bootstrap_interval(x: Sequence[float], y: Sequence[float], *, n_boot: int = 2000, level: float = 0.95,
                          seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of R² over points resampled with replacement (n_boot resamples).

    x, y: [n] floats, n ≥ 3. Resamples whose x or y is constant have no R² and are skipped; the interval is over
    the rest. Deterministic for a given `seed`.
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 3:
        raise ValueError(f"x and y must be 1-D of equal length ≥ 3, got {x.shape} and {y.shape}")
    idx = np.random.default_rng(seed).integers(0, x.size, size=(n_boot, x.size))
    xs, ys = x[idx], y[idx]
    dx, dy = xs - xs.mean(1, keepdims=True), ys - ys.mean(1, keepdims=True)
    sxx, syy, sxy = (dx * dx).sum(1), (dy * dy).sum(1), (dx * dy).sum(1)
    ok = (sxx > 0) & (syy > 0)
    if not ok.any():
        return float("nan"), float("nan")
    r2 = sxy[ok] ** 2 / (sxx[ok] * syy[ok])   # = 1 − SS_res/SS_tot of the least-squares line
    a = (1.0 - level) / 2
    lo, hi = np.quantile(r2, [a, 1.0 - a])
    return float(lo), float(hi)
