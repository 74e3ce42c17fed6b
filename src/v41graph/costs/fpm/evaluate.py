"""Held-out error of an FPM table, always beside two trivial baselines evaluated the same way.

Leave-one-out (no holdout given): each measured point is predicted from the table without it.
With holdout points: each is predicted from the whole table. The baselines answer every point:

- **table mean**: the mean observed time of the table's points (without the held-out one);
- **per-phase mean**: the same, over the points of the held-out point's phase.

FPM answers only inside the measured domain. Points it answers are *in-domain*; the others are
*out-of-domain*, where FPM refuses and the nearest measured point is shown only for reference.
For a set of (predicted, observed) pairs with e = |p − y| / y, in percent: MAPE = mean e, WAPE =
Σ|p − y| / Σy, median and p90 of e (p90: linear between order statistics, numpy's default) and
worst = max e. The verdict compares FPM with the baselines *on the same in-domain points*.

>>> from v41graph.costs.fpm.load import load_table
>>> ev = evaluate(load_table("aisimulate-gb200-calibration-v1"))
>>> round(ev.all_points["table mean"].mape, 3), round(ev.all_points["per-phase mean"].mape, 3)
(3.887, 3.38)
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, fields

import numpy as np

from .predict import Answer, Query, Reference, predict, read_once
from .table import FpmTable, Point, TableError

BASELINES = ("table mean", "per-phase mean")
WORST_LISTED = 5


@dataclass(frozen=True)
class Errors:
    """Error figures of one predictor over a set of points (percent; None when there are none)."""

    count: int
    mape: float | None
    wape: float | None
    median: float | None
    p90: float | None
    worst: float | None

    @staticmethod
    def of(pairs) -> "Errors":
        """From (predicted, observed) pairs."""
        pairs = list(pairs)
        if not pairs:
            return Errors(0, None, None, None, None, None)
        e = [abs(p - y) / y * 100 for p, y in pairs]
        wape = sum(abs(p - y) for p, y in pairs) / sum(y for _, y in pairs) * 100
        return Errors(len(e), statistics.fmean(e), wape, statistics.median(e), float(np.percentile(e, 90)), max(e))

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Row:
    """One held-out point: what it measured, what FPM answered, and the baselines."""

    point: Point
    answer: Answer
    baselines: dict[str, float | None]

    @property
    def error_pct(self) -> float | None:
        y = self.point.observed_ms
        return None if self.answer.predicted_ms is None else abs(self.answer.predicted_ms - y) / y * 100

    def to_dict(self) -> dict:
        return {"point": self.point.to_dict(), "tier": self.answer.tier, "predicted_ms": self.answer.predicted_ms,
                "error_pct": self.error_pct, "reason": self.answer.reason, "baselines": dict(self.baselines)}


@dataclass(frozen=True)
class Evaluation:
    table: str
    admission: str
    method: str
    rows: tuple[Row, ...]
    failed: tuple[Point, ...]  # held-out observations that carry a failure class, not a time
    in_domain: dict[str, Errors]  # "fpm" and the baselines, over the points FPM answers
    out_of_domain: dict[str, Errors]  # "nearest point" (reference only) and the baselines
    all_points: dict[str, Errors]  # the baselines over every held-out point
    worst: tuple[Row, ...]
    verdict: str

    def to_dict(self) -> dict:
        def block(d):
            return {k: v.to_dict() for k, v in d.items()}
        return {"table": self.table, "admission": self.admission, "method": self.method,
                "points": len(self.rows), "failed_observations": [p.to_dict() for p in self.failed],
                "in_domain": block(self.in_domain), "out_of_domain": block(self.out_of_domain),
                "all_points": block(self.all_points), "worst": [r.to_dict() for r in self.worst],
                "verdict": self.verdict, "rows": [r.to_dict() for r in self.rows]}


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None  # no point left: the baseline cannot answer


def _baselines(pool: list[Point], phase: str) -> dict[str, float | None]:
    return {"table mean": _mean([p.observed_ms for p in pool]),
            "per-phase mean": _mean([p.observed_ms for p in pool if p.phase == phase])}


def _verdict(in_domain: dict[str, Errors]) -> str:
    fpm = in_domain["fpm"]
    if not fpm.count:
        return "FPM answered no held-out point (all outside the measured domain): no comparison possible."
    beaten = [b for b in BASELINES if fpm.mape < in_domain[b].mape]
    figures = ", ".join(f"{b} {in_domain[b].mape:.3f}%" for b in BASELINES)
    head = f"FPM MAPE {fpm.mape:.3f}% vs {figures} on the same {fpm.count} in-domain points: "
    if len(beaten) == len(BASELINES):
        return head + "FPM beats both baselines."
    if not beaten:
        return head + "FPM does NOT beat either baseline; do not present it as a better predictor than a mean."
    missed = [b for b in BASELINES if b not in beaten]
    return head + f"FPM beats the {beaten[0]} but NOT the {missed[0]}; it is no better predictor than a mean."


def evaluate(table: FpmTable, holdout: list[Point] | None = None, *, method: str | None = None,
             reference: Reference | None = None, estimator: dict[str, str] | None = None,
             sol: Reference | None = None) -> Evaluation:
    """Leave-one-out over ``table`` (``holdout`` None) or the error on ``holdout`` points.

    ``estimator``: phase -> candidate FPM values with (the choice of :func:`.select.choose`;
    default interpolation); ``sol``: the SOL reference the ``sol ratio`` candidate needs.
    """
    measured = [p for p in table.points if not p.failure]
    if len(measured) < 2:
        raise TableError(f"fpm evaluate: table {table.name!r} has {len(measured)} measured points; need at least 2")
    rows: list[Row] = []
    failed = tuple(p for p in (holdout or ()) if p.failure)
    once = read_once(reference)
    reference, sol = once, (once if sol is reference else read_once(sol))  # often one function, read once
    for point in (measured if holdout is None else [p for p in holdout if not p.failure]):
        pool = [p for p in measured if p is not point] if holdout is None else measured
        pts = [p for p in table.points if p is not point] if holdout is None else None
        answer = predict(table, Query.of(point), allow_unadmitted=True, reference=reference, points=pts,
                         estimator=(estimator or {}).get(point.phase, "interpolation"), sol=sol)
        rows.append(Row(point, answer, _baselines(pool, point.phase)))
    inside = [r for r in rows if r.answer.predicted_ms is not None]
    outside = [r for r in rows if r.answer.predicted_ms is None]

    def pairs(rs, name):  # a baseline with no point to average over answers nothing (its n shows it)
        return [(r.baselines[name], r.point.observed_ms) for r in rs if r.baselines[name] is not None]
    in_domain = {"fpm": Errors.of((r.answer.predicted_ms, r.point.observed_ms) for r in inside)}
    in_domain.update({b: Errors.of(pairs(inside, b)) for b in BASELINES})
    out_of_domain = {"nearest point": Errors.of((r.answer.nearest.observed_ms, r.point.observed_ms)
                                                for r in outside if r.answer.nearest is not None)}
    out_of_domain.update({b: Errors.of(pairs(outside, b)) for b in BASELINES})
    all_points = {b: Errors.of(pairs(rows, b)) for b in BASELINES}
    worst = tuple(sorted(inside, key=lambda r: (-r.error_pct, r.point.key))[:WORST_LISTED])
    return Evaluation(table.name, table.identity.admission,
                      method or ("leave-one-out" if holdout is None else "holdout"),
                      tuple(rows), failed, in_domain, out_of_domain, all_points, worst, _verdict(in_domain))


__all__ = ["BASELINES", "Errors", "Evaluation", "Row", "evaluate"]
