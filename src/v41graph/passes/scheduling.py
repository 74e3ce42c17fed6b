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

from collections import Counter
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..algebra import fsum_in_order
from ..costs.counts import QUERY_TILE, CostContext
from ..costs.hardware import Hardware
from ..costs.rules import expert_assumptions
from ..costs.measured.coverage import coverage
from ..costs.measured.module_sol import module_signature
from ..costs.node import rows_key
from ..costs.measured.tiers import MeasuredMiss, Resolution
from ..costs.value import SolTime
from ..ir.graph import Graph
from ..ir.ops import Fused
from ..reuse import shadow_check, shadowing
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


class SlotTable(MappingABC):
    """The ``schedule`` side table: node id → :class:`NodeSlot`, each slot made when first read (a
    sweep reads the totals of thousands of schedules and no slot of most of them)."""

    frozen_table = True  # immutable: Graph.annotate keeps it as it is

    def __init__(self, position: dict[str, int], sols: list, times: list[float], ends: list[float],
                 on_path: set[str], ops: dict | None):
        self._position, self._sols, self._times, self._ends = position, sols, times, ends
        self._on_path, self._ops, self._made = on_path, ops, {}

    def __getitem__(self, node_id: str) -> NodeSlot:
        slot = self._made.get(node_id)
        if slot is None:
            i = self._position[node_id]
            slot = self._made[node_id] = NodeSlot(self._sols[i], self._ends[i] - self._times[i], self._ends[i],
                                                  node_id in self._on_path,
                                                  None if self._ops is None else self._ops[node_id])
        return slot

    def __iter__(self):
        return iter(self._position)

    def __len__(self) -> int:
        return len(self._position)

    def __repr__(self) -> str:
        return f"SlotTable({len(self)} nodes)"


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


def _answer(r: Resolution) -> tuple:
    """What a measured price decides (not the node it was first made for)."""
    return r.kind, r.parts


def _op_times(pricer: OpPricer, graph: Graph, order, cctx: CostContext, keys: list[tuple]
              ) -> dict[str, Resolution]:
    """Each node's measured resolution (identical work priced once); op mode fails once, naming the
    first miss and every op kind that misses (one line: a user fixes them all, not one per run)."""
    memo: dict[tuple, Resolution] = {}
    out = {}
    misses: dict[str, list[str]] = {}  # op kind → the nodes it misses on
    first = None  # the first miss: its node, op, table and coordinates
    shadow = shadowing()
    nodes, rows_keys = graph.nodes, {}
    for n, key in zip(order, keys):  # (Pricing.keys: which nodes price alike)
        op = nodes[n].op
        if isinstance(op, Fused) and op.rule == "measured:dsv4_attention":
            # a measured attention module reads its rows and its cost signature, never its layer
            # (costs/measured/module_sol.py): the layers of one kind over equal rows price alike
            key = ("module", module_signature(graph, nodes[n], cctx.model), rows_key(nodes[n].rows, rows_keys))
        known = memo.get(key)
        if known is None:
            known = memo[key] = pricer.price(graph, n, cctx)
        elif shadow:
            shadow_check("measured prices of equal work", known, pricer.price(graph, n, cctx), _answer)
        r = out[n] = known if known.node == n else Resolution(n, known.kind, known.parts)
        miss = pricer.miss(r) if pricer.mode.strict else None
        if miss is not None:
            misses.setdefault(miss[0], []).append(n)
            first = first or miss[1]
    if misses:
        rest = list(misses.items())[1:]
        also = ", ".join(f"{k} ({len(v)} node{'s' * (len(v) > 1)}, first {v[0]!r})" for k, v in rest)
        raise MeasuredMiss(f"--cost op: no measured data for {first}"
                           + (f"; {len(rest)} more op kind{'s' * (len(rest) > 1)} miss too: {also}" if rest else ""))
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
        # identical work priced once (passes/node_costs.py): each distinct price, then per node
        distinct, per_node, weights = shape.price_distinct(graph, cctx, self.hardware)
        priced = list(per_node(distinct))
        ops = None if self.pricer is None else _op_times(self.pricer, graph, order, cctx, shape.keys(graph, ctx.model))
        costs, sols, times, used = zip(*priced) if priced else ((), (), (), ())  # per node in order
        if ops is not None:
            times = [ops[n].time for n in order]
        ends, path = shape.finder.run_one(times)
        on_path = set(path)
        # float sums in node order, one addition after another (algebra.fsum_in_order: Python 3.12's
        # sum() of floats compensates, which would change the last bits)
        resources = dict(zip(("compute", "memory", "comm"),
                             map(fsum_in_order, zip(*used) if used else ((), (), ()))))
        by_stage, by_layer, by_op = ({k: fsum_in_order(values(times)) for k, values in table}
                                     for table in shape.breakdown_getters)
        bound_by: Counter = Counter()  # nodes bound by each resource: each distinct price × its nodes
        for p, k in zip(distinct, weights):
            bound_by[p[1].bound] += k
        critical = ends[shape.position[path[-1]]] if path else 0.0
        busiest = max(resources.values())
        slots = SlotTable(shape.position, sols, times, ends, on_path, ops)
        mode = "sol" if self.pricer is None else self.pricer.mode.mode
        cov = None if ops is None else coverage(ops, path, self.pricer.identity(), mode)
        report = ScheduleReport(
            self.hardware.name, critical, busiest, max(critical, busiest), tuple(path), resources,
            dict(sorted(by_stage.items())), by_layer, dict(sorted(by_op.items())), dict(sorted(bound_by.items())),
            (*expert_assumptions(ctx.plan.routing),
             "sparse attention reads each selected entry once per query (no cross-query "
             f"reuse); index scoring streams index K once per tile of {QUERY_TILE} queries (a kernel assumption)",
             "per-GPU shares from the sharding table (model/sharding.py): SGLang's DP-attention layout")
            + (() if ops is None else (OP_ASSUMPTION,)), mode, cov)
        costs = MappingProxyType(dict(zip(order, costs)))  # read-only: annotate keeps it
        out = graph.annotate("cost", costs).annotate("schedule", slots)  # nothing reuses a scheduled shape
        return PassResult(self.name, out, len(order), report)


#: stated in OP / hybrid reports: what the node times are and what stays SOL
OP_ASSUMPTION = ("OP/hybrid: node times from measured kernel tables by tier (coverage below); the resource "
                 "sums and bounds stay SOL, and closed forms (v41graph formula) are SOL only")


def exact_path_time(graph: Graph, path: tuple[str, ...]) -> Fraction:
    """Σ of the exact SOL times along a path (the schedule stores them per node)."""
    slots = graph.annotation("schedule")
    return sum((Fraction(slots[n].sol.time) for n in path), Fraction(0))
