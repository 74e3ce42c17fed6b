"""The runtime basis: kernel time plus the engine's own cost per forward, fitted to measured forwards.

A measured whole forward (an FPM table's point) holds two things: the kernels (what SOL or the
hybrid kernel tables price) and what the engine spends around them — launches, the scheduler,
host synchronisation. On the published V4.1 tables the second is 97–99.8 % of every forward and
hardly moves with the work (``v41graph fpm gap``), so no kernel sum forecasts them. Here that
runtime share is a small linear model of the step's shape, fitted to ``observed − kernel``::

    forward = kernel(step) + Σ_terms  c_term · x_term(step)

with the terms (each a per-forward figure of the step):

- ``forward``: 1 — a fixed cost of every forward (ms);
- ``prefill``: 1 when the step runs prefill work — a prefill forward's extra fixed cost (ms);
- ``request``: the requests in the step (ms per request);
- ``token``: the new tokens the step runs, prefill and decode (ms per 1,000 tokens);
- ``context``: the past KV the step's queries read (ms per 1,000,000 tokens).

The term set is chosen by leave-one-out over the table's measured points, as the FPM estimators
are (:mod:`v41graph.costs.fpm.select`): every point is held out in turn, each candidate set is
fitted on the rest and predicts it; the set with the lowest MAPE wins, ties to the smaller set.
Coefficients are non-negative (an engine does not get faster per request or token): each fit is
the best least-squares fit over the subsets of its terms whose coefficients are all ≥ 0 (exact
non-negative least squares for five terms). The chosen set is refitted on every point.

What it can answer: any step shape — batches, lengths, mixed prefill + decode, DSpark verify — as
kernel time of the step's own graph plus the fitted terms of its shape. On the table's own GPU and
mapping, inside its measured ranges, that is tier ``runtime``; past the measured batches, tokens or
contexts, or on another mapping, it is tier ``extrapolated`` and says so; never silently.

>>> from v41graph.costs.fpm.table import Point, make_table
>>> pts = [Point("decode", b, b, 100 * b, 50.0 + 2 * b + 0.01 * b) for b in range(1, 9)]
>>> fit = fit_runtime(make_table("t", None, pts, "hand"), lambda q: 0.01 * q.batch_size)
>>> fit.terms, round(fit.coefficients["forward"], 6), round(fit.coefficients["request"], 6)
(('forward', 'request'), 50.0, 2.0)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...costs.fpm.evaluate import Errors
from ...costs.fpm.predict import Query
from ...costs.fpm.table import FpmTable, Point
from ...errors import CostError

TERMS = ("forward", "prefill", "request", "token", "context")
UNITS = {"forward": "ms per forward", "prefill": "ms per prefill forward", "request": "ms per request",
         "token": "ms per 1K new tokens", "context": "ms per 1M past-KV tokens"}
#: the candidate term sets, simplest first (a tie goes to the earlier)
CANDIDATES = (("forward",), ("forward", "prefill"), ("forward", "request"), ("forward", "prefill", "request"),
              ("forward", "prefill", "token"), ("forward", "prefill", "request", "token"),
              ("forward", "prefill", "request", "token", "context"))

Kernel = Callable[[Query], float]  # milliseconds of a query's shape (SOL or hybrid)


@dataclass(frozen=True)
class Shape:
    """What the runtime terms read of a step."""

    prefill: bool
    requests: int
    tokens: int
    context: int

    @staticmethod
    def of(q: Query) -> "Shape":
        return Shape(q.phase == "prefill", q.batch_size, q.total_prefill_tokens, q.total_kv_read_tokens)

    def features(self, terms: tuple[str, ...]) -> np.ndarray:
        x = {"forward": 1.0, "prefill": float(self.prefill), "request": float(self.requests),
             "token": self.tokens / 1e3, "context": self.context / 1e6}
        return np.array([x[t] for t in terms])


def nonnegative_lstsq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with every coefficient ≥ 0: the best fit over column subsets whose own
    unconstrained fit is non-negative (exact for a handful of columns; ties to the smaller subset).

    >>> x = np.column_stack([np.ones(4), np.arange(4.0)])
    >>> [round(float(c), 6) for c in nonnegative_lstsq(x, np.array([3.0, 2.0, 1.0, 0.0]))]  # a falling line
    [1.5, 0.0]
    """
    n = x.shape[1]
    best, best_sse = np.zeros(n), float(y @ y)
    for k in range(1, n + 1):
        for cols in itertools.combinations(range(n), k):
            c = np.linalg.lstsq(x[:, cols], y, rcond=None)[0]
            if (c < 0).any():
                continue
            sse = float(((x[:, cols] @ c - y) ** 2).sum())
            if sse < best_sse - 1e-12 * max(1.0, best_sse):
                best, best_sse = np.zeros(n), sse
                best[list(cols)] = c
    return best


@dataclass(frozen=True)
class RuntimeFit:
    """The fitted runtime terms of one table, on one kernel basis, with their leave-one-out error."""

    table: str
    gpu: str | None
    tp: int | None
    kernel: str  # "sol" or "hybrid": what the terms sit on top of
    terms: tuple[str, ...]
    coefficients: dict[str, float]
    points: int
    loo: Errors  # the chosen set's leave-one-out error (percent)
    candidates: dict[str, Errors] = field(default_factory=dict)  # "forward+request" -> its LOO error
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)  # measured min/max of requests, tokens, context
    held_out: tuple[tuple[Point, float], ...] = ()  # each point and the chosen set's prediction of it, held out

    def runtime_ms(self, shape: Shape) -> float:
        """The engine's own milliseconds of a step of this shape."""
        return float(shape.features(self.terms) @ np.array([self.coefficients[t] for t in self.terms]))

    def inside(self, shape: Shape) -> bool:
        """Whether the shape lies within the measured requests, tokens and contexts."""
        values = {"requests": shape.requests, "tokens": shape.tokens, "context": shape.context}
        return all(lo <= values[k] <= hi for k, (lo, hi) in self.ranges.items())

    def to_dict(self) -> dict:
        return {"table": self.table, "gpu": self.gpu, "tp": self.tp, "kernel": self.kernel, "terms": list(self.terms),
                "coefficients": {t: self.coefficients[t] for t in self.terms},
                "units": {t: UNITS[t] for t in self.terms}, "points": self.points, "method": "leave-one-out",
                "loo_error": self.loo.to_dict(), "candidates": {k: e.to_dict() for k, e in self.candidates.items()},
                "ranges": {k: list(v) for k, v in self.ranges.items()}}


def _fit(rows: list[tuple[Shape, float, float]], terms: tuple[str, ...]) -> np.ndarray:
    x = np.array([s.features(terms) for s, _, _ in rows])
    y = np.array([obs - k for _, obs, k in rows])
    return nonnegative_lstsq(x, y)


def fit_runtime(table: FpmTable, kernel: Kernel, kernel_name: str = "sol", *,
                candidates: tuple[tuple[str, ...], ...] = CANDIDATES) -> RuntimeFit:
    """Choose the runtime terms of ``table`` by leave-one-out and fit them (module doc).

    ``kernel`` gives the kernel milliseconds of a measured point's shape (SOL or hybrid)."""
    measured = [p for p in table.points if not p.failure]
    widest = max(len(c) for c in candidates)
    if len(measured) < widest + 2:
        raise CostError(f"runtime fit: table {table.name!r} has {len(measured)} measured points; fitting up to "
                        f"{widest} runtime terms by leave-one-out needs at least {widest + 2}")
    rows = [(Shape.of(Query.of(p)), p.observed_ms, kernel(Query.of(p))) for p in measured]
    errors: dict[tuple[str, ...], Errors] = {}
    predicted: dict[tuple[str, ...], list[float]] = {}
    for terms in candidates:
        predicted[terms] = []
        for i, (shape, obs, k) in enumerate(rows):
            c = _fit(rows[:i] + rows[i + 1:], terms)
            predicted[terms].append(k + float(shape.features(terms) @ c))
        errors[terms] = Errors.of(zip(predicted[terms], (obs for _, obs, _ in rows)))
    chosen = min(candidates, key=lambda t: (round(errors[t].mape, 9), candidates.index(t)))
    coef = _fit(rows, chosen)
    shapes = [s for s, _, _ in rows]
    ranges = {"requests": (min(s.requests for s in shapes), max(s.requests for s in shapes)),
              "tokens": (min(s.tokens for s in shapes), max(s.tokens for s in shapes)),
              "context": (min(s.context for s in shapes), max(s.context for s in shapes))}
    identity = table.identity
    return RuntimeFit(table.name, getattr(identity, "gpu", None), getattr(identity, "tp", None), kernel_name, chosen,
                      {t: float(c) + 0.0 for t, c in zip(chosen, coef)}, len(measured), errors[chosen],
                      {"+".join(t): e for t, e in errors.items()}, ranges, tuple(zip(measured, predicted[chosen])))


__all__ = ["CANDIDATES", "TERMS", "UNITS", "RuntimeFit", "Shape", "fit_runtime", "nonnegative_lstsq"]
