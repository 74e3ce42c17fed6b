"""The one verifier: a graph's invariants, checked between passes (docs/architecture.md, decision 5).

Acyclic; every edge endpoint exists; every consumer has the inputs its op needs; attention reads
the storage of its KV owner (directly, or through the unpack that reads it) and the Top-K of its
producer; Reuse and SWA-only layers carry no compressor or indexer; no compute node dangles;
producer and consumer agree on the token positions they count (``ir/flow.py``); annotations
name existing nodes. Errors name the node and its neighbours.
"""

from __future__ import annotations

from ..errors import GraphError
from .flow import check_token_flow
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


def verify(g: Graph) -> Graph:
    """Check the graph's invariants; raise :class:`GraphError` naming the node and its neighbours.

    Acyclic; every edge endpoint exists; every consumer has the inputs its op needs; attention
    reads the storage of its KV owner (directly, or through the unpack that reads it) and the
    Top-K of its producer; Reuse layers carry no
    compressor or indexer; no compute node dangles; producer and consumer agree on the token
    positions they count (``ir/flow.py``); annotations name existing nodes.
    """
    if not isinstance(g, Graph):
        raise GraphError(f"verify: expected a v41graph Graph, got {g!r:.80}")
    _check_edges(g)
    for n in g.nodes.values():
        _check_node(g, n)
    check_token_flow(g, _where)  # a consumer never counts positions its producer was not charged for
    for name, table in g.annotations.items():
        stray = sorted(k for k in table if k not in g.nodes)
        if stray:
            raise GraphError(f"verify: annotation {name!r} names missing nodes {stray[:5]}")
    return g


def _check_edges(g: Graph) -> None:
    """Every edge joins two nodes of ``g``, and the edges make no cycle."""
    for e in g.edges:
        for end in (e.src, e.dst):
            if end not in g.nodes:
                raise GraphError(f"verify: edge {e.src!r} -> {e.dst!r} ({e.role}) has a dangling end {end!r}")
    try:
        g.topological_order()  # cached on the graph; the networkx view is built only to name a cycle
    except _networkx().NetworkXUnfeasible:  # an except clause is evaluated only once something is raised
        cycle = _networkx().find_cycle(g.nx)
        raise GraphError("verify: cycle " + " -> ".join(f"{a}" for a, _ in cycle) + f" -> {cycle[0][0]}")


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
