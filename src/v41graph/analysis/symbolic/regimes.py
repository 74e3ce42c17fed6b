"""Regimes of a closed form: where what it sums changes, found numerically, made exact.

A closed form of a symbolic plan holds piecewise (issue 10). The graph's *structure* changes
where a fusion's legality does (the replay tail is the whole extend for N ≤ 128, so the
L20 → L21 mHC transform fuses there and not above), and the SOL time's *bound* changes where
another critical path — or a resource summed over all nodes — takes over. Both are keys
computed at many points at once (:class:`Timeline`, :func:`structure_keys`); :func:`runs` walks
a grid over the domain and narrows every change of key to the integer, so each run gets the
exact sum of its own terms. Assumption: no key changes and changes back between two
neighbouring grid points (every integer up to 256, then 1/32 of an octave apart).

>>> runs(lambda xs: [x >= 1000 for x in xs.tolist()], 1, 5000)
[(1, 999, False), (1000, 5000, True)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

import numpy as np
import sympy

from ...costs.counts import CostContext
from ...costs.hardware import Hardware
from ...costs.node import cost_signature, node_cost
from ...costs.value import sol_time
from ...errors import CostError
from ...ir.graph import Graph
from ...ir.plan import Plan
from ...model.config import ModelSpec
from ...passes.scheduling import PathFinder
from ...symbols import length
from .lambdified import Rows

#: the largest batch (copies) a one-symbol form in B is built for: B does not move positions
MAX_COPIES = 2 ** 20
#: every integer up to DENSE, then PER_OCTAVE points per octave; PROBES per narrowing round
DENSE, PER_OCTAVE, PROBES = 256, 32, 64
RESOURCES = ("compute", "memory", "comm")


def grid(lo: int, hi: int) -> np.ndarray:
    """The search points in [lo, hi] (both ends included)."""
    octaves = int(np.ceil(np.log2(max(hi, 2)))) + 1
    geometric = np.rint(2.0 ** (np.arange(octaves * PER_OCTAVE + 1) / PER_OCTAVE)).astype(np.int64)
    points = np.unique(np.concatenate([np.arange(lo, min(hi, DENSE) + 1), geometric, [lo, hi]]))
    return points[(points >= lo) & (points <= hi)]


def runs(keys_of: Callable[[np.ndarray], Sequence[Hashable]], lo: int, hi: int) -> list[tuple[int, int, Hashable]]:
    """Maximal runs ``(first, last, key)`` of equal key over the integers of [lo, hi].

    Every change of key between grid neighbours is narrowed to adjacent integers; the searches
    of all changes advance together, so each round costs one call of ``keys_of`` (a critical
    path search costs milliseconds a call whatever the number of points).
    """
    points = grid(lo, hi)
    keys = list(keys_of(points))
    searches = [_narrow(int(points[i - 1]), int(points[i]), keys[i - 1], keys[i])
                for i in range(1, len(points)) if keys[i] != keys[i - 1]]
    out, start, key = [], lo, keys[0]
    for changes in _together(searches, keys_of):  # in order along [lo, hi]
        for good, bad, after in changes:
            out.append((start, good, key))
            start, key = bad, after
    out.append((start, hi, key))
    return out


def _narrow(a: int, b: int, key: Hashable, end: Hashable):
    """The changes of key in (a, b] as ``(last with the old key, first with the new, new key)``,
    from ``key`` at ``a`` to ``end`` at ``b``: a generator that yields probe points and is sent
    their keys, for :func:`_together`."""
    changes = []
    while key != end:  # one or more changes: narrow the first one left to adjacent integers
        good, bad, after = a, b, end
        while bad - good > 1:
            probes = np.unique(np.linspace(good + 1, bad - 1, min(PROBES, bad - good - 1)).astype(np.int64))
            pk = yield probes
            j = next((j for j, k in enumerate(pk) if k != key), None)
            if j is None:
                good = int(probes[-1])
            else:
                bad, good, after = int(probes[j]), int(probes[j - 1]) if j else good, pk[j]
        changes.append((good, bad, after))
        a, key = bad, after
    return changes


def _together(searches: list, keys_of: Callable[[np.ndarray], Sequence[Hashable]]) -> list[list]:
    """Run :func:`_narrow` searches side by side: one ``keys_of`` call per round for all of them."""
    results: list = [None] * len(searches)
    pending: dict[int, np.ndarray] = {}

    def step(i: int, sent=None) -> None:
        try:
            pending[i] = searches[i].send(sent)
        except StopIteration as done:
            results[i] = done.value
    for i in range(len(searches)):
        step(i)
    while pending:
        asked = list(pending.items())
        pending.clear()
        keys = list(keys_of(np.concatenate([probes for _, probes in asked])))
        at = 0
        for i, probes in asked:
            step(i, keys[at:at + len(probes)])
            at += len(probes)
    return results


def structure_keys(conditions, syms: Sequence[sympy.Symbol]) -> Callable[[np.ndarray], list[tuple[bool, ...]]]:
    """Which of the fusion pass's symbolic token-set conditions hold, at many points at once."""
    diffs = [[sympy.sympify(x) - sympy.sympify(y) for s in cond[1:] for row, row0 in zip(s, cond[0])
              for x, y in zip(row, row0)] for cond in conditions]
    fs = [sympy.lambdify(syms, d, modules="numpy") for d in diffs]

    def keys(points: np.ndarray) -> list[tuple[bool, ...]]:
        x = points.astype(float).reshape(len(syms), -1) if syms else np.zeros((0, points.shape[-1]))
        holds = [np.all(np.stack([np.broadcast_to(np.asarray(v, dtype=float), x.shape[1:]) for v in f(*x)]) == 0,
                        axis=0) if d else np.ones(x.shape[1:], bool) for f, d in zip(fs, diffs)]
        return [tuple(bool(h[k]) for h in holds) for k in range(x.shape[-1])]
    return keys


def node_costs(graph: Graph, ctx: CostContext, ids: Sequence[str], memo: dict) -> list:
    """The cost of each node of ``ids``; identical work (one signature) costed once, as the
    scheduling pass does, and ``memo`` carried over graphs of one plan."""
    rows_keys: dict[int, tuple] = {}
    out = []
    for n in ids:
        key = cost_signature(graph, graph.nodes[n], rows_keys)
        if key not in memo:
            memo[key] = node_cost(graph, n, ctx)
        out.append(memo[key])
    return out


class Timeline:
    """The SOL node times of a symbolic graph as numpy functions of its symbols, and what bounds
    the schedule at each point: the critical path, or a resource summed over all nodes when it
    is longer (the schedule's total is max(critical path, busiest resource))."""

    def __init__(self, graph: Graph, ctx: CostContext, hw: Hardware, syms: Sequence[sympy.Symbol],
                 memo: dict | None = None):
        self.finder = PathFinder(graph)
        memo = {} if memo is None else memo  # shared by the graphs of one plan's regimes
        index, sols, which = {}, [], []
        for n, cost in zip(self.finder.order, node_costs(graph, ctx, self.finder.order, memo)):
            if cost not in index:
                if ("sol", cost) not in memo:
                    memo[("sol", cost)] = sol_time(cost, hw)
                index[cost] = len(sols)
                sols.append(memo[("sol", cost)])
            which.append(index[cost])
        self.which = np.array(which, dtype=np.intp)
        self.mult = np.bincount(self.which, minlength=len(sols))
        self.time = {n: sympy.sympify(sols[i].time) for n, i in zip(self.finder.order, which)}
        self.sols, self.syms = sols, tuple(syms)
        # one table of lambdified resources for all the regimes' graphs (they share most costs);
        # a node's time is the max of the resources its sympy Max holds, so it is not printed twice
        self.table = memo.setdefault(("rows", self.syms), Rows(self.syms))
        parts = [[sympy.sympify(getattr(s, r)) for r in RESOURCES] for s in sols]
        rows = self.table.rows([e for p in parts for e in p]).reshape(len(sols), len(RESOURCES))
        peaks = [self._peak(s, p, r) for s, p, r in zip(sols, parts, rows)]
        self.rows = np.concatenate([rows.T, np.array(peaks, dtype=np.intp).reshape(len(sols), 3).T])

    def _peak(self, sol, parts: list[sympy.Expr], rows: np.ndarray) -> list[int]:
        """Three rows whose max is the node's time: the resources its ``Max`` holds, repeated."""
        t = sympy.sympify(sol.time)
        args = (t,) if t in parts or not isinstance(t, sympy.Max) else t.args
        picked = [int(rows[parts.index(a)]) for a in args if a in parts]
        if len(picked) != len(args):  # not a max of its resources: its own row
            picked = [int(self.table.rows([t])[0])]
        return (picked * 3)[:3]

    def keys(self, points: np.ndarray) -> list[Hashable]:
        x = points.astype(float).reshape(len(self.syms), -1) if self.syms else np.zeros((0, points.shape[-1]))
        values = self.table(x, self.rows)  # (compute, memory, comm, the time's three) × node costs × points
        finish, paths = self.finder.run(np.maximum(np.maximum(values[3], values[4]), values[5])[self.which])
        critical = finish.max(axis=0)
        busy = {r: self.mult @ values[i] for i, r in enumerate(RESOURCES)}
        out = []
        for j, path in enumerate(paths):  # (what bounds, the critical path)
            r = max(RESOURCES, key=lambda r: busy[r][j])
            out.append((r if busy[r][j] > critical[j] else "path", path))
        return out

    def expr(self, key: tuple[str, tuple[str, ...]]) -> sympy.Expr:
        """The exact SOL time under ``key``: the sum along the path, or the bounding resource's sum."""
        bound, path = key
        if bound != "path":
            return sympy.Add(*[int(m) * sympy.sympify(getattr(s, bound)) for m, s in zip(self.mult, self.sols) if m])
        return sympy.Add(*[self.time[n] for n in path])


def position_limit(model: ModelSpec) -> int:
    """The longest sequence a closed form is built for: the model's max_position_embeddings."""
    if model.max_position is None:  # lifted on purpose (--allow-past-max-position) or absent
        raise CostError(f"closed form: model {model.name!r} has no max_position_embeddings to bound its domain; "
                        f"closed forms are built over [1, max_position_embeddings]")
    return model.max_position


def domain(model: ModelSpec, plan: Plan, name: str) -> tuple[int, int]:
    """[1, hi] of a one-symbol plan: the largest value keeping every request's end within
    max_position_embeddings (ends grow with the symbol); B alone moves no position."""
    limit, sym = position_limit(model), length(name)
    ends = [sympy.sympify(r.end) for r in plan.requests if sym in sympy.sympify(r.end).free_symbols]
    if not ends:
        return 1, MAX_COPIES
    fits = lambda x: all(int(e.subs(sym, x)) <= limit for e in ends)  # noqa: E731
    if not fits(1):
        raise CostError(f"closed form: the plan exceeds max_position_embeddings {limit} for every {name} ≥ 1")
    lo, hi = 1, limit
    while lo < hi:  # the largest x that fits
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return 1, lo


@dataclass(frozen=True)
class Guard:
    """Refuses a form in several symbols outside its domain, or where its structure or bound
    differs from the binding's (the closed form's ``guard``)."""

    metric: str
    names: tuple[str, ...]
    binding: dict[str, int]
    structure: Callable
    expected: tuple
    timeline: Timeline | None
    key: Any
    ends: tuple[sympy.Expr, ...] = ()
    limit: int = 0

    def __call__(self, values: dict[str, int]) -> None:
        missing = [k for k in self.names if k not in values]
        if missing:
            raise CostError(f"closed form {self.metric}: no value for {', '.join(missing)}")
        small = [k for k in self.names if values[k] < 1]
        if small:
            raise CostError(f"closed form {self.metric}: {small[0]} = {values[small[0]]} is not a count ≥ 1")
        for end in self.ends:  # the domain: every request within max_position_embeddings
            position = int(end.subs({length(k): values[k] for k in self.names}))
            if position > self.limit:
                raise CostError(f"closed form {self.metric}: at {values} a request ends at position {position}, "
                                f"past max_position_embeddings {self.limit}")
        p = np.array([values[k] for k in self.names], dtype=np.int64).reshape(len(self.names), 1)
        same = self.structure(p)[0] == self.expected and (self.timeline is None or self.timeline.keys(p)[0] == self.key)
        if not same:
            at = ",".join(f"{k}={v}" for k, v in sorted(values.items()))
            raise CostError(f"closed form {self.metric}: built at {self.binding}, it does not hold at {at} (another "
                            f"fusion or critical path holds there); rebuild it with --at {at}")


@dataclass(frozen=True)
class Paths:
    """The critical path of each sol_time regime (what ``at`` reports); never refuses."""

    regimes: tuple

    def __call__(self, values: dict[str, int]) -> None:
        return None

    def key_at(self, x: int) -> tuple[str, tuple[str, ...]]:
        """(what bounds, the critical path) at ``x``."""
        for c, d, _, key in self.regimes:
            if c <= x <= d:
                return key
        return "path", ()
