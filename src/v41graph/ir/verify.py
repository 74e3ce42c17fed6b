"""The one verifier: a graph's invariants, checked between passes (docs/architecture.md, decision 5).

Acyclic; every edge endpoint exists; every consumer has the inputs its op needs; attention reads
the storage of its KV owner (directly, or through the unpack that reads it) and the Top-K of its
producer; Reuse and SWA-only layers carry no compressor or indexer; no compute node dangles;
producer and consumer agree on the token positions they count (``ir/flow.py``); annotations
name existing nodes. Errors name the node and its neighbours.

Cheap on a graph whose skeleton it has passed before: everything but the token flow reads only
the skeleton — the edges, the node table's keys in order and each node's id, op, layer, stage, path, count and
sink — and so does the token flow's choice of which edges to compare (one per pair of rows
classes). That half is memoised (``structural.memo``) under exactly what it reads,
so a compile of a plan of a known shape pays only the positions over its rows (docs/architecture.md,
"Shapes"). Objects are keyed by identity (an op's hash walks its fields; a compile of a known
shape hands on the same op objects and edge tuple), and the memo entry holds them, so an id in a
key always names the object it was taken from. A skeleton never seen, one with a different op
object or edge tuple, and every graph while caching is off (``V41GRAPH_NO_CACHE``) is checked
from nothing; under ``V41GRAPH_SHADOW`` every hit is checked from nothing as well.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, NamedTuple

from ..errors import GraphError
from ..structural import Keyed, memo
from .flow import check_flow, flow_checks, rows_classes
from .graph import Graph, Node, _networkx
from .ops import (BlockMax, CandidateSelect, Compressor, Dequantize, GlobalKVStore, IndexKStore, IndexScore,
                  SparseAttention, TopK, covers)


def _where(g: Graph, node_id: str) -> str:
    ins = sorted(f"{e.src}:{e.role}" for e in g.inputs(node_id))
    outs = sorted(f"{e.dst}:{e.role}" for e in g.outputs(node_id))
    n = g.nodes.get(node_id)
    what = f"{n.op.kind}, layer {n.layer}, path {n.path}" if n else "missing"
    return f"node {node_id!r} ({what}); inputs [{', '.join(ins)}]; outputs [{', '.join(outs)}]"


_INDEXING = (Compressor, IndexScore, TopK, BlockMax, CandidateSelect)


class _Skeleton(NamedTuple):
    """What the structural half leaves for the rows-dependent half, and what keeps its key's ids valid."""

    held: tuple[Any, ...]  # the edge tuple and the ops whose ids the key holds: alive while the entry is
    flow: tuple[tuple, ...]  # ir/flow.py flow_checks


_FIELDS = attrgetter("id", "layer", "stage", "path", "count", "sink")
_OP = attrgetter("op")


def verify(g: Graph, run: dict | None = None) -> Graph:
    """Check the graph's invariants; raise :class:`GraphError` naming the node and its neighbours.

    Acyclic; every edge endpoint exists; every consumer has the inputs its op needs; attention
    reads the storage of its KV owner (directly, or through the unpack that reads it) and the
    Top-K of its producer; Reuse layers carry no
    compressor or indexer; no compute node dangles; producer and consumer agree on the token
    positions they count (``ir/flow.py``); annotations name existing nodes.

    ``run``: a dict the caller keeps for the graphs of one pipeline run and passes to each call (the
    lowered graph and every pass's output), so the token flow of a rows tuple a pass handed on
    unchanged is not compared twice, and a graph whose node table and edge tuple are the very objects
    the previous call checked (a pass that only annotated) has only its annotations checked; never
    kept past the run (``ir/flow.py`` ``check_flow``).
    """
    if not isinstance(g, Graph):
        raise GraphError(f"verify: expected a v41graph Graph, got {g!r:.80}")
    last = None if run is None else run.get("last")
    if last is None or last.nodes is not g.nodes or last.edges is not g.edges:  # else: only annotations changed
        _check_nodes_and_edges(g, run)
        if run is not None:
            run["last"] = g
    for name, table in g.annotations.items():
        stray = table.keys() - g.nodes.keys()
        if stray:
            raise GraphError(f"verify: annotation {name!r} names missing nodes {sorted(stray)[:5]}")
    return g


def _check_nodes_and_edges(g: Graph, run: dict | None) -> None:
    nodes = tuple(g.nodes.values())
    ops = tuple(map(_OP, nodes))
    found = _passed(Keyed(id(g.edges), (g, nodes)), tuple(g.nodes), tuple(map(_FIELDS, nodes)),
                    Keyed(tuple(map(id, ops)), ops), rows_classes(nodes))
    check_flow(g, nodes, found.flow, _where, run)  # a consumer never counts positions its producer was not charged for


def _flow_of(found: _Skeleton) -> tuple[tuple, ...]:
    return found.flow


@memo("verified skeletons", 32, view=_flow_of)  # one shape holds a key of ~1,300 small tuples
def _passed(edges: Keyed, node_ids: tuple[str, ...], fields: tuple[tuple, ...], ops: Keyed,
            classes: tuple[int, ...]) -> _Skeleton:
    """The structural half, memoised by exactly what it reads: the edge tuple (by identity; its value the
    graph and its nodes), the node ids in order, each node's other fields, the op objects (by identity) and
    which nodes carry one rows tuple. The answer holds the edge tuple and the ops, so an id in a key names
    the object it was taken from while the entry lives."""
    g, nodes = edges.value
    return _skeleton(g, nodes, ops.value, classes)


def _skeleton(g: Graph, nodes: tuple[Node, ...], ops: tuple[Any, ...], classes: tuple[int, ...]) -> _Skeleton:
    """The structural checks (raising on the first broken invariant), then the token flow's plan."""
    for e in g.edges:
        for end in (e.src, e.dst):
            if end not in g.nodes:
                raise GraphError(f"verify: edge {e.src!r} -> {e.dst!r} ({e.role}) has a dangling end {end!r}")
    try:
        g.topological_order()  # cached on the graph; the networkx view is built only to name a cycle
    except _networkx().NetworkXUnfeasible:  # an except clause is evaluated only once something is raised
        cycle = _networkx().find_cycle(g.nx)
        raise GraphError("verify: cycle " + " -> ".join(f"{a}" for a, _ in cycle) + f" -> {cycle[0][0]}")
    for n in g.nodes.values():
        _check_node(g, n)
    return _Skeleton((g.edges, ops), flow_checks(g, nodes, classes))


def _check_node(g: Graph, n: Node) -> None:
    """One node's invariants: its inputs, no indexing on a Reuse or SWA-only layer, what its index scoring
    and attention read, and a consumer for its output."""
    roles = {e.role for e in g.inputs(n.id)}
    missing = [r for r in n.op.required_roles() if r not in roles]
    if missing and not n.op.storage:
        raise GraphError(f"verify: missing input {', '.join(missing)} for {_where(g, n.id)}")
    indexing = any(covers(n.op, k) for k in _INDEXING) or ".idx." in n.id or ".cmp." in n.id
    if n.path in ("reuse", "swa") and indexing:
        kind = "Reuse" if n.path == "reuse" else "SWA-only"
        raise GraphError(f"verify: {kind} layer {n.layer} has compressor/indexer work: {_where(g, n.id)}")
    for score in ([n.op] if isinstance(n.op, IndexScore) else
                  [c for c in getattr(n.op, "covers", ()) if isinstance(c, IndexScore)]):
        _check_index_source(g, n, score)
    if covers(n.op, SparseAttention):
        _check_attention(g, n)
    if not n.op.storage and not n.sink and not g.outputs(n.id):
        raise GraphError(f"verify: output of {_where(g, n.id)} is consumed by nothing")


def _check_index_source(g: Graph, n: Node, score: IndexScore) -> None:
    for e in g.inputs(n.id):
        src = g.nodes[e.src].op
        if e.role == "index_k" and not (isinstance(src, IndexKStore) and src.owner == score.kv_owner):
            raise GraphError(f"verify: index scoring reads index_k from {e.src!r} but its KV owner is layer "
                             f"{score.kv_owner}: {_where(g, n.id)}")


def _owner_store(src: Node, owner: int | None) -> bool:
    return isinstance(src.op, GlobalKVStore) and src.op.owner == owner


def _check_attention(g: Graph, n: Node) -> None:
    """main_kv from the owner's storage, directly or through one unpack (Dequantize) reading it."""
    op = n.op if isinstance(n.op, SparseAttention) else next(c for c in n.op.covers if isinstance(c, SparseAttention))
    for e in g.inputs(n.id):
        src = g.nodes[e.src]
        if e.role == "main_kv" and not _owner_store(src, op.kv_owner):
            if not isinstance(src.op, Dequantize):
                raise GraphError(f"verify: attention reads main_kv from {e.src!r} but its KV owner is layer "
                                 f"{op.kv_owner}: {_where(g, n.id)}")
            stores = [s.src for s in g.inputs(src.id) if s.role == "main_kv"]
            if len(stores) != 1 or not _owner_store(g.nodes[stores[0]], op.kv_owner):
                raise GraphError(f"verify: attention reads main_kv through {e.src!r} from {stores} but its KV owner "
                                 f"is layer {op.kv_owner}: {_where(g, n.id)}; {_where(g, src.id)}")
        if e.role == "topk" and not (covers(src.op, TopK) and src.layer == op.topk_producer):
            raise GraphError(f"verify: attention reads topk from {e.src!r} but its Top-K producer is layer "
                             f"{op.topk_producer}: {_where(g, n.id)}")
