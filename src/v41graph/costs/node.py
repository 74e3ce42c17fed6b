"""Node level: a node's per-GPU cost = its op rule (:mod:`.rules`) + its activation traffic, each
divided by how many GPUs share the op (the sharding table, :mod:`v41graph.model.sharding`); and the
signature under which equal work is costed once."""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction

from ..algebra import Value
from ..ir.graph import Graph, Node
from ..ir.shapes import SHAPES_KEPT
from ..reuse import Numbering, cached
from ..structural import Keyed, memo
from ..ir.ledger import Row
from ..ir.rows import is_table
from ..ir.ops import BlockMax, Compressor, Dequantize, Fused, IndexScore, Op
from ..model.sharding import Mapping, rule_for_id, rule_for_node
from ..model.user_sharding import generation
from .counts import CostContext, entry_bytes, tokens, tokens_of, units
from .registry import prices_as_default
from .rules import op_cost
from .traffic import module_io
from .value import Cost


#: per graph shape and node, its activation tensors (edges alone decide them, never rows)
@memo("activation tensors", SHAPES_KEPT << 11)
def _module_io(skeleton: Keyed, node_id: str) -> tuple[tuple, tuple]:
    """The tensors a node reads and writes (:func:`~.traffic.module_io`), each as (the producer's id
    where it is a per-unit op — its rows decide how many units — else None, bytes per unit)."""
    graph = skeleton.value

    def terms(tensors) -> tuple:
        return tuple((x.src if isinstance(graph.nodes[x.src].op, PER_UNIT) else None, entry_bytes(x.format, x.dims))
                     for x in tensors)
    reads, writes = module_io(graph, [node_id])
    return terms(reads), terms(writes)


def activation_cost(graph: Graph, node: Node, t: Value) -> Cost:
    """Bytes of the activations a node reads and writes (:func:`v41graph.costs.traffic.module_io`):
    per tensor, its bytes per unit times its units (:func:`v41graph.costs.counts.units`: ``t``, or
    a per-unit producer's own count)."""
    if node.op.storage:
        return Cost()
    reads, writes = _module_io(graph.skeleton, node.id)
    nodes = graph.nodes
    return Cost.activations(_size(reads, nodes, t), _size(writes, nodes, t))


def _size(tensors: tuple, nodes, t: Value) -> Value:
    """Σ units × bytes per unit over ``tensors`` (:func:`_io_terms`), added in order from 0 as
    :func:`~v41graph.algebra.ssum` adds (a plain loop: this runs for every node priced)."""
    total: Value = 0
    for src, b in tensors:
        total = total + (t if src is None else units(nodes[src], t)) * b
    return total


def share(node_id: str, ctx: CostContext, op: Op | None = None) -> int:
    """How many GPUs split one node's work over its tokens: its sharding-table row (for op ``op``)
    under the plan's mapping."""
    plan = ctx.plan
    if op is not None and op.sharding is not None:  # the op carries its own row
        return Mapping(plan.tp, plan.dp, plan.ep).work_divisor(op.sharding)
    return _share(node_id, None if op is None else type(op).__name__, plan.tp, plan.dp, plan.ep, generation())


@cached(65536)  # asked for by every node of every compile; ids and degrees are few
def _share(node_id: str, kind: str | None, tp: int, dp: int, ep: int, _generation: int) -> int:
    # ``_generation``: the user rows change the answer for ids the built-in table does not name
    return Mapping(tp, dp, ep).work_divisor(rule_for_id(node_id, kind))


def _rules(node: Node) -> tuple:
    """The sharding rows of a node's members: part of what its cost depends on (rows, not names:
    a user row re-registered under one name with another split is another cost)."""
    if isinstance(node.op, Fused):
        return tuple(rule_for_node(m, c) for m, c in zip(node.op.members, node.op.covers))
    return (rule_for_node(node.id, node.op),)


def _per_gpu(cost: Cost, share: int) -> Cost:
    return cost if share == 1 else cost.scaled(Fraction(1, share))


#: ops whose output is not one tensor per counted token (:func:`v41graph.costs.counts.units`): a
#: reader's activation bytes depend on such a producer's own payload and rows
PER_UNIT = (Dequantize, IndexScore, BlockMax, Compressor)


def rows_key(rows: tuple[Row, ...], rows_keys: dict[int, tuple] | None = None) -> tuple:
    """What the cost rules read of ``rows``: token positions, requests and copies (not the layer)."""
    key = None if rows_keys is None else rows_keys.get(id(rows))
    if key is None:  # nodes of one layer share one rows tuple: build its key once (``rows_keys``)
        if is_table(rows):  # the same fields, as the columns' bytes
            key = rows.cols.key()
        else:
            key = tuple((r.request, r.q_start, r.q_end, r.swa_start, r.kv_start, r.kv_end, r.cached, r.copies)
                        for r in rows)
        if rows_keys is not None:
            rows_keys[id(rows)] = key
    return key


def static_signature(graph: Graph, node: Node, model=None) -> tuple[tuple, tuple[str, ...]]:
    """The part of :func:`cost_signature` fixed by the graph's shape, and the nodes whose rows
    complete it (the node's own, then each producer of a per-unit input, see ``PER_UNIT``).

    Not the node's id or layer, so the same op over the same tokens in another layer shares one
    cost; a fused module is keyed by what it covers and the sharing rules of its members, not by
    their (per-layer) ids; storage costs nothing (its readers and writers pay).
    """
    op = node.op
    if op.storage and prices_as_default(type(op)):
        return ("storage", _rules(node)), ()
    key = ((Fused, op.rule, tuple(_payload(c) for c in op.covers), op.reread, op.writes, op.counts)
           if isinstance(op, Fused) else _payload(op))
    # an "entry" count depends on the layer's compress ratio, which the op does not carry: the
    # ratio itself where the ``model`` is given, else the layer
    entry = node.count == "entry" or (isinstance(op, Fused) and "entry" in op.counts)
    if entry and model is not None and node.layer is not None and node.layer < len(model.layers):
        entry = ("ratio", model.layers[node.layer].compress_ratio)
    elif entry:
        entry = ("layer", node.layer)
    producers = sorted({e.src for e in graph.inputs(node.id) if isinstance(graph.nodes[e.src].op, PER_UNIT)})
    ins = tuple(sorted((e.role, e.dims, e.format, producers.index(e.src) if e.src in producers else -1)
                       for e in graph.inputs(node.id)))
    outs = tuple(sorted((e.role, e.dims, e.format) for e in graph.outputs(node.id)))
    units = tuple(graph.nodes[p].op for p in producers)
    return (key, node.count, entry or None, ins, outs, units, _rules(node)), (node.id, *producers)


#: every static signature seen in this session, numbered (a number hashes in nanoseconds, a
#: signature's op payloads in microseconds): one numbering for the scheduling pass and OP mode
_SIGNATURES = Numbering()


def signature_number(signature: tuple) -> int:
    """``signature``'s number in the current session (the first part of :func:`static_signature`)."""
    return _SIGNATURES.number(signature)


def _payload(op: Op):
    """``op`` as its cost sees it: the op, or with its layer references reduced to whether there is one;
    a storage a module covers, costed by the default rule, as its kind (nothing, whatever its owner layer)."""
    if op.storage and prices_as_default(type(op)):
        return ("storage", type(op))
    if not op.references:
        return op
    return (type(op), *((getattr(op, f.name) is not None) if f.name in op.references else getattr(op, f.name)
                        for f in fields(op)))


def cost_signature(graph: Graph, node: Node, rows_keys: dict[int, tuple] | None = None) -> tuple:
    """Everything :func:`node_cost` reads: two nodes with one signature have one cost.

    (:func:`static_signature` and the rows of the node and of its per-unit producers.)
    """
    static, rows_of = static_signature(graph, node)
    return static, tuple(rows_key(graph.nodes[n].rows, rows_keys) for n in rows_of)


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
    return [Covered(m, c, t, cost) for m, c, t, cost in _members(node, ctx)]


def _members(node: Node, ctx: CostContext, shares: list[int] | None = None, own: Value | None = None):
    """(member id, op, token count, per-GPU work) of each op ``node`` covers (``shares``: each
    member's share, where the caller has them; ``own``: the node's own count, where counted)."""
    if isinstance(node.op, Fused):
        op = node.op
        counts = op.counts or (node.count,) * len(op.covers)
        seen: dict[str, Value] = {} if own is None else {node.count: own}  # members mostly share one count
        if shares is None:
            shares = [share(m, ctx, c) for m, c in zip(op.members, op.covers)]
        for c, m, k, divisor in zip(op.covers, op.members, counts, shares):
            t = seen.get(k)
            if t is None:
                t = seen[k] = tokens_of(node.rows, k, ctx, node.layer)
            yield m, c, t, _per_gpu(op_cost(c, node, ctx, t), divisor)
        return
    t = tokens(node, ctx) if own is None else own
    yield node.id, node.op, t, _per_gpu(op_cost(node.op, node, ctx, t), share(node.id, ctx, node.op))


def node_cost(graph: Graph, node_id: str, ctx: CostContext) -> Cost:
    """The per-GPU cost of one node: its op rule plus its activation traffic."""
    return cost_of_node(graph, graph.node(node_id), ctx)


def cost_of_node(graph: Graph, node: Node, ctx: CostContext) -> Cost:
    """:func:`node_cost` of ``node`` itself (a node of ``graph``, already looked up)."""
    t = tokens(node, ctx)
    op = node.op
    if isinstance(op, Fused):
        # each covered op keeps its own per-GPU share and token count (the head's collapse and
        # norm fused into the last layer's mHC still count logits), so fusing never changes the
        # work; the module's traffic is split only as far as its least-split member is
        shares = [share(m, ctx, c) for m, c in zip(op.members, op.covers)]
        traffic = _per_gpu(activation_cost(graph, node, t), min(shares))
        return Cost.sum([part[3] for part in _members(node, ctx, shares, t)] + [traffic])
    return _per_gpu(op_cost(op, node, ctx, t) + activation_cost(graph, node, t), share(node.id, ctx, op))
