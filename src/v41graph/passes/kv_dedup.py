"""KV de-duplication: one storage node per owner; memory by owner, reads by consumer.

Contract: merges storage nodes of the same kind and owner (redirecting their edges to the
lexicographically first one) and writes the ``kv`` side table: for each storage node its
owner, bytes held after this forward (from :func:`v41graph.model.memory.cache_memory`, the one
implementation of cache sizes) and its readers. Before ⇒ after::

    L2.store.main_kv, L2.store.main_kv#copy  ⇒  L2.store.main_kv (readers L2..L7.attn)

The report sets the real global bytes beside the naive counterfactual in which every compressed
layer owns its KV (V4.1-Flash: 890 against 10,324 B/token).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from ..algebra import Value, ssum
from ..ir.graph import Edge, Graph
from ..ir.shapes import SHAPES_KEPT, numbered, rows_slots
from ..ir.ops import GlobalKVStore, IndexKStore, SwaRing
from ..model.memory import cache_memory, kv_layouts, naive_global_bytes
from ..structural import Keyed, memo
from .base import PassResult, picker


@dataclass(frozen=True)
class StorageRecord:
    owner: int
    kind: str
    bytes: Value  # held after this forward, summed over the batch's sequences (× copies)
    readers: tuple[str, ...]


@dataclass(frozen=True)
class KVDedupReport:
    storages: int
    merged: int
    global_bytes: Value
    naive_global_bytes: Value
    reads: int  # storage → consumer edges (every Reuse layer reads its owner again)


def _key(graph: Graph, nid: str) -> tuple[str, int] | None:
    op = graph.nodes[nid].op
    return (op.kind, op.owner) if op.storage else None


def _bytes_key(op) -> tuple | None:
    """Which of the plan's sums a storage holds (:func:`_bytes`), or None: it holds nothing."""
    if isinstance(op, (GlobalKVStore, IndexKStore)):
        return ("main_kv_bytes" if isinstance(op, GlobalKVStore) else "index_k_bytes", op.owner)
    if isinstance(op, SwaRing):
        return ("swa",)
    return None


def _bytes(ctx, key: tuple | None, memories, memo: dict | None = None) -> Value:
    """Bytes a storage of :func:`_bytes_key` ``key`` holds over the plan's sequences: ``memories``
    is (copies, cache) per sequence (``memo``: the sums already made for this plan, shared by the
    storages of one compile)."""
    if key is None:
        return 0
    if memo is None:
        memo = {}
    if not memo:  # every owner's sums in one sweep: Σ over sequences, in their order, as ssum adds
        for k, m in memories:
            for o in m.owners:
                for name in ("main_kv_bytes", "index_k_bytes"):
                    memo[name, o.owner] = memo.get((name, o.owner), 0) + k * getattr(o, name)
        # one ring per layer and sequence: min(N, W) entries (exact, never a float)
        memo["swa",] = ssum(k * m.swa_entries_per_layer for k, m in memories) * kv_layouts(ctx.model).swa.bytes
    return memo.get(key, 0)


@dataclass(frozen=True)
class _Merge:
    """The structural half of the pass: what merges, the edges after, who reads each storage."""

    merged: frozenset[str]
    edges: tuple[Edge, ...]
    readers: tuple[tuple[str, tuple[str, ...]], ...]  # kept storage → its readers, by id
    kept_ids: tuple[str, ...]  # the surviving nodes' ids, in order
    storages: tuple  # (id, owner, kind, bytes key, readers) per kept storage
    slots: tuple[int, ...]  # the output's rows slots (``Graph.slots``): the kept nodes' own
    kept: object = field(default=None, compare=False)  # itemgetter of ``kept_ids`` (None: nothing merged)


def _answer(m: _Merge) -> tuple:
    """What a merge decides (not what it reads once for the next graph of its shape)."""
    return m.merged, m.edges, m.readers, m.kept_ids, m.storages, m.slots


@memo("kv_dedup merges", SHAPES_KEPT, view=_answer)
def _merge(skeleton: Keyed) -> _Merge:
    """The structural half of each graph shape (the kept storages' payloads read once, kept with it)."""
    graph = skeleton.value
    keep: dict[tuple[str, int], str] = {}
    alias: dict[str, str] = {}
    for nid in sorted(graph.nodes):
        key = _key(graph, nid)
        if key is None:
            continue
        alias[nid] = keep.setdefault(key, nid)
    merged = frozenset(a for a, b in alias.items() if a != b)
    edges, seen = [], set()
    for e in graph.edges:
        e2 = Edge(alias.get(e.src, e.src), alias.get(e.dst, e.dst), e.role, e.dims, e.format)
        if (e2.src, e2.dst, e2.role) not in seen:
            seen.add((e2.src, e2.dst, e2.role))
            edges.append(e2)
    readers: dict[str, list[str]] = {nid: [] for nid in keep.values()}
    for e in edges:  # one entry per edge out of the storage (a reader may read it in two roles)
        if e.src in readers:
            readers[e.src].append(e.dst)
    readers_of = tuple((nid, tuple(sorted(readers[nid]))) for nid in sorted(keep.values()))
    ops = [(nid, graph.nodes[nid].op, r) for nid, r in readers_of]
    storages = tuple((nid, op.owner, op.kind, _bytes_key(op), r) for nid, op, r in ops)
    ids = tuple(n for n in graph.nodes if n not in merged)  # read in one C-level sweep (``kept``)
    slots = numbered(s for n, s in zip(graph.nodes, rows_slots(skeleton)) if n not in merged)
    return _Merge(merged, tuple(edges), readers_of, ids, storages, slots, picker(ids) if merged else None)


@dataclass(frozen=True)
class KVDedup:
    name: str = "kv_dedup"

    def __call__(self, graph: Graph, ctx) -> "PassResult":
        skeleton = graph.skeleton
        plan = _merge(skeleton)
        merged = plan.merged
        shape = _merge.key(skeleton)
        kept = plan.kept(graph.nodes) if merged else graph.nodes.values()
        out = graph.with_nodes(kept, plan.edges, shape=shape, ids=plan.kept_ids if merged else None, slots=plan.slots)
        out = _annotations(skeleton, out, plan, shape)
        table, reads, global_bytes, naive = _storages(ctx, plan)
        report = KVDedupReport(len(table), len(merged), global_bytes, naive, reads)
        return PassResult(self.name, out.annotate("kv", table, shape=shape), len(merged), report)


def _annotations(skeleton: Keyed, out: Graph, plan: _Merge, shape) -> Graph:
    """``out`` with the input's side tables, less the entries of merged-away storages."""
    merged = plan.merged
    for name, old in skeleton.value.annotations.items():  # merged-away storages leave no side-table entry
        if any(m in old for m in merged):
            out = out.annotate(name, _without_merged(skeleton, name), shape=shape)
    return out


@memo("kv_dedup side tables", SHAPES_KEPT << 2)
def _without_merged(skeleton: Keyed, name: str) -> MappingProxyType:
    """Side table ``name`` of the graph less its merged-away storages' entries (a shape's tables are its
    structure: the precision records, one table compile after compile)."""
    merged = _merge(skeleton).merged
    return MappingProxyType({k: v for k, v in skeleton.value.annotations[name].items() if k not in merged})


def _storages(ctx, plan: _Merge) -> tuple[dict, int, Value, Value]:
    """The kept storages' records, their reads, and the global KV bytes held and without the merge."""
    # Memory is per sequence, not per request: the chunks of one prompt fill one cache (held to
    # the furthest chunk's end), and ``copies`` identical requests hold that many caches.
    seqs = ctx.plan.sequences()
    memories = [(s.copies, cache_memory(ctx.model, s.end)) for s in seqs]  # once per sequence
    table, reads, sums = {}, 0, {}
    for nid, owner, kind, held, readers in plan.storages:
        reads += len(readers)
        table[nid] = StorageRecord(owner, kind, _bytes(ctx, held, memories, sums), readers)
    global_bytes = ssum(k * m.global_bytes for k, m in memories)
    naive = ssum(s.copies * naive_global_bytes(ctx.model, s.end) for s in seqs)
    return table, reads, global_bytes, naive
