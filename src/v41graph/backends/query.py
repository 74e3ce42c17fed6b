"""Closed-form cost questions: the same cost functions on a symbolic plan.

``closed_form(model, plan, metric)`` compiles a plan whose lengths are sympy symbols
(``v41graph.symbols``) and returns the metric as an expression. For ``sol_time`` the critical
path is the numeric schedule's, at a binding (default N = L = P = 8192, B = 64, S = 1024;
docs/architecture.md, decision 6), and the closed form is the sum of the symbolic node times along that
path — so at the binding it equals the schedule's critical-path time exactly (the schedule's
total is max(critical path, busiest resource)). For a one-symbol plan, ``valid_range`` is the
interval around the binding over which that path stays critical (searched up to 2^20).
``lambdify`` / :func:`sweep` give numpy functions for sweeps.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.symbols import N
>>> cf = closed_form(load_model(), Plan([Request.prefill(N)], decoder_replay="bounded"), "token_layers")
>>> cf.expr
21*N + 19*Min(128, N)
>>> cf(N=1000)
23432
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import sympy

from ..costs.counts import CostContext
from ..costs.hardware import Hardware, load_hardware
from ..costs.node import node_cost
from ..costs.value import Cost, sol_time
from ..errors import CostError
from ..ir.graph import Graph
from ..ir.plan import Plan, Request
from ..model.config import ModelSpec
from ..model.inventory import inventory
from ..passes import Compiled, compile_graph, schedule
from ..passes.replay import token_layers
from ..passes.scheduling import PathFinder
from ..symbols import length

METRICS = ("token_layers", "flops", "bytes", "weights_bytes", "kv_read_bytes", "kv_bytes", "comm_bytes", "sol_time")
DEFAULT_BINDING = {"N": 8192, "L": 8192, "B": 64, "P": 8192, "S": 1024}
GRID = tuple(2 ** k for k in range(0, 21))


@dataclass(frozen=True)
class ClosedForm:
    """A metric as a sympy expression of the plan's symbols."""

    metric: str
    expr: sympy.Expr
    symbols: tuple[str, ...]
    binding: tuple[tuple[str, int], ...] = ()
    critical_path: tuple[str, ...] = ()
    valid_range: tuple[int, int] | None = None

    def __call__(self, **values: int) -> Any:
        """The exact value at ``values`` (one per symbol)."""
        value = self.expr.subs({length(k): v for k, v in values.items()})
        return int(value) if value.is_Integer else value

    def lambdify(self) -> Callable:
        """A numpy function of the symbols (in ``self.symbols`` order) for sweeps."""
        return sympy.lambdify([length(s) for s in self.symbols], self.expr, modules="numpy")


def _symbols(plan: Plan) -> tuple[str, ...]:
    free: set[sympy.Symbol] = set()
    for r in plan.requests:
        for v in (r.cached, r.new, r.copies):
            if isinstance(v, sympy.Basic):
                free |= v.free_symbols
    return tuple(sorted(s.name for s in free))


def bind(plan: Plan, values: dict[str, int]) -> Plan:
    """The numeric plan obtained by substituting ``values`` into a symbolic plan."""
    subs = {length(k): v for k, v in values.items()}
    num = lambda v: int(v.subs(subs)) if isinstance(v, sympy.Basic) else v  # noqa: E731
    reqs = [Request(r.kind, num(r.cached), num(r.new), r.swa_cached, None if r.prompt is None else num(r.prompt),
                    r.images, r.image_size, None if r.verify_len is None else num(r.verify_len), num(r.copies),
                    r.seq)
            for r in plan.requests]
    return plan.with_requests(reqs)


def _sum(values) -> sympy.Expr:
    return sympy.Add(*[sympy.sympify(v) for v in values])


def numeric_schedule(model: ModelSpec, plan: Plan, hardware: str | Hardware) -> Compiled:
    """Lower, run the pipeline and the scheduling pass on a numeric plan."""
    return schedule(model, plan, hardware)


def _node_times(graph: Graph, ctx: CostContext, hw: Hardware, ids) -> dict[str, sympy.Expr]:
    """Symbolic SOL time of each node in ``ids``; identical costs share one ``sol_time`` call.

    Building a symbolic ``Max`` is what costs time, and most nodes repeat a cost another layer
    already has (a prefill's 829 nodes carry about 70 distinct costs), hence the memo.
    """
    memo: dict[Cost, sympy.Expr] = {}
    out = {}
    for n in ids:
        cost = node_cost(graph, n, ctx)
        if cost not in memo:
            memo[cost] = sympy.sympify(sol_time(cost, hw).time)
        out[n] = memo[cost]
    return out


def closed_form(model: ModelSpec, plan: Plan, metric: str, *, hardware: str | Hardware = "h200_sxm",
                binding: dict[str, int] | None = None) -> ClosedForm:
    """``metric`` of a (symbolic) plan as a sympy expression; see the module docstring."""
    if metric not in METRICS:
        raise CostError(f"formula metric: unknown {metric!r} (known: {', '.join(METRICS)})")
    names = _symbols(plan)
    compiled = compile_graph(model, plan, check=False)
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    graph, ctx = compiled.graph, CostContext(model, plan, hw.gpus_per_node)
    if metric == "token_layers":
        return ClosedForm(metric, sympy.sympify(token_layers(graph)), names)
    if metric == "weights_bytes":
        return ClosedForm(metric, sympy.Integer(inventory(model).total_bytes), names)
    if metric == "kv_bytes":
        return ClosedForm(metric, sympy.sympify(compiled.report("kv_dedup").global_bytes), names)
    if metric != "sol_time":
        costs = [node_cost(graph, n, ctx) for n in sorted(graph.nodes)]
        pick = {"flops": lambda c: c.total_flops, "bytes": lambda c: c.total_bytes,
                "kv_read_bytes": lambda c: c.byte("kv_read"), "comm_bytes": lambda c: c.total_comm}[metric]
        return ClosedForm(metric, sympy.simplify(_sum(pick(c) for c in costs)), names)
    values = {k: (binding or {}).get(k, DEFAULT_BINDING.get(k, 8192)) for k in names}
    # The path is the numeric schedule's own, at the binding: same graph, same tie rule, so the
    # closed form agrees exactly with what `cost` reports there (docs/architecture.md, decision 6).
    path = numeric_schedule(model, bind(plan, values), hw).report("schedule").critical_path
    missing = [n for n in path if n not in graph.nodes]
    if missing:
        raise CostError(f"formula sol_time: the plan bound at {values} lowers to a graph without {missing[0]!r}; "
                        "choose another binding")
    if len(names) == 1:
        times = _node_times(graph, ctx, hw, graph.topological_order())
        valid = _valid_range(graph, times, length(names[0]), values[names[0]], path)
    else:
        times, valid = _node_times(graph, ctx, hw, path), None
    expr = _sum(times[n] for n in path)
    return ClosedForm(metric, expr, names, tuple(sorted(values.items())), path, valid)


class _Sweeper:
    """Critical paths of a one-symbol graph at many points at once: the node times lambdified
    over the points, the paths from the scheduling pass's own :class:`PathFinder`."""

    def __init__(self, graph: Graph, times: dict[str, sympy.Expr], sym: sympy.Symbol):
        self.finder = PathFinder(graph)
        distinct = sorted(set(times.values()), key=sympy.default_sort_key)
        slot = {e: i for i, e in enumerate(distinct)}
        self.which = np.array([slot[times[n]] for n in self.finder.order])
        self.f = sympy.lambdify(sym, distinct, modules="numpy")

    def paths(self, points: np.ndarray) -> list[tuple[str, ...]]:
        x = points.astype(float)
        values = np.stack([np.broadcast_to(np.asarray(v, dtype=float), x.shape) for v in self.f(x)])
        return self.finder.run(values[self.which])[1]


#: points per octave of the valid-range search grid, and points per refinement round
_PER_OCTAVE, _REFINE = 8, 64


def _between(a: int, b: int) -> np.ndarray:
    """Up to ``_REFINE`` integers strictly between ``a`` and ``b``, evenly spread."""
    return np.unique(np.linspace(a + 1, b - 1, min(_REFINE, b - a - 1)).astype(np.int64))


def _valid_range(graph: Graph, times: dict[str, sympy.Expr], sym: sympy.Symbol, at: int,
                 path: tuple[str, ...]) -> tuple[int, int]:
    """The interval around ``at`` over which ``path`` stays the critical path.

    Checked on a grid of ``_PER_OCTAVE`` points per octave up to 2^20, then each edge refined
    to the integer (assuming the path changes once between two neighbouring grid points).
    Node times are evaluated in floating point, so an exact tie elsewhere reads as a change of
    path: the range errs on the narrow side.
    """
    sweeper = _Sweeper(graph, times, sym)
    grid = np.unique(np.concatenate([np.rint(2 ** (np.arange(0, 20 * _PER_OCTAVE + 1) / _PER_OCTAVE)), [at]]))
    grid = grid.astype(np.int64)
    ok = [p == path for p in sweeper.paths(grid)]
    i = int(np.searchsorted(grid, at))
    ok[i] = True  # the binding's path is the reference, whatever floating point says there
    lo, hi = i, i
    while lo > 0 and ok[lo - 1]:
        lo -= 1
    while hi + 1 < len(grid) and ok[hi + 1]:
        hi += 1
    # edges: [good, bad) pairs to shrink to adjacent integers
    low = (int(grid[lo - 1]), int(grid[lo])) if lo > 0 else None
    high = (int(grid[hi]), int(grid[hi + 1])) if hi + 1 < len(grid) else None
    while (low and low[1] - low[0] > 1) or (high and high[0] + 1 < high[1]):
        probes = {}
        if low and low[1] - low[0] > 1:
            probes["low"] = _between(*low)
        if high and high[0] + 1 < high[1]:
            probes["high"] = _between(*high)
        pts = np.concatenate(list(probes.values()))
        same = dict(zip(pts.tolist(), (p == path for p in sweeper.paths(pts))))
        if "low" in probes:  # walk down from the good end: the last good probe before the first bad one
            bad, good = low
            for p in reversed(probes["low"].tolist()):
                if same[p]:
                    good = p
                else:
                    bad = p
                    break
            low = (bad, good)
        if "high" in probes:
            good, bad = high
            for p in probes["high"].tolist():
                if same[p]:
                    good = p
                else:
                    bad = p
                    break
            high = (good, bad)
    return (low[1] if low else int(grid[0])), (high[0] if high else int(grid[-1]))


def sweep(cf: ClosedForm, values: np.ndarray) -> np.ndarray:
    """Evaluate a one-symbol closed form at many points through numpy."""
    x = np.asarray(values, dtype=float)  # floats: exact for counts below 2^53, and no int64 overflow
    return np.broadcast_to(np.asarray(cf.lambdify()(x), dtype=float), x.shape).copy()
