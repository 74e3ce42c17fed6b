"""The SOL gap of one identity: measured whole-forward time against v41graph's bound, per shape.

For each measured point of an FPM table: the observed time, the SOL time of the same shape on
the identity's GPU and policies (and, when asked, the hybrid time), and

- **efficiency** = SOL / observed: the share of the measured forward the bound accounts for
  (1 would be a runtime at the roofline; 0.001 is a runtime 1000× above it);
- **gap** = observed / SOL, its inverse.

Per (phase, batch) the summary gives the median efficiency, its range, and the **elasticity**:
the least-squares slope of log(observed) on log(SOL) over the partition's shapes. A runtime
whose time followed the bound would have elasticity 1; 0 means the measured time does not move
when the work does (a fixed cost dominates). Where the SOL spans less than
:data:`MIN_SOL_SPAN`× within the partition (decode at these lengths: the weights dominate the
bound) the slope would amplify noise, so it is not given. The callers pass the SOL (and hybrid) as
functions of a query, so this module never compiles.

>>> from v41graph.costs.fpm.table import Point, make_table
>>> t = make_table("t", None, [Point("decode", 1, 1, k, 100.0) for k in (1, 10, 100)], "hand")
>>> g = sol_gap(t, lambda q: q.total_kv_read_tokens / 100)
>>> [round(r.efficiency, 4) for r in g.rows], g.summary[0].elasticity
([0.0001, 0.001, 0.01], 0.0)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...costs.fpm.predict import Query
from ...costs.fpm.table import FpmTable, Point

Basis = Callable[[Query], float]  # milliseconds of a query's shape
MIN_SOL_SPAN = 1.5  # max/min SOL within a partition below which no elasticity is fitted


@dataclass(frozen=True)
class GapRow:
    point: Point
    sol_ms: float
    hybrid_ms: float | None

    @property
    def efficiency(self) -> float:
        return self.sol_ms / self.point.observed_ms

    def to_dict(self) -> dict:
        return {**self.point.to_dict(), "sol_ms": self.sol_ms, "hybrid_ms": self.hybrid_ms,
                "efficiency": self.efficiency, "gap": 1 / self.efficiency,
                "hybrid_efficiency": None if self.hybrid_ms is None else self.hybrid_ms / self.point.observed_ms}


@dataclass(frozen=True)
class GapSummary:
    """One (phase, batch) partition: how far the runtime is from the bound and how that moves."""

    phase: str
    batch: int
    points: int
    observed_ms: tuple[float, float]  # min, max
    sol_ms: tuple[float, float]
    median_efficiency: float
    efficiency_range: tuple[float, float]
    elasticity: float | None  # slope of log observed on log SOL; None with one distinct SOL

    def to_dict(self) -> dict:
        return {"phase": self.phase, "batch": self.batch, "points": self.points,
                "observed_ms": list(self.observed_ms), "sol_ms": list(self.sol_ms),
                "median_efficiency": self.median_efficiency, "efficiency_range": list(self.efficiency_range),
                "elasticity": self.elasticity}


@dataclass(frozen=True)
class Gap:
    table: str
    gpu: str
    boundary: str | None
    bases: tuple[str, ...]  # "sol" and, when computed, "hybrid"
    rows: tuple[GapRow, ...]
    summary: tuple[GapSummary, ...]

    def to_dict(self) -> dict:
        return {"table": self.table, "gpu": self.gpu, "boundary": self.boundary, "bases": list(self.bases),
                "summary": [s.to_dict() for s in self.summary], "rows": [r.to_dict() for r in self.rows]}


def elasticity(sol: list[float], observed: list[float]) -> float | None:
    """Least-squares slope of log(observed) on log(sol); None when the SOL spans < MIN_SOL_SPAN×."""
    x = np.log(np.array(sol))
    if float(np.ptp(x)) < math.log(MIN_SOL_SPAN):
        return None
    slope = np.polyfit(x, np.log(np.array(observed)), 1)[0]
    return round(float(slope), 12) + 0.0  # 12 digits: a flat runtime reads 0.0, not 1e-17


def _summary(phase: str, batch: int, rows: list[GapRow]) -> GapSummary:
    eff = [r.efficiency for r in rows]
    obs = [r.point.observed_ms for r in rows]
    sol = [r.sol_ms for r in rows]
    return GapSummary(phase, batch, len(rows), (min(obs), max(obs)), (min(sol), max(sol)), statistics.median(eff),
                      (min(eff), max(eff)), elasticity(sol, obs))


def sol_gap(table: FpmTable, sol: Basis, hybrid: Basis | None = None) -> Gap:
    """Observed vs SOL (and hybrid) at every measured point of ``table``, summarised per partition."""
    rows = tuple(GapRow(p, sol(Query.of(p)), None if hybrid is None else hybrid(Query.of(p)))
                 for p in table.points if not p.failure)
    parts = sorted({(r.point.phase, r.point.batch_size) for r in rows}, key=lambda k: (k[0] != "prefill", k[1]))
    summary = tuple(_summary(ph, b, [r for r in rows if (r.point.phase, r.point.batch_size) == (ph, b)])
                    for ph, b in parts)
    identity = table.identity
    return Gap(table.name, getattr(identity, "gpu", None) or "-", getattr(identity, "boundary", None),
               ("sol",) if hybrid is None else ("sol", "hybrid"), rows, summary)


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten spanning [lo, hi] (the plot's axis marks)."""
    return [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


__all__ = ["MIN_SOL_SPAN", "Gap", "GapRow", "GapSummary", "elasticity", "log_ticks", "sol_gap"]
