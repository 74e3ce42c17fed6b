"""Closed-form cost questions: the same cost functions on a symbolic plan.

``closed_form(model, plan, metric)`` compiles a plan whose lengths are sympy symbols
(``v41graph.symbols``) and returns the metric as an expression. For ``sol_time`` the critical
path is chosen numerically at a binding (default N = L = 8192, B = 64; DESIGN.md decision 6)
and the closed form is the sum of the symbolic node times along that path; ``valid_range`` is
the range of the (single) symbol, checked at powers of two up to 2^20, over which that path
stays critical. ``lambdify`` gives a numpy function for sweeps.

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

from ..cost import sol_time
from ..costs import CostContext, node_cost
from ..errors import CostError
from ..graph import Graph
from ..hardware import Hardware, load_hardware
from ..inventory import inventory
from ..model import ModelSpec
from ..passes import compile_graph
from ..passes.replay import token_layers
from ..plan import Plan, Request
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
                    r.images, r.image_size, None if r.verify_len is None else num(r.verify_len), num(r.copies))
            for r in plan.requests]
    return plan.with_requests(reqs)


def _sum(values) -> sympy.Expr:
    return sympy.Add(*[sympy.sympify(v) for v in values])


def _path_times(graph: Graph, ctx: CostContext, hw: Hardware, ids) -> dict[str, sympy.Expr]:
    return {n: sympy.sympify(sol_time(node_cost(graph, n, ctx), hw).time) for n in ids}


def _critical_path(graph: Graph, times: dict[str, float]) -> tuple[str, ...]:
    finish, parent = {}, {}
    for n in graph.topological_order():
        best, via = 0.0, None
        for e in sorted(graph.inputs(n), key=lambda e: e.src):
            if finish[e.src] > best:
                best, via = finish[e.src], e.src
        finish[n], parent[n] = best + times[n], via
    end = max(finish, key=lambda n: (finish[n], n))
    path = []
    while end is not None:
        path.append(end)
        end = parent[end]
    return tuple(reversed(path))


def closed_form(model: ModelSpec, plan: Plan, metric: str, *, hardware: str | Hardware = "h200_sxm",
                binding: dict[str, int] | None = None) -> ClosedForm:
    """``metric`` of a (symbolic) plan as a sympy expression; see the module docstring."""
    if metric not in METRICS:
        raise CostError(f"formula metric: unknown {metric!r} (known: {', '.join(METRICS)})")
    names = _symbols(plan)
    compiled = compile_graph(model, plan, check=False)
    graph, ctx = compiled.graph, CostContext(model, plan)
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
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    values = {k: (binding or {}).get(k, DEFAULT_BINDING.get(k, 8192)) for k in names}
    numeric = _critical_path(graph, {n: float(t.subs({length(k): v for k, v in values.items()}))
                                     for n, t in _path_times(graph, ctx, hw, graph.nodes).items()})
    times = _path_times(graph, ctx, hw, numeric)
    expr = _sum(times[n] for n in numeric)
    valid = _valid_range(graph, ctx, hw, names, values, numeric) if len(names) == 1 else None
    return ClosedForm(metric, expr, names, tuple(sorted(values.items())), numeric, valid)


def _valid_range(graph, ctx, hw, names, values, path) -> tuple[int, int]:
    """Powers of two (and the binding) around the binding where ``path`` stays critical."""
    sym = length(names[0])
    exprs = _path_times(graph, ctx, hw, graph.nodes)
    ids = sorted(exprs)
    f = sympy.lambdify(sym, [exprs[n] for n in ids], modules="numpy")
    points = sorted(set(GRID) | {values[names[0]]})
    ok = [(_critical_path(graph, dict(zip(ids, (float(v) for v in f(p))))) == path) for p in points]
    i = points.index(values[names[0]])
    lo = hi = i
    while lo > 0 and ok[lo - 1]:
        lo -= 1
    while hi + 1 < len(points) and ok[hi + 1]:
        hi += 1
    return points[lo], points[hi]


def sweep(cf: ClosedForm, values: np.ndarray) -> np.ndarray:
    """Evaluate a one-symbol closed form at many points through numpy."""
    return np.asarray(cf.lambdify()(values), dtype=float)
