"""FPM prediction inside one partition: measured, interpolated or unsupported — never extrapolated.

A query is (phase, batch size, prefill tokens summed over requests, past KV summed over
requests). The partition is the table's identity and the query's (phase, batch size): nothing is
interpolated across phases, batch sizes or identities. Inside it the two token axes are
interpolated multilinearly between measured points:

- on each axis the query either sits on a measured value (that axis is not interpolated) or
  between the nearest measured values below and above it; a *cell* is one such choice per axis,
  and it is usable when all its corners are measured (2 corners on a line, 4 in a rectangle);
- the cells that interpolate along the fewest axes are used; where a hole in the grid leaves
  several (a held-out interior point: its row and its column), their values are averaged; a
  failed point (OOM, …) among their corners blocks the answer with its failure class;
- no usable cell means the query is outside the measured domain: ``unsupported``, with the
  nearest measured point (same phase, closest batch, then fewest tokens away) — or, only when
  the caller passes ``sol_fallback``, the SOL time of the query, flagged as tier ``sol``.

With a ``reference`` (the SOL time of the same shape, see ``analysis/forwards/fpm_reference.py``) the
interpolated quantity is observed − reference and the answer adds the reference back: the
measured residual carries the fixed runtime costs, the reference the shape.

>>> from v41graph.ir.identity import COORDINATES
>>> from v41graph.costs.fpm.load import load_table
>>> t = load_table("aisimulate-gb200-calibration-v1")
>>> a = predict(t, Query.make("decode", 1, past_kv=2), allow_unadmitted=True)
>>> a.tier, a.predicted_ms == t.points[0].observed_ms, a.admission
('measured', True, 'not admitted')
>>> predict(t, Query.make("decode", 3, past_kv=30), allow_unadmitted=True).reason
'outside measured domain (batch 3 is not measured for decode; measured: 1, 2)'
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields
from functools import cache, partial
from typing import Callable

from ...algebra import as_int
from ...errors import CostError
from ...ir.identity import Identity
from .estimators import estimate
from .table import PHASES, FpmTable, Point, TableError

TIERS = ("measured", "interpolated", "estimated", "sol", "unsupported")
# Why a query got no answer: the three categories a caller can act on (failure classes of a
# failed measured point, "OOM", ..., are reported as themselves).
CATEGORIES = ("unsupported", "outside measured domain", "identity mismatch")
Reference = Callable[["Query"], float]  # SOL milliseconds of a query's shape


def read_once(reference: Reference | None) -> Reference | None:
    """``reference`` read once per query for one leave-one-out, whose folds ask for every point's value
    again and again: the same values (the reference is a pure function of the query, and memoised and
    shadow-checked itself), without a memo lookup per fold — under the shadow check each lookup is a
    compile from nothing.

    >>> calls = []
    >>> twice = read_once(lambda q: calls.append(q) or 2.0 * q)
    >>> twice(3), twice(3), calls
    (6.0, 6.0, [3])
    """
    return None if reference is None else cache(reference)  # lives as long as the one run


class UnadmittedError(TableError):
    """A table not admitted for prediction was asked to predict without explicit permission."""


@dataclass(frozen=True, order=True)
class Query:
    """Shape coordinates of one whole forward (see the module docstring)."""

    phase: str
    batch_size: int
    total_prefill_tokens: int
    total_kv_read_tokens: int

    @staticmethod
    def make(phase: str, batch: int, new_tokens: int | None = None, *, past_kv: int) -> "Query":
        """Validate a query; a decode step is one token per request (new tokens = batch)."""
        if phase not in PHASES:
            raise CostError(f"fpm query phase: must be one of {', '.join(PHASES)}, got {phase!r}")
        for name, value, minimum in (("batch", batch, 1), ("past_kv", past_kv, 0)):
            if as_int(value) is None or value < minimum:
                raise CostError(f"fpm query {name}: must be an integer >= {minimum}, got {value!r}")
        if phase == "decode":
            if new_tokens is not None and new_tokens != batch:
                raise CostError(f"fpm query new_tokens: a decode step is one token per request, so it must "
                                f"equal batch {batch}, got {new_tokens}")
            new_tokens = batch
        elif new_tokens is None:
            raise CostError("fpm query new_tokens: required for prefill (prefill tokens summed over requests)")
        if as_int(new_tokens) is None or new_tokens < 1:
            raise CostError(f"fpm query new_tokens: must be an integer >= 1, got {new_tokens!r}")
        return Query(phase, int(batch), int(new_tokens), int(past_kv))  # numpy integers become ints

    @staticmethod
    def of(point: Point) -> "Query":
        return Query(point.phase, point.batch_size, point.total_prefill_tokens, point.total_kv_read_tokens)


@dataclass(frozen=True)
class Answer:
    """One prediction: tier, value (None unless measured/interpolated) and why."""

    table: str
    query: Query | None  # None when a plan has no FPM coordinates at all
    tier: str
    predicted_ms: float | None
    reason: str
    admission: str
    failure: str | None = None
    nearest: Point | None = None
    basis: tuple[Point, ...] = ()
    unverified: tuple[str, ...] = ()
    estimator: str | None = None  # the candidate that valued an in-domain query (see .estimators)
    category: str | None = None  # why there is no answer: one of CATEGORIES or a failure class

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["query"] = None if self.query is None else {f.name: getattr(self.query, f.name) for f in fields(self.query)}
        out["nearest"] = self.nearest.to_dict() if self.nearest else None
        out["basis"] = [p.to_dict() for p in self.basis]
        out["unverified"] = list(self.unverified)
        return out


def refuse_unadmitted(table: FpmTable, allow_unadmitted: bool) -> None:
    """Raise unless the table is admitted or the caller explicitly allows an unadmitted one."""
    if not table.admitted and not allow_unadmitted:
        raise UnadmittedError(f"fpm table {table.name!r} is {table.identity.admission} for prediction "
                              f"({table.note.split('. ')[0]}); pass --allow-unadmitted "
                              f"(allow_unadmitted=True) to use it anyway")


def nearest_point(points, q: Query) -> Point | None:
    """Same phase first, then the closest batch, then the fewest tokens away; ties by coordinates."""
    def distance(p: Point):
        return (p.phase != q.phase, abs(p.batch_size - q.batch_size),
                abs(p.total_prefill_tokens - q.total_prefill_tokens)
                + abs(p.total_kv_read_tokens - q.total_kv_read_tokens), p.key)
    return min(points, key=distance, default=None)


def _brackets(values: list[int], x: int) -> list[tuple[int, int]]:
    """On one axis: (x, x) if x is measured, and the nearest measured values around x."""
    out = [(x, x)] if x in values else []
    below, above = [v for v in values if v < x], [v for v in values if v > x]
    if below and above:
        out.append((max(below), min(above)))
    return out


def _lerp(x: int, a: int, b: int, ya: float, yb: float) -> float:
    return ya if a == b else ya + (yb - ya) * (x - a) / (b - a)


def interpolate(part: dict[tuple[int, int], Point], n: int, k: int, value: Callable[[Point], float]):
    """(value, basis points), or (None, failed points), or (None, ()) outside the domain.

    Cells whose corners are all present compete; those interpolating along the fewest axes win.
    If one of the winners has a failed corner, the failure blocks the answer: the query sits
    next to a shape that did not run, and no other cell is allowed to paper over it.
    """
    ns = sorted({c[0] for c in part})
    ks = sorted({c[1] for c in part})
    cells: list[tuple[int, tuple[int, int, int, int], tuple[Point, ...]]] = []
    for (n0, n1), (k0, k1) in itertools.product(_brackets(ns, n), _brackets(ks, k)):
        corners = tuple(part.get(c) for c in ((n0, k0), (n0, k1), (n1, k0), (n1, k1)))
        if all(c is not None for c in corners):
            cells.append(((n0 != n1) + (k0 != k1), (n0, n1, k0, k1), corners))
    if not cells:
        return None, ()
    fewest = min(c[0] for c in cells)
    best = [c for c in cells if c[0] == fewest]
    failed = tuple(sorted({p for c in best for p in c[2] if p.failure}))
    if failed:
        return None, failed
    values = []
    for _, (n0, n1, k0, k1), corners in best:
        a, b, c, d = (value(p) for p in corners)
        values.append(_lerp(n, n0, n1, _lerp(k, k0, k1, a, b), _lerp(k, k0, k1, c, d)))
    return sum(values) / len(values), tuple(sorted({p for c in best for p in c[2]}))


def predict(table: FpmTable, query: Query, *, identity: Identity | None = None, allow_unadmitted: bool = False,
            reference: Reference | None = None, sol_fallback: Reference | None = None, points=None,
            estimator: str = "interpolation", sol: Reference | None = None) -> Answer:
    """Answer ``query`` from ``table`` (``points`` overrides the table's, for leave-one-out).

    ``estimator`` values an in-domain query that is not a measured point (:mod:`.estimators`;
    the domain is the same for all; ``sol`` is the SOL reference the ``sol ratio`` candidate
    scales); :func:`.select.choose` picks it by leave-one-out.
    ``sol_fallback`` (asked for explicitly) answers a query outside the measured domain with its
    SOL time, tier ``sol``; never a failed point's, never another identity's.
    """
    refuse_unadmitted(table, allow_unadmitted)
    pts = table.points if points is None else tuple(points)
    unverified = table.identity.unverified(identity) if identity is not None else ()

    answer = partial(_answer, table, query, sol_fallback, unverified)
    if identity is not None and table.identity.differences(identity):
        return answer("unsupported", None, "identity differs: " + table.identity.describe_differences(identity),
                      failure="unsupported", category="identity mismatch")
    if not pts:
        return answer("unsupported", None, "missing sample: the table holds no measured points",
                      failure="missing sample")
    part = {(p.total_prefill_tokens, p.total_kv_read_tokens): p for p in pts
            if p.phase == query.phase and p.batch_size == query.batch_size}
    near = nearest_point([p for p in pts if not p.failure], query)
    if not part:
        batches = sorted({p.batch_size for p in pts if p.phase == query.phase})
        return answer("unsupported", None, f"outside measured domain (batch {query.batch_size} is not measured "
                      f"for {query.phase}; measured: {', '.join(map(str, batches)) or 'none'})",
                      failure="unsupported", nearest=near)
    hit = part.get((query.total_prefill_tokens, query.total_kv_read_tokens))
    if hit is not None and hit.failure:
        return answer("unsupported", None, f"measured point failed: {hit.failure}", failure=hit.failure, basis=(hit,))
    if hit is not None:
        return answer("measured", hit.observed_ms, "measured point", basis=(hit,))
    return _between(answer, pts, part, query, near, reference, estimator, sol)


def _answer(table: FpmTable, query: Query, sol_fallback, unverified, tier, ms, reason, **kw) -> Answer:
    """:func:`predict`'s answer; an unsupported one gets its category, and outside the measured domain the SOL
    fallback's time when one was asked for."""
    if tier == "unsupported":
        kw.setdefault("category", "outside measured domain" if reason.startswith("outside measured domain")
                      else kw.get("failure"))
    if tier == "unsupported" and sol_fallback is not None and reason.startswith("outside measured domain"):
        kw.pop("failure", None)  # answered, by SOL: no failure to report
        return Answer(table.name, query, "sol", sol_fallback(query), f"SOL fallback, a lower bound and not a "
                      f"measurement ({reason})", table.identity.admission, unverified=unverified, **kw)
    return Answer(table.name, query, tier, ms, reason, table.identity.admission, unverified=unverified, **kw)


def _between(answer, pts, part, query: Query, near, reference, estimator: str, sol) -> Answer:
    """A query that is not a measured point: interpolated in its batch's cell (on the SOL reference's shape
    when given), then valued by ``estimator`` if that is not plain interpolation."""
    n, k = query.total_prefill_tokens, query.total_kv_read_tokens
    if reference is None:
        y, basis = interpolate(part, n, k, lambda p: p.observed_ms)
    else:
        y, basis = interpolate(part, n, k, lambda p: p.observed_ms - reference(Query.of(p)))
        y = None if y is None else y + reference(query)
    if y is None and basis:
        return answer("unsupported", None, f"the enclosing cell has a failed point ({basis[0].failure} at "
                      f"{basis[0].describe()})", failure=basis[0].failure, nearest=near)
    if y is None:
        return answer("unsupported", None, f"outside measured domain (nearest measured point: {near.describe()})",
                      failure="unsupported", nearest=near)
    how = "interpolated between measured points" + (" on the SOL reference shape" if reference else "")
    if estimator == "interpolation":
        return answer("interpolated", y, how, basis=basis, estimator=estimator)
    phase_pts = [p for p in pts if p.phase == query.phase and not p.failure]
    part_pts = [p for p in part.values() if not p.failure]
    value = estimate(estimator, phase_pts, part_pts, query.batch_size, query.phase, n, k, interpolated=y,
                     sol_point=None if sol is None else (lambda p: sol(Query.of(p))),
                     sol_query=None if sol is None else sol(query))
    if value is None:
        return answer("unsupported", None, f"estimator {estimator!r} cannot answer without a SOL reference",
                      failure="unsupported", category="unsupported")
    return answer("estimated", value, f"estimator {estimator} inside the measured domain", basis=basis,
                  estimator=estimator)


__all__ = ["Answer", "CATEGORIES", "Query", "TIERS", "UnadmittedError", "interpolate", "nearest_point", "predict",
           "read_once", "refuse_unadmitted"]
