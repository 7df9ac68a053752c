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
