"""Scheduling: per-node SOL cost, then the critical path over the DAG (costs on nodes).

With a ``pricer`` (OP or hybrid mode, :mod:`v41graph.costs.measured`) each node's time is its
measured one where a table answers — the SOL cost and bound stay beside it — and the report
carries the coverage by tier; op mode raises on the first node (in graph order) no table times.

Contract: writes the ``cost`` (node → Cost) and ``schedule`` (node → NodeSlot) side tables and
returns a :class:`ScheduleReport`; never changes nodes or edges. Sequential stages add because
the graph chains them; work the graph leaves parallel (V4.1's mHC coefficient generation, an
Engram lookup whose addresses depend only on token ids) overlaps. The critical path is chosen
numerically (docs/architecture.md, decision 6) and the schedule's lower bound is
max(critical path, busiest resource summed over all nodes).

Before ⇒ after::

    L3.wq_a (Gemm)  ⇒  cost: 2·T·5120·1280 fp8 flops …; slot: start, finish, bound 'compute'
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..algebra import is_symbolic
from ..costs.counts import QUERY_TILE, CostContext
from ..costs.hardware import Hardware
from ..costs.node import cost_signature, node_cost
from ..costs.rules import EXPERT_ASSUMPTION
from ..costs.measured.coverage import coverage
from ..costs.measured.tiers import Resolution
from ..costs.value import Cost, SolTime, sol_time
from ..errors import CostError
from ..ir.graph import Graph
from .base import PassResult

if TYPE_CHECKING:  # the measured-table readers load only when OP / hybrid mode builds a pricer
    from ..costs.measured.op_cost import OpPricer


@dataclass(frozen=True)
class NodeSlot:
    sol: SolTime
    start: float
    finish: float
    critical: bool
    op: "Resolution | None" = None  # OP / hybrid: the parts, tables and tiers behind the node's time


@dataclass(frozen=True)
class ScheduleReport:
    hardware: str
    critical_path_s: float
    resource_bound_s: float
    total_time_s: float  # max(critical path, busiest resource)
    critical_path: tuple[str, ...]
    resource_s: dict[str, float]  # compute / memory / comm summed over all nodes
    by_stage: dict[str, float]
    by_layer: dict[str, float]
    by_op: dict[str, float]
    bound_by: dict[str, int]  # nodes bound by each resource
    assumptions: tuple[str, ...]
    cost_mode: str = "sol"
    coverage: dict | None = None  # OP / hybrid: costs.measured.coverage.coverage(...)

    def __repr__(self) -> str:  # short: the path alone runs to hundreds of node ids
        from .display import schedule_report_repr
        return schedule_report_repr(self)


class PathFinder:
    """Critical paths with costs on nodes, for one or many sets of node times at once.

    The longest path through the DAG in deterministic topological order; ties go to the
    lexicographically first input, and the path ends at the largest (finish, id). The schedule
    runs it at one binding, closed forms at many points (``backends.query``'s valid range).
    """

    def __init__(self, graph: Graph):
        self.order = graph.topological_order()
        index = {n: i for i, n in enumerate(self.order)}
        self.preds = [np.array([index[s] for s in sorted({e.src for e in graph.inputs(n)})], dtype=np.intp)
                      for n in self.order]
        self.rank = np.argsort(np.argsort(np.array(self.order, dtype=object)))  # each id's rank by name

    def run(self, times) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """Finish times (nodes × points) and the critical path at each point of ``times`` (same shape)."""
        t = np.asarray(times, dtype=float)
        t = t[:, None] if t.ndim == 1 else t
        finish = np.empty_like(t)
        parent = np.full(t.shape, -1, dtype=np.intp)
        columns = np.arange(t.shape[1])
        for i, preds in enumerate(self.preds):  # times are >= 0, so every finish is too
            if len(preds) == 1:  # most nodes: one input
                finish[i] = finish[preds[0]] + t[i]
                parent[i] = np.where(finish[preds[0]] > 0, preds[0], -1)
            elif len(preds):
                before = finish[preds]
                first = before.argmax(axis=0)  # the first of the latest inputs, in id order
                best = before[first, columns]
                finish[i] = best + t[i]
                parent[i] = np.where(best > 0, preds[first], -1)
            else:
                finish[i] = t[i]
        if not len(self.order):
            return finish, [() for _ in columns]
        ends = np.argmax(np.where(finish == finish.max(axis=0), self.rank[:, None], -1), axis=0)
        paths = []
        for k, end in enumerate(ends):
            path = []
            while end >= 0:
                path.append(self.order[end])
                end = parent[end, k]
            paths.append(tuple(reversed(path)))
        return finish, paths


def _sum_into(table: dict[str, float], key: str, value: float) -> None:
    table[key] = table.get(key, 0.0) + value


def _op_times(pricer: OpPricer, graph: Graph, order, cctx: CostContext, keys: dict[str, tuple]
              ) -> dict[str, Resolution]:
    """Each node's measured resolution (identical work priced once); op mode stops at the first miss."""
    memo: dict[tuple, Resolution] = {}
    out = {}
    for n in order:
        key = keys[n]
        if key not in memo:
            memo[key] = pricer.price(graph, n, cctx)
        r = out[n] = memo[key] if memo[key].node == n else Resolution(n, memo[key].kind, memo[key].parts)
        if pricer.mode.strict:
            pricer.check(r)
    return out


@dataclass(frozen=True)
class Scheduling:
    hardware: Hardware
    name: str = "schedule"
    pricer: OpPricer | None = None  # None: SOL times

    def __call__(self, graph: Graph, ctx) -> "PassResult":
        cctx = CostContext(ctx.model, ctx.plan, self.hardware.gpus_per_node)
        order = graph.topological_order()
        memo: dict[tuple, tuple[Cost, SolTime]] = {}
        rows_keys: dict[int, tuple] = {}  # valid while ``graph`` (which holds the rows) is alive
        costs: dict[str, Cost] = {}
        sols: dict[str, SolTime] = {}
        keys: dict[str, tuple] = {}
        for n in order:  # identical work in another layer is costed once
            key = keys[n] = cost_signature(graph, graph.nodes[n], rows_keys)
            if key not in memo:
                cost = node_cost(graph, n, cctx)
                memo[key] = (cost, sol_time(cost, self.hardware))
            costs[n], sols[n] = memo[key]
        for n in order:  # the path is chosen numerically (docs/architecture.md, decision 6): lengths must be bound
            if is_symbolic(sols[n].time):
                raise CostError(f"schedule: node {n!r} has a symbolic SOL time ({sols[n].time}); bind the "
                                "plan's lengths to numbers first (v41graph.backends.query serves closed forms)")
        ops = None if self.pricer is None else _op_times(self.pricer, graph, order, cctx, keys)
        times = {n: float(sols[n].time) if ops is None else ops[n].time for n in order}
        ends, (path,) = PathFinder(graph).run([times[n] for n in order])
        finish = dict(zip(order, ends[:, 0].tolist()))
        on_path = set(path)
        resources = {"compute": 0.0, "memory": 0.0, "comm": 0.0}
        by_stage: dict[str, float] = {}
        by_layer: dict[str, float] = {}
        by_op: dict[str, float] = {}
        bound_by: dict[str, int] = {}
        for n in order:
            node, sol = graph.nodes[n], sols[n]
            for r in resources:
                resources[r] += float(getattr(sol, r))
            _sum_into(by_stage, node.stage, times[n])
            _sum_into(by_layer, "-" if node.layer is None else str(node.layer), times[n])
            _sum_into(by_op, node.op.kind, times[n])
            bound_by[sol.bound] = bound_by.get(sol.bound, 0) + 1
        critical = finish[path[-1]] if path else 0.0
        busiest = max(resources.values())
        slots = {n: NodeSlot(sols[n], finish[n] - times[n], finish[n], n in on_path, None if ops is None else ops[n])
                 for n in order}
        mode = "sol" if self.pricer is None else self.pricer.mode.mode
        cov = None if ops is None else coverage(ops, path, self.pricer.identity(), mode)
        report = ScheduleReport(
            self.hardware.name, critical, busiest, max(critical, busiest), tuple(path), resources,
            dict(sorted(by_stage.items())), by_layer, dict(sorted(by_op.items())), dict(sorted(bound_by.items())),
            (EXPERT_ASSUMPTION, "sparse attention reads each selected entry once per query (no cross-query "
             f"reuse); index scoring streams index K once per tile of {QUERY_TILE} queries (a kernel assumption)",
             "per-GPU shares from the sharding table (model/sharding.py): SGLang's DP-attention layout")
            + (() if ops is None else (OP_ASSUMPTION,)), mode, cov)
        out = graph.annotate("cost", costs).annotate("schedule", slots)
        return PassResult(self.name, out, len(order), report)


#: stated in OP / hybrid reports: what the node times are and what stays SOL
OP_ASSUMPTION = ("OP/hybrid: node times from measured kernel tables by tier (coverage below); the resource "
                 "sums and bounds stay SOL, and closed forms (v41graph formula) are SOL only")


def exact_path_time(graph: Graph, path: tuple[str, ...]) -> Fraction:
    """Σ of the exact SOL times along a path (the schedule stores them per node)."""
    slots = graph.annotation("schedule")
    return sum((Fraction(slots[n].sol.time) for n in path), Fraction(0))
