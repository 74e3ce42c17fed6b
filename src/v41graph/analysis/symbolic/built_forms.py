"""Closed forms of a hand-built graph: its ledger rows carry sympy symbols, and the same cost
functions the schedule uses (``costs/node.py``, the rule table) give the metric as an expression.

:func:`built_closed_form` runs the hand-built pipeline (:mod:`v41graph.passes.built`, without
the schedule, whose path is chosen on numbers) and sums the metric over the nodes, equal work
counted once (:func:`v41graph.analysis.symbolic.regimes.node_costs`). For ``sol_time`` the critical path
and the binding resource are searched over ``domain`` as for a lowered plan, and the form is a
``Piecewise`` of exact per-regime sums (docs/architecture.md, decision 6). No second formula:
bind the symbol and :func:`~v41graph.passes.built.compile_built_graph` gives the same figures.

>>> from v41graph.ir.graph import GraphBuilder
>>> from v41graph.ir.ops import Gemm, GraphInput
>>> from v41graph.symbols import N
>>> b = GraphBuilder("toy")
>>> b.op("L0.input", GraphInput(64), b.rows(N))
'L0.input'
>>> b.op("L0.wq_b", Gemm("q", 64, 32, "bf16"), b.rows(N), reads=[("L0.input", "x", 64, "bf16")], sink=True)
'L0.wq_b'
>>> cf = built_closed_form(b.build(), "flops")
>>> cf.expr, cf(N=10), cf.valid_range
(4096*N, 40960, (1, 1048576))
"""

from __future__ import annotations

import numpy as np
import sympy

from ...costs.counts import CostContext
from ...costs.hardware import Hardware, load_hardware
from ...errors import CostError
from ...ir.graph import Graph
from ...ir.plan import Plan
from ...model.config import ModelSpec
from ...model.sharding import Mapping
from ...passes.base import Pass, run_pipeline
from ...passes.built import built_context, built_pipeline
from .query import ClosedForm, _piecewise
from .regimes import Paths, Timeline, node_costs, runs

__all__ = ["BUILT_METRICS", "built_closed_form"]

BUILT_METRICS = ("flops", "bytes", "kv_read_bytes", "comm_bytes", "sol_time")
_PICK = {"flops": lambda c: c.total_flops, "bytes": lambda c: c.total_bytes,
         "kv_read_bytes": lambda c: c.byte("kv_read"), "comm_bytes": lambda c: c.total_comm}


def _symbols(graph: Graph) -> tuple[sympy.Symbol, ...]:
    free: set[sympy.Symbol] = set()
    for node in graph.nodes.values():
        for r in node.rows:
            for v in (r.q_start, r.q_end, r.swa_start, r.kv_start, r.kv_end, r.cached, r.copies):
                if isinstance(v, sympy.Basic):
                    free |= v.free_symbols
    return tuple(sorted(free, key=lambda s: s.name))


def built_closed_form(graph: Graph, metric: str, hardware: str | Hardware = "h200_sxm", *,
                      mapping: Mapping | None = None, model: ModelSpec | None = None, plan: Plan | None = None,
                      passes: tuple[Pass, ...] | None = None, domain: tuple[int, int] = (1, 1 << 20)) -> ClosedForm:
    """``metric`` (one of ``BUILT_METRICS``) of a hand-built graph whose rows hold one symbol, as
    a closed form valid over ``domain``; see the module doc. ``mapping``, ``model``, ``plan`` and
    ``passes`` as for :func:`~v41graph.passes.built.compile_built_graph`."""
    if metric not in BUILT_METRICS:
        raise CostError(f"built_closed_form metric: unknown {metric!r} (known: {', '.join(BUILT_METRICS)})")
    ctx = built_context(graph, mapping, model, plan, "built_closed_form")  # refuses a graph that is not a Graph
    syms = _symbols(graph)
    if len(syms) > 1:
        raise CostError(f"built_closed_form: rows hold {len(syms)} symbols ({', '.join(map(str, syms))}); one at most")
    lo, hi = domain
    if not 1 <= lo <= hi:
        raise CostError(f"built_closed_form domain: ({lo}, {hi}) is not an interval of positive integers")
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    graph = run_pipeline(graph, ctx, built_pipeline(passes), check=True).graph
    cctx = CostContext(ctx.model, ctx.plan, hw.gpus_per_node)
    names = tuple(s.name for s in syms)
    if metric != "sol_time":
        costs = node_costs(graph, cctx, sorted(graph.nodes), {})
        expr = sympy.Add(*[sympy.sympify(_PICK[metric](c)) for c in costs])
        return ClosedForm(metric, expr, names, valid_range=(lo, hi) if syms else None)
    timeline = Timeline(graph, cctx, hw, list(syms))
    if not syms:
        key = timeline.keys(np.zeros((0, 1)))[0]
        return ClosedForm(metric, timeline.expr(key), (), critical_path=key[1], bound=key[0])
    regimes = [(c, d, key) for c, d, key in runs(timeline.keys, lo, hi)]
    pieces = [(c, d, timeline.expr(key)) for c, d, key in regimes]
    expr = _piecewise(pieces, syms[0])
    guard = Paths(tuple((c, d, timeline, key) for c, d, key in regimes))
    bound, path = guard.key_at(lo)
    return ClosedForm(metric, expr, names, (), path, (lo, hi), tuple(pieces), "the domain given", guard, bound)
