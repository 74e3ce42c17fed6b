"""Node level: a node's per-GPU cost = its op rule (:mod:`.rules`) + its activation traffic, each
divided by how many GPUs share the op (the sharding table, :mod:`v41graph.model.sharding`); and the
signature under which equal work is costed once."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..algebra import Value, ssum
from ..ir.graph import Graph, Node
from ..ir.ops import Fused, Op
from ..model.formats import bytes_per_value
from ..model.sharding import mapping_of, rule_for_node
from .counts import CostContext, tokens, tokens_of, units
from .rules import op_cost
from .traffic import module_io
from .value import Cost


def _per(graph: Graph, src: str, t: Value) -> Value:
    """How many times a tensor from ``src`` holds its dims (:func:`v41graph.costs.counts.units`)."""
    return units(graph.nodes[src], t)


def activation_cost(graph: Graph, node: Node, t: Value) -> Cost:
    """Bytes of the activations a node reads and writes (:func:`v41graph.costs.traffic.module_io`)."""
    if node.op.storage:
        return Cost()
    reads, writes = module_io(graph, [node.id])
    size = lambda ts: ssum(_per(graph, x.src, t) * x.dims * bytes_per_value(x.format) for x in ts)  # noqa: E731
    return Cost.of(bytes={"act_in": size(reads), "act_out": size(writes)})


def share(node_id: str, ctx: CostContext) -> int:
    """How many GPUs split one node's work over its tokens: its sharding-table row under the plan's mapping."""
    return mapping_of(ctx.plan).work_divisor(rule_for_node(node_id))


def _rules(node: Node) -> tuple[str, ...]:
    members = node.op.members if isinstance(node.op, Fused) else (node.id,)
    return tuple(rule_for_node(m).name for m in members)


def _per_gpu(cost: Cost, share: int) -> Cost:
    return cost if share == 1 else cost.scaled(Fraction(1, share))


def cost_signature(graph: Graph, node: Node, rows_keys: dict[int, tuple] | None = None) -> tuple:
    """Everything :func:`node_cost` reads: two nodes with one signature have one cost.

    (The op, what it counts, its rows' token positions and requests, and its edges' roles,
    dims and formats — not its id or layer, so the same op over the same tokens in another
    layer shares the result.)
    """
    rows = None if rows_keys is None else rows_keys.get(id(node.rows))
    if rows is None:  # nodes of one layer share one rows tuple: build its key once (``rows_keys``)
        rows = tuple((r.request, r.q_start, r.q_end, r.swa_start, r.kv_start, r.kv_end, r.cached, r.copies)
                     for r in node.rows)
        if rows_keys is not None:
            rows_keys[id(node.rows)] = rows
    ins = tuple(sorted((e.role, e.dims, e.format) for e in graph.inputs(node.id)))
    outs = tuple(sorted((e.role, e.dims, e.format) for e in graph.outputs(node.id)))
    # an "entry" count depends on the layer's compress ratio, which the op does not carry
    return node.op, node.count, node.layer if node.count == "entry" else None, rows, ins, outs, _rules(node)


@dataclass(frozen=True)
class Covered:
    """One op a node covers: its member id, payload, token count and per-GPU work (no activations)."""

    member: str
    op: Op
    tokens: Value
    cost: Cost


def member_costs(node: Node, ctx: CostContext) -> list[Covered]:
    """Each op a node covers (itself, or a fused module's members), with its own per-GPU share and
    token count (the head's collapse and norm fused into the last layer's mHC still count logits)."""
    if isinstance(node.op, Fused):
        op = node.op
        counts = op.counts or (node.count,) * len(op.covers)
        return [Covered(m, c, t, _per_gpu(op_cost(c, node, ctx, t), share(m, ctx)))
                for c, m, k in zip(op.covers, op.members, counts) for t in [tokens_of(node.rows, k, ctx, node.layer)]]
    t = tokens(node, ctx)
    return [Covered(node.id, node.op, t, _per_gpu(op_cost(node.op, node, ctx, t), share(node.id, ctx)))]


def node_cost(graph: Graph, node_id: str, ctx: CostContext) -> Cost:
    """The per-GPU cost of one node: its op rule plus its activation traffic."""
    node = graph.node(node_id)
    t = tokens(node, ctx)
    if isinstance(node.op, Fused):
        # each covered op keeps its own per-GPU share and token count (the head's collapse and
        # norm fused into the last layer's mHC still count logits), so fusing never changes the
        # work; the module's traffic is split only as far as its least-split member is
        work = sum((c.cost for c in member_costs(node, ctx)), Cost())
        return work + _per_gpu(activation_cost(graph, node, t), min(share(m, ctx) for m in node.op.members))
    return _per_gpu(op_cost(node.op, node, ctx, t) + activation_cost(graph, node, t), share(node.id, ctx))
