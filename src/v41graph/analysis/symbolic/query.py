"""Closed-form cost questions: the same cost functions on a symbolic plan.

``closed_form(model, plan, metric)`` compiles a plan whose lengths are sympy symbols
(``v41graph.symbols``) and returns the metric as an expression that equals the numbers over
the whole domain of its symbol: 1 ≤ x ≤ the largest value keeping every request within
``max_position_embeddings`` (issue 10). Where what the metric sums changes — the graph's
structure where a fusion's legality does, the SOL time's critical path or binding resource —
the form is a ``Piecewise`` of exact per-regime sums (:mod:`v41graph.analysis.symbolic.regimes`); for
``sol_time`` each piece is the sum of symbolic node times along that regime's critical path
(docs/architecture.md, decision 6), or a resource summed over all nodes where that is longer, as the
schedule's total is. Values outside the domain raise :class:`~v41graph.errors.CostError`.
:meth:`ClosedForm.at` is the piece holding at one point (``formula --at N=…``).

Plans in two or more symbols are compiled and pathed at one binding (default N = L = P = 8192,
B = 64, S = 1024); evaluating them where the structure or the path differs raises.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.symbols import N
>>> cf = closed_form(load_model(), Plan([Request.prefill(N)], decoder_replay="bounded"), "token_layers")
>>> cf.expr
21*N + 19*Min(128, N)
>>> cf(N=1000), cf.valid_range
(23432, (1, 1048576))
>>> cf(N=2_000_000)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
v41graph.errors.CostError: closed form token_layers: N = 2000000 is outside [1, 1048576], where it was built ...
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable

import numpy as np
import sympy

from ...algebra import as_int
from ...costs.counts import CostContext
from ...costs.hardware import Hardware, load_hardware
from ...errors import CostError, PlanError, expect
from ...ir.ledger import ledger
from ...ir.plan import Plan
from ...model.config import ModelSpec
from ...model.inventory import inventory
from ...passes import Compiled, PassContext, compile_graph, default_pipeline
from ...passes.replay import token_layers
from ...symbols import length
from .lambdified import piecewise_function
from .regimes import MAX_COPIES, Guard, Paths, Timeline, domain, node_costs, position_limit, runs, structure_keys

METRICS = ("token_layers", "flops", "bytes", "weights_bytes", "kv_read_bytes", "kv_bytes", "comm_bytes", "sol_time")
DEFAULT_BINDING = {"N": 8192, "L": 8192, "B": 64, "P": 8192, "S": 1024}


@dataclass(frozen=True)
class ClosedForm:
    """A metric as a sympy expression of the plan's symbols.

    ``pieces`` are ``(first, last, expr)`` of a one-symbol form (``expr`` is their Piecewise),
    ``valid_range`` the domain they cover; ``critical_path`` is the path at ``binding``.
    """

    metric: str
    expr: sympy.Expr
    symbols: tuple[str, ...]
    binding: tuple[tuple[str, int], ...] = ()
    critical_path: tuple[str, ...] = ()
    valid_range: tuple[int, int] | None = None
    pieces: tuple[tuple[int, int, sympy.Expr], ...] = ()
    note: str = ""  # what bounds the domain, for error messages
    guard: Callable[[dict[str, int]], None] | None = field(default=None, compare=False, repr=False)
    bound: str = "path"  # sol_time at the binding: "path", or the resource summed over all nodes

    def _check(self, values: dict[str, Any]) -> dict[str, int]:
        """``values`` as ints, once each is known to be an integer inside the form's domain."""
        for name, x in values.items():  # 1.5 or True would substitute into sympy without a word
            if as_int(x) is None:
                raise CostError(f"closed form {self.metric}: {name} = {x!r} is not an integer token count")
        values = {name: int(x) for name, x in values.items()}
        if self.valid_range is not None and len(self.symbols) == 1:
            (name,) = self.symbols
            lo, hi = self.valid_range
            x = values.get(name)
            if x is None or not lo <= x <= hi:
                raise CostError(f"closed form {self.metric}: {name} = {x} is outside [{lo}, {hi}], where it was "
                                f"built{f' ({self.note})' if self.note else ''}")
        if self.guard is not None:
            self.guard(values)
        return values

    def __call__(self, **values: int) -> Any:
        """The exact value at ``values`` (one per symbol); outside the domain an error."""
        values = self._check(values)
        expr = self.expr
        if self.pieces:
            x = values[self.symbols[0]]
            expr = next(e for lo, hi, e in self.pieces if lo <= x <= hi)
        value = sympy.sympify(expr).subs({length(k): v for k, v in values.items()})
        return int(value) if value.is_Integer else value

    def at(self, **values: int) -> "ClosedForm":
        """The piece holding at ``values``, with its own range and (for sol_time) path."""
        values = self._check(values)
        if not self.pieces:
            return self
        x = values[self.symbols[0]]
        lo, hi, e = next(p for p in self.pieces if p[0] <= x <= p[1])
        key = self.guard.key_at(x) if hasattr(self.guard, "key_at") else (self.bound, self.critical_path)
        return replace(self, expr=e, binding=tuple(sorted(values.items())), critical_path=key[1], bound=key[0],
                       valid_range=(lo, hi), pieces=((lo, hi, e),))

    def lambdify(self) -> Callable:
        """A numpy function of the symbols (in ``self.symbols`` order) for sweeps, built once per
        form; a Piecewise evaluates each piece only where it holds, with the Min and Max that
        the piece's range decides already decided (:mod:`v41graph.analysis.symbolic.lambdified`)."""
        return self._numpy

    @cached_property
    def _numpy(self) -> Callable:
        syms = [length(s) for s in self.symbols]
        if len(self.pieces) < 2:
            return sympy.lambdify(syms, self.expr, modules="numpy")
        return piecewise_function(self.pieces, syms[0])


def plan_symbols(plan: Plan) -> tuple[str, ...]:
    """The names of the symbols a plan's lengths and copies hold, sorted.

    >>> from v41graph import Plan, Request
    >>> from v41graph.symbols import length
    >>> plan_symbols(Plan([Request.extend(length("P"), length("S")), Request.prefill(8)]))
    ('P', 'S')
    """
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
    reqs = [replace(r, cached=num(r.cached), new=num(r.new), prompt=None if r.prompt is None else num(r.prompt),
                    verify_len=None if r.verify_len is None else num(r.verify_len), copies=num(r.copies))
            for r in plan.requests]
    return plan.with_requests(reqs)


def _value(metric: str, compiled: Compiled, model: ModelSpec, ctx: CostContext, memo: dict) -> sympy.Expr:
    """A metric other than sol_time of one compiled graph (costs of equal work summed once)."""
    graph = compiled.graph
    if metric == "token_layers":  # the whole plan's in every mapping (issue 37), as cost and compile say it
        return sympy.sympify(ledger(model, ctx.plan).token_layers() if ctx.plan.dp > 1 else token_layers(graph))
    if metric == "weights_bytes":
        return sympy.Integer(inventory(model).total_bytes)
    if metric == "kv_bytes":
        return sympy.sympify(compiled.report("kv_dedup").global_bytes)
    pick = {"flops": lambda c: c.total_flops, "bytes": lambda c: c.total_bytes,
            "kv_read_bytes": lambda c: c.byte("kv_read"), "comm_bytes": lambda c: c.total_comm}[metric]
    counts: dict = {}
    for c in node_costs(graph, ctx, sorted(graph.nodes), memo):
        counts[c] = counts.get(c, 0) + 1
    return sympy.Add(*[k * sympy.sympify(pick(c)) for c, k in counts.items()])


def _piecewise(pieces: list[tuple[int, int, sympy.Expr]], sym: sympy.Symbol) -> sympy.Expr:
    merged: list[tuple[int, int, sympy.Expr]] = []
    for lo, hi, e in pieces:  # neighbours with one expression are one piece
        if merged and merged[-1][2] == e:
            merged[-1] = (merged[-1][0], hi, e)
        else:
            merged.append((lo, hi, e))
    pieces[:] = merged
    if len(merged) == 1:
        return merged[0][2]
    return sympy.Piecewise(*[(e, sym <= hi) for _, hi, e in merged[:-1]], (merged[-1][2], True))


def closed_form(model: ModelSpec, plan: Plan, metric: str, *, hardware: str | Hardware = "h200_sxm",
                binding: dict[str, int] | None = None) -> ClosedForm:
    """``metric`` of a (symbolic) plan as a sympy expression; see the module docstring."""
    if metric not in METRICS:
        raise CostError(f"formula metric: unknown {metric!r} (known: {', '.join(METRICS)})")
    expect(plan, Plan, "closed_form plan", PlanError, " (v41graph.Plan([...]))").check(model)  # a model too
    names = plan_symbols(plan)
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    ctx = CostContext(model, plan, hw.gpus_per_node)
    if len(names) == 1:
        return _one_symbol(model, plan, metric, hw, ctx, names[0], binding)
    values = {k: (binding or {}).get(k, DEFAULT_BINDING.get(k, 8192)) for k in names}
    compiled = compile_graph(model, plan, check=False, at=values)
    conditions = compiled.report("fusion").conditions
    syms = [length(k) for k in names]
    structure = structure_keys(conditions, syms)
    point = lambda vals: np.array([vals[k] for k in names], dtype=np.int64).reshape(len(names), 1)  # noqa: E731
    expected = structure(point(values))[0]
    ends = tuple(sympy.sympify(r.end) for r in plan.requests)
    if metric != "sol_time":
        guard = Guard(metric, names, values, structure, expected, None, None, ends, position_limit(model))
        return ClosedForm(metric, _value(metric, compiled, model, ctx, {}), names, tuple(sorted(values.items())),
                          guard=guard)
    timeline = Timeline(compiled.graph, ctx, hw, syms)
    key = timeline.keys(point(values))[0]
    path = key[1]
    guard = Guard(metric, names, values, structure, expected, timeline, key, ends, position_limit(model))
    return ClosedForm(metric, timeline.expr(key), names, tuple(sorted(values.items())), path, guard=guard,
                      bound=key[0])


def _one_symbol(model, plan, metric, hw, ctx, name, binding) -> ClosedForm:
    sym = length(name)
    lo, hi = domain(model, plan, name)
    note = (f"max_position_embeddings {position_limit(model)}" if hi < MAX_COPIES or name != "B"
            else f"batch sizes searched up to {MAX_COPIES}")
    pipeline = default_pipeline()  # rerun only fusion (and registered passes after it) per structure
    cut = [p.name for p in pipeline].index("fusion")
    unfused = compile_graph(model, plan, check=False, passes=pipeline[:cut])
    fuse = lambda at: _fused(unfused, pipeline[cut:], model, plan, at)  # noqa: E731
    probe = fuse(())
    structure = runs(structure_keys(probe.report("fusion").conditions, [sym]), lo, hi)
    pieces, timelines, memo = [], [], {}
    for a, b, holds in structure:  # one compile per structure: fusion decided at a point inside it
        # the probe kept every symbolic condition apart: it is the graph where none holds
        compiled = probe if not any(holds) else fuse(((name, a),))
        if metric != "sol_time":
            pieces.append((a, b, _value(metric, compiled, model, ctx, memo)))
            continue
        timeline = Timeline(compiled.graph, ctx, hw, [sym], memo)
        for c, d, key in runs(timeline.keys, a, b):
            pieces.append((c, d, timeline.expr(key)))
            timelines.append((c, d, timeline, key))
    expr = _piecewise(pieces, sym)
    at = (binding or {}).get(name, DEFAULT_BINDING.get(name, 8192))
    guard = Paths(tuple(timelines)) if timelines else None
    bound, path = guard.key_at(min(max(at, lo), hi)) if guard else ("path", ())
    cf = ClosedForm(metric, expr, (name,), ((name, at),) if metric == "sol_time" else (), path, (lo, hi),
                    tuple(pieces), note, guard, bound)
    return cf.at(**{name: at}) if binding else cf


def _fused(unfused: Compiled, passes, model: ModelSpec, plan: Plan, at: tuple) -> Compiled:
    results, graph = [], unfused.graph
    for p in passes:  # fusion, then any registered pass placed after it
        results.append(p(graph, PassContext(model, plan, at)))
        graph = results[-1].graph
    return Compiled(graph, unfused.passes + tuple(results))


def evaluate_at(cf: ClosedForm, values: np.ndarray) -> np.ndarray:
    """Evaluate a one-symbol closed form at many points through numpy; outside its domain an error.

    (Named apart from :func:`v41graph.sweep`, the one sweep: that runs a grid of plans.)"""
    if len(cf.symbols) > 1:
        raise CostError(f"sweep {cf.metric}: one-symbol closed forms only (this one has {', '.join(cf.symbols)})")
    x = np.asarray(values, dtype=float)  # floats: exact for counts below 2^53, and no int64 overflow
    if cf.valid_range is not None and x.size:
        lo, hi = cf.valid_range
        if x.min() < lo or x.max() > hi:
            bad = x.min() if x.min() < lo else x.max()
            raise CostError(f"sweep {cf.metric}: {cf.symbols[0]} = {bad:g} is outside [{lo}, {hi}], where the "
                            f"closed form was built{f' ({cf.note})' if cf.note else ''}")
    f = cf.lambdify()
    return np.broadcast_to(np.asarray(f(x) if cf.symbols else f(), dtype=float), x.shape).copy()
