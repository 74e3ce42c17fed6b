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

from ..costs.counts import QUERY_TILE, CostContext
from ..costs.hardware import Hardware
from ..costs.rules import EXPERT_ASSUMPTION
from ..costs.measured.coverage import coverage
from ..costs.measured.tiers import Resolution
from ..costs.value import SolTime
from ..ir.graph import Graph
from .base import PassResult
from .critical_path import PathFinder
from .node_costs import pricing

__all__ = ["NodeSlot", "PathFinder", "ScheduleReport", "Scheduling", "exact_path_time"]

if TYPE_CHECKING:  # the measured-table readers load only when OP / hybrid mode builds a pricer
    from ..costs.measured.op_cost import OpPricer


@dataclass(frozen=True)
class NodeSlot:
    sol: SolTime
    start: float
    finish: float
    critical: bool
    op: "Resolution | None" = None  # OP / hybrid: the parts, tables and tiers behind the node's time


def _slot(sol: SolTime, start: float, finish: float, critical: bool, op) -> NodeSlot:
    """``NodeSlot(sol, start, finish, critical, op)`` without the frozen dataclass's checks (one per
    node of every compile)."""
    slot = object.__new__(NodeSlot)
    object.__setattr__(slot, "__dict__", {"sol": sol, "start": start, "finish": finish, "critical": critical,
                                          "op": op})
    return slot


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


def _op_times(pricer: OpPricer, graph: Graph, order, cctx: CostContext, keys: list[tuple]
              ) -> dict[str, Resolution]:
    """Each node's measured resolution (identical work priced once); op mode stops at the first miss."""
    memo: dict[tuple, Resolution] = {}
    out = {}
    for n, key in zip(order, keys):
        key = key, graph.nodes[n].op  # a measured module is priced by its exact members (layer, ratio)
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
        shape = pricing(graph, ctx.model)
        order = shape.finder.order
        priced = shape.price(graph, cctx, self.hardware)  # identical work priced once (passes/node_costs.py)
        ops = None if self.pricer is None else _op_times(self.pricer, graph, order, cctx, shape.keys(graph))
        times = [p[2] for p in priced] if ops is None else [ops[n].time for n in order]
        ends, path = shape.finder.run_one(times)
        on_path = set(path)
        resources = {"compute": 0.0, "memory": 0.0, "comm": 0.0}
        by_stage: dict[str, float] = {}
        by_layer: dict[str, float] = {}
        by_op: dict[str, float] = {}
        bound_by: dict[str, int] = {}
        for t, (_, sol, _, f), (stage, layer, kind) in zip(times, priced, shape.places):  # in order: the sums as always
            resources["compute"] += f[0]
            resources["memory"] += f[1]
            resources["comm"] += f[2]
            by_stage[stage] = by_stage.get(stage, 0.0) + t
            by_layer[layer] = by_layer.get(layer, 0.0) + t
            by_op[kind] = by_op.get(kind, 0.0) + t
            bound_by[sol.bound] = bound_by.get(sol.bound, 0) + 1
        critical = ends[order.index(path[-1])] if path else 0.0
        busiest = max(resources.values())
        slots = {n: _slot(p[1], finish - t, finish, n in on_path, None if ops is None else ops[n])
                 for n, t, finish, p in zip(order, times, ends, priced)}
        mode = "sol" if self.pricer is None else self.pricer.mode.mode
        cov = None if ops is None else coverage(ops, path, self.pricer.identity(), mode)
        report = ScheduleReport(
            self.hardware.name, critical, busiest, max(critical, busiest), tuple(path), resources,
            dict(sorted(by_stage.items())), by_layer, dict(sorted(by_op.items())), dict(sorted(bound_by.items())),
            (EXPERT_ASSUMPTION, "sparse attention reads each selected entry once per query (no cross-query "
             f"reuse); index scoring streams index K once per tile of {QUERY_TILE} queries (a kernel assumption)",
             "per-GPU shares from the sharding table (model/sharding.py): SGLang's DP-attention layout")
            + (() if ops is None else (OP_ASSUMPTION,)), mode, cov)
        costs = dict(zip(order, (p[0] for p in priced)))
        out = graph.annotate("cost", costs).annotate("schedule", slots)  # nothing reuses a scheduled shape
        return PassResult(self.name, out, len(order), report)


#: stated in OP / hybrid reports: what the node times are and what stays SOL
OP_ASSUMPTION = ("OP/hybrid: node times from measured kernel tables by tier (coverage below); the resource "
                 "sums and bounds stay SOL, and closed forms (v41graph formula) are SOL only")


def exact_path_time(graph: Graph, path: tuple[str, ...]) -> Fraction:
    """Σ of the exact SOL times along a path (the schedule stores them per node)."""
    slots = graph.annotation("schedule")
    return sum((Fraction(slots[n].sol.time) for n in path), Fraction(0))
