"""Questions answered by solving: the longest context that fits, the batch at which a decode
step turns compute-bound, the length at which one plan becomes X× faster than another, and
derivatives and sensitivities.

Each answer is an :class:`Answer`: the value, whether it is exact (a sympy root or an exact
integer search on the exact cost curve) or numeric (a root between two evaluated points, with
that ``bracket``), the method in words, and the figures that check it on both sides.

>>> from v41graph import load_model, Plan, Request
>>> a = max_context(load_model(), Plan([Request.prefill(1)], tp=8, ep=8), "h200_sxm")
>>> a.value == 1_048_576 == a.checks["max_position"] < a.checks["memory_only"], a.checks["bound_by"]
(True, 'max_position')
>>> from dataclasses import replace
>>> from v41graph.costs.hardware import load_hardware
>>> small = replace(load_hardware("h200_sxm"), hbm_capacity=75_500_000_000)  # 0.6 GB of the budget left
>>> a = max_context(load_model(), Plan([Request.prefill(1)], tp=8, ep=8), small)
>>> a.value == a.checks["fits_at"] < 1_048_576, a.checks["fits"], a.checks["fits_next"], a.checks["bound_by"]
(True, True, False, 'memory')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import sympy

from ...costs.counts import CostContext
from ...costs.hardware import Hardware, load_hardware
from ...costs.node import node_cost
from ...costs.value import sol_time
from ...errors import CostError, PlanError, expect
from ...ir.plan import Plan, Request
from ...model.config import ModelSpec
from ...model.gpu_memory import gpu_memory
from ...model.sharding import mapping_of
from ...passes import compile_graph
from ...symbols import length
from ..answer import TypedAnswer, part
from .calculus import branch_at, freeze_untouched, real_roots, right_derivative
from ...passes import compile
from .query import bind, closed_form

__all__ = ["Answer", "by_op", "compute_bound_batch", "crossover", "max_context", "sensitivity", "ttft_by_op_rate"]


def _plain(v: Any) -> Any:
    """A JSON value as is, anything else (a sympy number) as its string."""
    return v if isinstance(v, (int, float, bool, str, type(None))) else str(v)


@dataclass(frozen=True)
class Answer(TypedAnswer):
    """One solved question: ``value``, ``exact`` or numeric within ``bracket``, and its checks; ``to_json()``
    is ``ask``'s (sympy values as strings)."""

    question: str
    value: Any = part(as_json=_plain)
    exact: bool
    method: str
    bracket: tuple[Any, Any] | None = part(as_json=lambda b: None if b is None else [_plain(x) for x in b],
                                           default=None)
    checks: dict[str, Any] = part(as_json=lambda c: {k: _plain(v) for k, v in c.items()}, default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-ready (sympy values as strings): :meth:`to_dict`."""
        return self.to_dict()


def _hw(hardware: str | Hardware) -> Hardware:
    return hardware if isinstance(hardware, Hardware) else load_hardware(hardware)


def max_context(model: ModelSpec, plan: Plan, hardware: str | Hardware = "h200_sxm", *,
                dspark: bool = False) -> Answer:
    """The longest context N one request may hold on one GPU under ``plan``'s mapping: N fits and
    N + 1 does not (weights by the sharding table and the request's cache within the 90 % budget, as
    every command judges fit),
    and N is a position the model has (``max_position_embeddings``): where memory would hold more,
    the answer is the model's limit and the memory-only figure is a check beside it."""
    hw = _hw(hardware)
    mapping = mapping_of(expect(plan, Plan, "max_context plan", PlanError, " (v41graph.Plan([...]))").check(model))
    at = lambda n: gpu_memory(model, mapping, hw.hbm_capacity, [(n, 1)], dspark=dspark)  # noqa: E731
    empty = at(0)
    if not empty.fits:
        raise CostError(f"ask max-context: the weights alone ({empty.weights_bytes:,} B per GPU) exceed "
                        f"{hw.name}'s budget of {empty.budget_bytes:,} B (90 % of its {hw.hbm_capacity:,} B) "
                        f"under tp={mapping.tp} ep={mapping.ep} dp={mapping.dp}")
    n = empty.kv_tokens_fit  # integer bisection on the exact (monotone) cache curve
    here, nxt = at(n), at(n + 1)
    limit = model.max_position
    # fits: weights + cache within the budget, the one rule (model/gpu_memory.py)
    checks = {"memory_only": n, "fits_at": n, "fits": here.fits, "static_bytes": here.static_bytes,
              "fits_next": nxt.fits, "static_bytes_next": nxt.static_bytes, "budget_bytes": here.budget_bytes,
              "capacity_bytes": hw.hbm_capacity,
              "max_position": limit, "within_max_position": limit is None or n <= limit}
    if limit is not None and n > limit:
        return Answer("max-context", limit, True, f"the model's max_position_embeddings; memory alone would hold "
                      f"{n:,} tokens (integer bisection on the exact per-GPU memory curve)", None,
                      {**checks, "bound_by": "max_position"})
    return Answer("max-context", n, True, "integer bisection on the exact per-GPU memory curve (monotone in N)",
                  (n, n + 1), {**checks, "bound_by": "memory"})


def _resource_forms(model: ModelSpec, plan: Plan, hw: Hardware) -> tuple[sympy.Expr, sympy.Expr]:
    """Σ compute seconds and Σ memory seconds over every node of a symbolic plan."""
    graph = compile_graph(model, plan, check=False).graph
    ctx = CostContext(model, plan, hw.gpus_per_node)
    memo: dict = {}
    compute, memory = [], []
    for n in sorted(graph.nodes):
        cost = node_cost(graph, n, ctx)
        if cost not in memo:
            s = sol_time(cost, hw)
            memo[cost] = (sympy.sympify(s.compute), sympy.sympify(s.memory))
        compute.append(memo[cost][0])
        memory.append(memo[cost][1])
    return sympy.Add(*compute), sympy.Add(*memory)


def compute_bound_batch(model: ModelSpec, context: int = 8192, hardware: str | Hardware = "h200_sxm", *,
                        limit: int = 1 << 16, **policies) -> Answer:
    """The smallest decode batch B (requests of ``context`` tokens) whose step spends at least as
    long on compute as on memory (summed over all nodes): the exact root of compute(B) = memory(B)
    on the branch where it lies, rounded up."""
    hw, b = _hw(hardware), length("B")
    compute, memory = _resource_forms(model, Plan([Request.decode(context, copies=b)], **policies), hw)
    gap = compute - memory
    value = lambda n: gap.subs(b, n)  # noqa: E731 - exact rationals
    lo, hi = 1, 1
    while value(hi) < 0:
        lo, hi = hi, hi * 2
        if hi > limit:
            raise CostError(f"ask compute-bound: a decode step at context {context:,} stays memory-bound up to "
                            f"B = {limit:,}")
    while hi - lo > 1:  # smallest integer with gap >= 0
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if value(mid) >= 0 else (mid, hi)
    if value(lo) >= 0:
        hi = lo
    frozen, held = freeze_untouched(gap, b, hi - 1, hi)
    branch = sympy.expand(branch_at(frozen, b, sympy.Rational(2 * hi - 1, 2)))
    roots = [r for r in real_roots(branch, b) if hi - 1 <= r <= hi]
    exact = bool(roots)
    return Answer("compute-bound", hi, exact,
                  ("exact root of compute(B) = memory(B) on its branch: B* = " + str(roots[0]) + _HELD * held
                   if exact else "integer bisection of compute(B) − memory(B) (numeric)"),
                  (hi - 1, hi), {"root": roots[0] if exact else None, "context": context,
                                 "compute_s_at": float(compute.subs(b, hi)), "memory_s_at": float(memory.subs(b, hi)),
                                 "compute_s_before": float(compute.subs(b, max(hi - 1, 1))),
                                 "memory_s_before": float(memory.subs(b, max(hi - 1, 1)))})


def _metric(model: ModelSpec, plan: Plan, metric: str, hw: Hardware) -> Callable[[int], float]:
    memo: dict[int, float] = {}

    def at(n: int) -> float:
        if n not in memo:
            bound = bind(plan, {"N": n})
            if metric == "sol_time":
                memo[n] = compile(model, bound, hw).report("schedule").total_time_s
            else:
                memo[n] = float(closed_form(model, bound, metric, hardware=hw).expr)
        return memo[n]
    return at


def crossover(model_a: ModelSpec, plan_a: Plan, model_b: ModelSpec, plan_b: Plan, *, metric: str = "sol_time",
              ratio: float = 1.2, hardware: str | Hardware = "h200_sxm", limit: int = 1 << 20) -> Answer:
    """The smallest prompt length N (plans in the symbol N) from which ``metric`` of a is at least
    ``ratio`` × that of b (b is ``ratio``× faster): scanned over powers of two, then bisected to
    adjacent integers; numeric (the schedule's critical path changes with N), with the bracket."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio < float("inf"):
        raise CostError(f"ask crossover ratio: must be a finite number > 0 (a / b to reach), got {ratio!r}")
    hw = _hw(hardware)
    fa, fb = _metric(model_a, plan_a, metric, hw), _metric(model_b, plan_b, metric, hw)
    ok = lambda n: fa(n) >= ratio * fb(n)  # noqa: E731
    if ok(1):  # reached before any length: the answer is the first length there is
        return Answer("crossover", 1, True, f"from N = 1: a / b is already ≥ {ratio} at N = 1", None,
                      {"metric": metric, "ratio": ratio, "a_at": fa(1), "b_at": fb(1), "ratio_at": fa(1) / fb(1)})
    lo, hi = 1, 2
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            raise CostError(f"ask crossover: {metric} ratio stays below {ratio} up to N = {limit:,}")
    while hi - lo > 1:  # assumes one crossing between lo and hi
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    root, held = _exact_crossing(model_a, plan_a, model_b, plan_b, metric, ratio, hw, lo, hi)
    method = ("exact root of a(N) = ratio × b(N) on the closed-form pieces holding over the bracket: N* = "
              f"{root}{_HELD * held}" if root is not None
              else "numeric: the closed forms change piece inside the bracket")
    return Answer("crossover", hi, root is not None, "powers of two, then integer bisection (assumes one crossing in "
                  f"the bracket); {method}", (lo, hi),
                  {"metric": metric, "ratio": ratio, "root": root, "a_at": fa(hi), "b_at": fb(hi),
                   "ratio_at": fa(hi) / fb(hi), "a_before": fa(lo), "b_before": fb(lo),
                   "ratio_before": fa(lo) / fb(lo)})


def _exact_crossing(model_a, plan_a, model_b, plan_b, metric, ratio, hw, lo, hi):
    """(The real root in [lo, hi] of a(N) − ratio·b(N) when each closed form is one piece there, or
    None; whether an expected-experts term was held at N = hi to find it)."""
    n = length("N")
    pieces = [closed_form(m, p, metric, hardware=hw).at(N=hi) for m, p in ((model_a, plan_a), (model_b, plan_b))]
    if any(not (c.valid_range[0] <= lo <= c.valid_range[1]) for c in pieces):
        return None, False
    gap = pieces[0].expr - sympy.Rational(str(ratio)) * pieces[1].expr
    frozen, held = freeze_untouched(gap, n, lo, hi)  # expected-experts terms at N = hi
    mid = sympy.Rational(2 * lo + 1, 2)
    branch = branch_at(frozen, n, mid)
    # floor(N/k) (the compressed entries) is constant between adjacent integers: its value there, so sympy
    # solves a polynomial (the check below holds the whole form, floors and all, at the root)
    branch = sympy.expand(branch.replace(lambda e: isinstance(e, (sympy.floor, sympy.ceiling)) and e.has(n),
                                         lambda e: e.subs(n, mid)) if hi - lo == 1 else branch)
    roots = [r for r in real_roots(branch, n) if lo <= r <= hi]
    # the branch was taken at the bracket's middle: keep a root only if the whole form vanishes there
    roots = [r for r in roots if sympy.simplify(frozen.subs(n, r)) == 0]
    return (roots[0], held) if roots else (None, held)


#: said with a root found where an expected-experts term moves inside the bracket
_HELD = " (expected-experts terms untouched(p, ·) held at the bracket's upper end)"


def by_op(model: ModelSpec, plan: Plan, metric: str = "flops", hardware: str | Hardware = "h200_sxm") -> dict:
    """``metric`` (flops, bytes or comm_bytes) summed by op kind as closed forms (a fused module by its rule)."""
    pick = {"flops": lambda c: c.total_flops, "bytes": lambda c: c.total_bytes, "comm_bytes": lambda c: c.total_comm}
    if metric not in pick:
        raise CostError(f"by_op: metric {metric!r} is not one of {', '.join(pick)}")
    hw = _hw(hardware)
    graph = compile_graph(model, plan, check=False).graph
    ctx = CostContext(model, plan, hw.gpus_per_node)
    out: dict[str, list] = {}
    for n in sorted(graph.nodes):
        op = graph.nodes[n].op
        kind = f"Fused[{op.rule}]" if op.kind == "Fused" else op.kind
        out.setdefault(kind, []).append(pick[metric](node_cost(graph, n, ctx)))
    return {k: sympy.simplify(sympy.Add(*map(sympy.sympify, v))) for k, v in sorted(out.items())}


def ttft_by_op_rate(model: ModelSpec, plan: Plan, hardware: str | Hardware = "h200_sxm", *,
                    at: int = 8192) -> dict[str, sympy.Expr]:
    """d TTFT / d N by op family, in the regime holding at N = ``at``: the right derivative of each
    family's share of that regime's SOL time (its critical path, or the bounding resource summed
    over all nodes), valid over the piece's range (``closed_form(...).at(N=at).valid_range``)."""
    hw = _hw(hardware)
    piece = closed_form(model, plan, "sol_time", hardware=hw).at(N=at)
    graph = compile_graph(model, plan, check=False, at={"N": at}).graph  # the graph of that regime
    ctx = CostContext(model, plan, hw.gpus_per_node)
    ids = piece.critical_path if piece.bound == "path" else tuple(sorted(graph.nodes))
    memo: dict = {}
    families: dict[str, list] = {}
    for n in ids:
        cost = node_cost(graph, n, ctx)
        if cost not in memo:
            sol = sol_time(cost, hw)
            value = sympy.sympify(sol.time if piece.bound == "path" else getattr(sol, piece.bound))
            # expected-experts terms held at N = at: the breakpoints are roots of algebraic forms (their
            # own rate, ln(1 − p)·(1 − p)^N, is dropped: 0 on chance.untouched's grid past N ≈ 2,400 at 6 of 384)
            memo[cost] = freeze_untouched(value, length("N"), at, at)[0]
        op = graph.nodes[n].op
        families.setdefault(f"Fused[{op.rule}]" if op.kind == "Fused" else op.kind, []).append(memo[cost])
    return {k: right_derivative(sympy.Add(*v), length("N")) for k, v in sorted(families.items())}


def sensitivity(model: ModelSpec, plan: Plan, hardware: str | Hardware = "h200_sxm") -> dict[str, float]:
    """d time / d HBM bandwidth and d time / d peak (all precisions scaled together) of a numeric
    plan's forward, along its critical path (or the busiest resource when that bounds it), with
    the elasticities (d ln T / d ln x): −(share of the time bound by that resource)."""
    hw = _hw(hardware)
    compiled = compile(model, plan, hw)
    report = compiled.report("schedule")
    slots = compiled.graph.annotation("schedule")
    total = report.total_time_s
    if report.critical_path_s >= report.resource_bound_s:
        memory = sum(float(slots[n].sol.memory) for n in report.critical_path if slots[n].sol.bound == "memory")
        compute = sum(float(slots[n].sol.compute) for n in report.critical_path if slots[n].sol.bound == "compute")
    else:
        busiest = max(report.resource_s, key=report.resource_s.get)
        memory = report.resource_s["memory"] if busiest == "memory" else 0.0
        compute = report.resource_s["compute"] if busiest == "compute" else 0.0
    # (0.0 - x, not -x: no negative zero in the output)
    return {"time_s": total, "dT_d_bandwidth_s_per_Bps": 0.0 - memory / hw.hbm_bandwidth,
            "elasticity_bandwidth": 0.0 - memory / total, "elasticity_peak": 0.0 - compute / total}
