"""Rewriting a graph from outside the package: insert a node, replace a set of nodes by one.

Each function returns a new :class:`~v41graph.ir.graph.Graph` (the input is never mutated) and
checks what it can say before :func:`~v41graph.ir.verify.verify` would: that the nodes named
exist, that a replaced set runs over one token set, and that it is convex (no path leaves it and
comes back, which would make the new node part of a cycle). Side-table entries of removed nodes
are dropped; a new node has none until the pass that writes the table runs again. Fusing into a
:class:`~v41graph.ir.ops.Fused` module that keeps what it covers is
:func:`v41graph.passes.registry.fuse_nodes` (it records the module's escaping writes, a cost fact).

Before ⇒ after (``replace_nodes``)::

    L3.kv_norm → L3.kv_rope → L3.kv_quant → L3.swa_write
    ⇒ L3.kv_norm → L3.kv_quant (one new op) → L3.swa_write

>>> from v41graph import load_model, lower, Plan, Request
>>> from v41graph.extend import verify
>>> from v41graph.ir.ops import Norm
>>> g = lower(load_model(), Plan([Request.prefill(64)]))
>>> g2 = replace_nodes(g, ["L3.kv_rope", "L3.kv_quant"], Norm(512))
>>> g2.node("L3.kv_quant").op, [e.src for e in g2.inputs("L3.kv_quant")], "L3.kv_rope" in g2.nodes
(Norm(dim=512), ['L3.kv_norm'], False)
>>> verify(g2) is g2
True
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Iterable, Sequence

from ..errors import GraphError, expect
from .graph import Edge, Graph, Node
from .ops import Op

__all__ = ["check_convex", "insert", "insert_after", "replace_nodes"]


def _graph_and_node(graph: Graph, node: Node, what: str) -> None:
    expect(graph, Graph, f"{what} graph", GraphError)
    expect(node, Node, f"{what} node", GraphError, " (v41graph.extend.Node(id, op, layer, stage, path, rows))")


def _known(graph: Graph, ids: Iterable[str], what: str) -> None:
    missing = sorted(i for i in ids if i not in graph.nodes)
    if missing:
        raise GraphError(f"{what}: no node {missing[0]!r} in the graph")


def _rebuild(graph: Graph, nodes: Sequence[Node], edges: Iterable[Edge]) -> Graph:
    new = graph.with_nodes(nodes, edges)
    ids = set(new.nodes)
    tables = {k: {n: v for n, v in t.items() if n in ids} for k, t in graph.annotations.items()}
    return replace(new, annotations=MappingProxyType({k: MappingProxyType(t) for k, t in tables.items()}))


def insert(graph: Graph, node: Node, edges: Iterable[Edge] = ()) -> Graph:
    """``graph`` with ``node`` added and ``edges`` (each must touch ``node``; the other end must exist).

    >>> from v41graph.ir.graph import GraphBuilder
    >>> from v41graph.ir.ops import Norm
    >>> b = GraphBuilder("toy"); _ = b.add(Node("a", Norm(8), None, "backbone", None, sink=True))
    >>> g = insert(b.build(), Node("b", Norm(8), None, "backbone", None, sink=True), [Edge("a", "b", "x", 8, "bf16")])
    >>> [(e.src, e.dst) for e in g.edges]
    [('a', 'b')]
    """
    _graph_and_node(graph, node, "insert")
    if node.id in graph.nodes:
        raise GraphError(f"insert: node id {node.id!r} is already in the graph")
    edges = tuple(edges)
    for e in edges:
        if node.id not in (e.src, e.dst):
            raise GraphError(f"insert: edge {e.src!r} -> {e.dst!r} does not touch the new node {node.id!r}")
        _known(graph, [x for x in (e.src, e.dst) if x != node.id], f"insert {node.id!r}")
    return _rebuild(graph, [*graph.nodes.values(), node], (*graph.edges, *edges))


def insert_after(graph: Graph, producer: str, node: Node, *, role: str = "x") -> Graph:
    """``node`` placed on every output of ``producer``: its readers read ``node`` instead, and
    ``node`` reads ``producer`` (one ``role`` edge of the producer's widest output).

    >>> from v41graph.ir.graph import GraphBuilder
    >>> from v41graph.ir.ops import GraphInput, Norm
    >>> b = GraphBuilder("toy"); rows = b.rows(4)
    >>> _ = b.op("L0.input", GraphInput(8), rows)
    >>> _ = b.op("L0.attn_norm", Norm(8), rows, reads=[("L0.input", "x", 8, "bf16")], sink=True)
    >>> g = insert_after(b.build(), "L0.input", Node("L0.pre", Norm(8), 0, "backbone", None, rows=rows))
    >>> [(e.src, e.dst) for e in g.edges]
    [('L0.pre', 'L0.attn_norm'), ('L0.input', 'L0.pre')]
    """
    _graph_and_node(graph, node, "insert_after")
    _known(graph, [producer], f"insert_after {node.id!r}")
    outs = graph.outputs(producer)
    if not outs:
        raise GraphError(f"insert_after: {producer!r} has no outputs to put {node.id!r} on")
    if node.id in graph.nodes:
        raise GraphError(f"insert_after: node id {node.id!r} is already in the graph")
    widest = max(outs, key=lambda e: (e.dims, e.format))
    moved = [Edge(node.id, e.dst, e.role, e.dims, e.format) if e.src == producer else e for e in graph.edges]
    return _rebuild(graph, [*graph.nodes.values(), node],
                    (*moved, Edge(producer, node.id, role, widest.dims, widest.format)))


def check_convex(graph: Graph, ids: Iterable[str]) -> None:
    """Raise if a path leaves ``ids`` and comes back (merging them would close a cycle).

    >>> from v41graph import load_model, lower, Plan, Request
    >>> g = lower(load_model(), Plan([Request.prefill(64)]))
    >>> check_convex(g, ["L3.kv_rope", "L3.kv_quant"]) is None
    True
    >>> check_convex(g, ["L3.kv_norm", "L3.kv_quant"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    v41graph.errors.GraphError: rewrite: ['L3.kv_norm', 'L3.kv_quant'] is not convex: ...
    """
    expect(graph, Graph, "rewrite graph", GraphError)
    group = set(ids)
    _known(graph, group, "rewrite")
    stack = [(e.dst, e.src) for m in sorted(group) for e in graph.outputs(m) if e.dst not in group]
    seen: set[str] = set()
    while stack:
        n, came_from = stack.pop()
        if n in group:
            raise GraphError(f"rewrite: {sorted(group)} is not convex: a path leaves it and re-enters at {n!r} "
                             f"(through {came_from!r}); merging it would make a cycle")
        if n not in seen:
            seen.add(n)
            stack.extend((e.dst, n) for e in graph.outputs(n))


def replace_nodes(graph: Graph, ids: Sequence[str], op: Op, *, node_id: str | None = None,
                  count: str | None = None) -> Graph:
    """``ids`` replaced by one node with payload ``op``, keeping the group's external edges.

    The new node takes the id ``node_id`` (default: the last of ``ids``, so per-node tables such as
    the sharding table keep answering for it), the rows, layer, stage and path of the first member
    and its ``count`` unless one is given. All members must run over one token set.

    >>> from v41graph import load_model, lower, Plan, Request
    >>> from v41graph.ir.ops import Norm
    >>> g = lower(load_model(), Plan([Request.prefill(64)]))
    >>> g2 = replace_nodes(g, ["L3.kv_rope", "L3.kv_quant"], Norm(512), node_id="L3.kv_mine")
    >>> [e.dst for e in g2.outputs("L3.kv_norm")], len(g2.nodes) == len(g.nodes) - 1
    (['L3.kv_mine'], True)
    """
    expect(graph, Graph, "replace_nodes graph", GraphError)
    expect(op, Op, "replace_nodes op", GraphError, " (a v41graph.ir.ops.Op)")
    ids = tuple(ids)
    if not ids:
        raise GraphError("replace_nodes: no nodes given")
    check_convex(graph, ids)
    members = [graph.nodes[i] for i in ids]
    spans = {tuple((r.request, r.q_start, r.q_end) for r in m.rows) for m in members}
    if len(spans) != 1:
        raise GraphError(f"replace_nodes: {list(ids)} run over different token sets; one node cannot count both")
    new_id = node_id or ids[-1]
    if new_id in graph.nodes and new_id not in ids:
        raise GraphError(f"replace_nodes: node id {new_id!r} is already in the graph")
    head = members[0]
    new = replace(head, id=new_id, op=op, count=count or head.count, sink=any(m.sink for m in members))
    group, edges, keys = set(ids), [], set()
    for e in graph.edges:
        src_in, dst_in = e.src in group, e.dst in group
        if src_in and dst_in:
            continue  # internal to the new node
        e2 = Edge(new_id if src_in else e.src, new_id if dst_in else e.dst, e.role, e.dims, e.format)
        if (e2.src, e2.dst, e2.role) not in keys:  # two members reading one tensor: one edge
            keys.add((e2.src, e2.dst, e2.role))
            edges.append(e2)
    first = min(list(graph.nodes).index(i) for i in ids)
    nodes = [n for n in graph.nodes.values() if n.id not in group]
    nodes.insert(sum(1 for n in list(graph.nodes)[:first] if n not in group), new)
    return _rebuild(graph, nodes, edges)
