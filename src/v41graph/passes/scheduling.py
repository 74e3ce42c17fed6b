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
from ..costs.counts import QUERY_TILE, CostContext, tokens_of
from ..costs.hardware import Hardware
from ..costs.node import node_cost, rows_key, static_signature
from ..costs.rules import EXPERT_ASSUMPTION, reads_tokens_only
from ..costs.measured.coverage import coverage
from ..costs.measured.tiers import Resolution
from ..costs.value import Cost, SolTime, sol_time
from ..errors import CostError
from ..ir.graph import Graph
from ..ir.shapes import Memo
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


class PathFinder:
    """Critical paths with costs on nodes, for one or many sets of node times at once.

    The longest path through the DAG in deterministic topological order; ties go to the
    lexicographically first input, and the path ends at the largest (finish, id). The schedule
    runs it at one binding (:meth:`run_one`, plain floats), closed forms at many points
    (``backends.query``'s valid range, :meth:`run`, numpy) — the same rule both ways.
    """

    def __init__(self, graph: Graph):
        self.order = graph.topological_order()
        index = {n: i for i, n in enumerate(self.order)}
        self.inputs = [tuple(index[s] for s in sorted({e.src for e in graph.inputs(n)})) for n in self.order]
        self.preds = [np.array(p, dtype=np.intp) for p in self.inputs]
        self.rank = np.argsort(np.argsort(np.array(self.order, dtype=object)))  # each id's rank by name
        self.by_name = sorted(range(len(self.order)), key=self.order.__getitem__)

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

    def run_one(self, times: list[float]) -> tuple[list[float], tuple[str, ...]]:
        """:meth:`run` at one point, in plain Python floats (the same additions, so the same bits)."""
        finish = [0.0] * len(times)
        parent = [-1] * len(times)
        for i, preds in enumerate(self.inputs):
            if not preds:
                finish[i] = times[i]
                continue
            best_p = preds[0]
            best = finish[best_p]
            for p in preds[1:]:  # the first of the latest inputs, in id order
                if finish[p] > best:
                    best, best_p = finish[p], p
            finish[i] = best + times[i]
            parent[i] = best_p if best > 0 else -1
        if not finish:
            return finish, ()
        top = max(finish)
        end = next(i for i in reversed(self.by_name) if finish[i] == top)  # the largest id among the latest
        path = []
        while end >= 0:
            path.append(self.order[end])
            end = parent[end]
        return finish, tuple(reversed(path))


def _sum_into(table: dict[str, float], key: str, value: float) -> None:
    table[key] = table.get(key, 0.0) + value


def _op_times(pricer: OpPricer, graph: Graph, order, cctx: CostContext, keys: dict[str, tuple]
              ) -> dict[str, Resolution]:
    """Each node's measured resolution (identical work priced once); op mode stops at the first miss."""
    memo: dict[tuple, Resolution] = {}
    out = {}
    for n in order:
        key = keys[n], graph.nodes[n].op  # a measured module is priced by its exact members (layer, ratio)
        if key not in memo:
            memo[key] = pricer.price(graph, n, cctx)
        r = out[n] = memo[key] if memo[key].node == n else Resolution(n, memo[key].kind, memo[key].parts)
        if pricer.mode.strict:
            pricer.check(r)
    return out


@dataclass(frozen=True)
class _Static:
    """What scheduling needs of a graph's shape: order, paths, the fixed part of each node's signature."""

    finder: PathFinder
    signatures: tuple[int, ...]  # per node in order: its static_signature, numbered (equal ones alike)
    rows_of: tuple[tuple[str, ...], ...]  # per node: whose rows complete its signature
    groups: tuple[tuple[str, str, str], ...]  # per node: (stage, layer, op kind) for the breakdowns
    #: per node: (process-wide signature number, the counts it reads) when its cost depends on its
    #: rows only through those counts (``costs.rules.tokens_only``), else None
    per_tokens: tuple[tuple[int, tuple[str, ...]] | None, ...]


#: every static signature seen in this process, numbered (the keys of _BY_TOKENS)
_SIGNATURES: dict[tuple, int] = {}


def _per_tokens(node, sig: tuple, rows_of: tuple[str, ...]) -> tuple[int, tuple[str, ...]] | None:
    if node.op.storage or len(rows_of) > 1 or not reads_tokens_only(node.op):
        return None  # a per-unit producer's rows, or a rule that reads rows, decide the cost
    counts = set(getattr(node.op, "counts", ()) or ()) | {node.count}  # node_cost's own count and its members'
    return _SIGNATURES.setdefault(sig, len(_SIGNATURES)), tuple(sorted(counts))


def _static(graph: Graph) -> _Static:
    finder = PathFinder(graph)
    sigs = [static_signature(graph, graph.nodes[n]) for n in finder.order]
    numbers: dict[tuple, int] = {}  # a number per distinct signature: cheap to hash on every compile
    groups = tuple((graph.nodes[n].stage, "-" if graph.nodes[n].layer is None else str(graph.nodes[n].layer),
                    graph.nodes[n].op.kind) for n in finder.order)
    per_tokens = tuple(_per_tokens(graph.nodes[n], k, r) for n, (k, r) in zip(finder.order, sigs))
    return _Static(finder, tuple(numbers.setdefault(k, len(numbers)) for k, _ in sigs), tuple(r for _, r in sigs),
                   groups, per_tokens)


#: costs of token-only nodes by (signature, counts, plan-wide facts, hardware), across compiles
_BY_TOKENS = Memo("costs by token count", 1 << 16)


class _RowsNumbers:
    """A number per distinct rows content (what :func:`rows_key` reads), each rows tuple keyed once."""

    def __init__(self):
        self.by_id: dict[int, int] = {}
        self.by_key: dict[tuple, int] = {}
        self.alive: list = []  # the rows tuples numbered, so their ids stay unique

    def __call__(self, rows) -> int:
        number = self.by_id.get(id(rows))
        if number is None:
            key = rows_key(rows)
            number = self.by_id[id(rows)] = self.by_key.setdefault(key, len(self.by_key))
            self.alive.append(rows)
        return number


_STATIC = Memo("schedule statics", 64)


@dataclass(frozen=True)
class Scheduling:
    hardware: Hardware
    name: str = "schedule"
    pricer: OpPricer | None = None  # None: SOL times

    def __call__(self, graph: Graph, ctx) -> "PassResult":
        cctx = CostContext(ctx.model, ctx.plan, self.hardware.gpus_per_node)
        static = None if graph.shape is None else _STATIC.get(graph.shape)
        if static is None:
            static = _static(graph)
            if graph.shape is not None:
                _STATIC.put(graph.shape, static)
        order = static.finder.order
        memo: dict[tuple, tuple[Cost, SolTime, float]] = {}
        number = _RowsNumbers()
        nodes = graph.nodes
        costs: dict[str, Cost] = {}
        sols: dict[str, SolTime] = {}
        keys: dict[str, tuple] = {}
        seconds = []
        plan = ctx.plan  # what a token-only rule reads besides t (costs/rules.py, tokens_only)
        facts = (plan.tp, plan.dp, plan.ep, plan.engram_residency, cctx.gpus_per_node, self.hardware)
        for n, sig, rows_of, unit in zip(order, static.signatures, static.rows_of, static.per_tokens):
            # identical work is costed once: in this graph, and for token-only nodes across compiles
            key = keys[n] = (sig, number(nodes[n].rows)) if len(rows_of) == 1 else (
                sig, *[number(nodes[m].rows) for m in rows_of])
            done = memo.get(key)
            if done is None:
                node = nodes[n]
                counted = None if unit is None else (
                    unit[0], tuple(tokens_of(node.rows, k, cctx, node.layer) for k in unit[1]), facts)
                done = None if counted is None or is_symbolic(*counted[1]) else _BY_TOKENS.get(counted)
                if done is None:
                    cost = node_cost(graph, n, cctx)
                    sol = sol_time(cost, self.hardware)
                    if is_symbolic(sol.time):  # the path is chosen numerically (docs/architecture.md, decision 6)
                        raise CostError(f"schedule: node {n!r} has a symbolic SOL time ({sol.time}); bind the "
                                        "plan's lengths to numbers first (v41graph.backends.query serves closed forms)")
                    done = (cost, sol, float(sol.time))
                    if counted is not None:
                        _BY_TOKENS.put(counted, done)
                memo[key] = done
            costs[n], sols[n] = done[0], done[1]
            seconds.append(done[2])
        ops = None if self.pricer is None else _op_times(self.pricer, graph, order, cctx, keys)
        times = seconds if ops is None else [ops[n].time for n in order]
        ends, path = static.finder.run_one(times)
        on_path = set(path)
        resources = {"compute": 0.0, "memory": 0.0, "comm": 0.0}
        by_stage: dict[str, float] = {}
        by_layer: dict[str, float] = {}
        by_op: dict[str, float] = {}
        bound_by: dict[str, int] = {}
        floats: dict[int, tuple[float, float, float]] = {}  # per SolTime: its three resources as floats
        for n, t, (stage, layer, kind) in zip(order, times, static.groups):
            sol = sols[n]
            f = floats.get(id(sol))
            if f is None:
                f = floats[id(sol)] = (float(sol.compute), float(sol.memory), float(sol.comm))
            resources["compute"] += f[0]
            resources["memory"] += f[1]
            resources["comm"] += f[2]
            by_stage[stage] = by_stage.get(stage, 0.0) + t
            by_layer[layer] = by_layer.get(layer, 0.0) + t
            by_op[kind] = by_op.get(kind, 0.0) + t
            bound_by[sol.bound] = bound_by.get(sol.bound, 0) + 1
        critical = ends[order.index(path[-1])] if path else 0.0
        busiest = max(resources.values())
        slots = {n: _slot(sols[n], finish - t, finish, n in on_path, None if ops is None else ops[n])
                 for n, t, finish in zip(order, times, ends)}
        mode = "sol" if self.pricer is None else self.pricer.mode.mode
        cov = None if ops is None else coverage(ops, path, self.pricer.identity(), mode)
        report = ScheduleReport(
            self.hardware.name, critical, busiest, max(critical, busiest), tuple(path), resources,
            dict(sorted(by_stage.items())), by_layer, dict(sorted(by_op.items())), dict(sorted(bound_by.items())),
            (EXPERT_ASSUMPTION, "sparse attention reads each selected entry once per query (no cross-query "
             f"reuse); index scoring streams index K once per tile of {QUERY_TILE} queries (a kernel assumption)",
             "per-GPU shares from the sharding table (model/sharding.py): SGLang's DP-attention layout")
            + (() if ops is None else (OP_ASSUMPTION,)), mode, cov)
        out = graph.annotate("cost", costs).annotate("schedule", slots)  # nothing reuses a scheduled shape
        return PassResult(self.name, out, len(order), report)


#: stated in OP / hybrid reports: what the node times are and what stays SOL
OP_ASSUMPTION = ("OP/hybrid: node times from measured kernel tables by tier (coverage below); the resource "
                 "sums and bounds stay SOL, and closed forms (v41graph formula) are SOL only")


def exact_path_time(graph: Graph, path: tuple[str, ...]) -> Fraction:
    """Σ of the exact SOL times along a path (the schedule stores them per node)."""
    slots = graph.annotation("schedule")
    return sum((Fraction(slots[n].sol.time) for n in path), Fraction(0))
