"""Candidate FPM estimators: what value a query inside the measured domain gets.

The measured domain is the same for every candidate (:func:`.predict.predict` decides it: the
query's phase and batch are measured, and a cell of measured points encloses its token
coordinates); only the value differs. Each candidate sees the table's measured points and the
query, within one identity:

- ``phase mean``: the mean time of the points of the query's phase (every batch);
- ``phase-batch mean``: the mean of the points of the query's (phase, batch) partition;
- ``robust fit``: a Huber regression in the geometry, time = a + b·new tokens + c·past KV,
  over the partition (decode: new tokens are the batch, so no b); too few points for the fit
  answer the partition mean;
- ``interpolation``: AISimulate-style multilinear interpolation between the enclosing points;
- ``sol ratio``: SOL of the query times the partition's median measured/SOL ratio (needs a
  SOL reference: without one it does not compete).

Ties in selection go to the earlier name of :data:`CANDIDATES` (the simpler one).

>>> from v41graph.costs.fpm.table import Point
>>> pts = [Point("decode", 1, 1, k, ms) for k, ms in ((0, 10.0), (8, 12.0), (16, 14.0), (24, 16.0), (32, 60.0))]
>>> round(estimate("robust fit", pts, pts, 1, "decode", 1, 12), 3)   # the outlier does not move the line
13.0
>>> estimate("phase-batch mean", pts, pts, 1, "decode", 1, 12)
22.4
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where a fit runs: building the CLI parser names CANDIDATES
    import numpy as np

CANDIDATES = ("phase mean", "phase-batch mean", "robust fit", "interpolation", "sol ratio")
HUBER_K = 1.345  # Huber's tuning constant: 95 % efficiency under normal errors
_IRLS_STEPS = 50


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    import numpy as np
    sw = np.sqrt(w)
    return np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)[0]


def huber_fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Coefficients of a Huber regression of ``y`` on ``x`` by iteratively reweighted least squares.

    It starts from a least-absolute-deviation fit (IRLS too), whose residuals' median absolute
    deviation / 0.6745 fixes the scale: a least-squares start would let one outlier at the edge
    of the grid tilt the line before any weight could discount it. A fixed number of steps keeps
    the result deterministic.

    >>> import numpy as np
    >>> x = np.column_stack([np.ones(5), np.arange(5.0)])
    >>> [round(float(c), 3) for c in huber_fit(x, np.array([1.0, 3.0, 5.0, 7.0, 100.0]))]
    [1.0, 2.0]
    """
    import numpy as np
    w = np.ones(len(y))
    coef = _wls(x, y, w)
    if np.allclose(x @ coef, y, rtol=1e-12, atol=0.0):  # an exact fit: nothing to be robust against
        return coef
    for _ in range(_IRLS_STEPS):  # least absolute deviations: weights 1 / |residual|
        coef = _wls(x, y, w)
        w = 1.0 / np.maximum(np.abs(y - x @ coef), 1e-9 * (1.0 + float(np.abs(y).max())))
    r = y - x @ coef
    scale = float(np.median(np.abs(r - np.median(r)))) / 0.6745
    if scale == 0.0:  # most points on the L1 fit already: it is the answer
        return coef
    for _ in range(_IRLS_STEPS):
        u = np.abs(y - x @ coef) / (HUBER_K * scale)
        coef = _wls(x, y, np.where(u <= 1.0, 1.0, 1.0 / np.maximum(u, 1e-12)))
    return coef


def _robust(part, n: int, k: int) -> float:
    """Huber fit over the partition on the axes that vary in it (decode: past KV only)."""
    import numpy as np
    axes = [a for a in ("total_prefill_tokens", "total_kv_read_tokens") if len({getattr(p, a) for p in part}) > 1]
    if len(part) < len(axes) + 3:  # fewer points than a fit with some redundancy needs
        return statistics.fmean(p.observed_ms for p in part)
    x = np.array([[1.0] + [float(getattr(p, a)) for a in axes] for p in part])
    coef = huber_fit(x, np.array([p.observed_ms for p in part]))
    at = {"total_prefill_tokens": n, "total_kv_read_tokens": k}
    return float(np.dot(coef, [1.0] + [float(at[a]) for a in axes]))


def estimate(name: str, phase_points, part_points, batch: int, phase: str, n: int, k: int, *,
             sol_point: Callable | None = None, sol_query: float | None = None,
             interpolated: float | None = None) -> float | None:
    """The value of candidate ``name`` for the query (phase, batch, new tokens n, past KV k).

    ``phase_points``: the measured points of the query's phase; ``part_points``: those of its
    (phase, batch); ``interpolated``: the interpolation's value (computed by the caller, which
    owns the cell logic); ``sol_point``: SOL ms of a point's shape, ``sol_query``: of the query's.
    """
    if name == "phase mean":
        return statistics.fmean(p.observed_ms for p in phase_points)
    if name == "phase-batch mean":
        return statistics.fmean(p.observed_ms for p in part_points)
    if name == "robust fit":
        return _robust(list(part_points), n, k)
    if name == "interpolation":
        return interpolated
    if name == "sol ratio":
        if sol_point is None or sol_query is None:
            return None
        return statistics.median(p.observed_ms / sol_point(p) for p in part_points) * sol_query
    raise ValueError(f"fpm estimator: must be one of {', '.join(CANDIDATES)}, got {name!r}")


__all__ = ["CANDIDATES", "HUBER_K", "estimate", "huber_fit"]
