"""KV de-duplication pass (SPEC §1.4, §4.3): one storage per owner; memory by owner; reads by consumer.

Literals worked out by hand for V4.1-Flash at N = 1,048,576 = 2^20: owners 2, 8, 14 (m = 2) keep
2^19 entries each, owner 20 (m = 1) keeps 2^20; 356 B per entry (288 main + 68 index K) →
(3 · 2^19 + 2^20) · 356 = 933,232,640 B. The naive counterfactual gives every compressed layer its
own copy: 18 layers × 2^19 + 20 layers × 2^20 entries × 356 B = 10,825,498,624 B.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from v41graph import Plan, Request, load_model, lower
from v41graph.extend import Edge, verify
from v41graph.model.memory import cache_memory
from v41graph.passes import PassContext, compile_graph
from v41graph.passes.kv_dedup import KVDedup

MI = 1_048_576


@cache
def _model():
    return load_model()


@pytest.fixture(scope="module")
def million():
    return compile_graph(_model(), Plan([Request.prefill(MI)], fusion="unfused"))


@pytest.fixture(scope="module")
def kv(million):
    return million.graph.annotation("kv")


def test_global_bytes_at_a_million_tokens(million):
    report = million.report("kv_dedup")
    assert report.global_bytes == 933_232_640
    assert report.naive_global_bytes == 18 * (MI // 2) * 356 + 20 * MI * 356
    assert report.naive_global_bytes == 10_825_498_624  # 10,324 B/token × 2^20
    assert report.merged == 0 and million.passes[2].changed == 0  # the lowering already shares


def test_one_global_store_and_one_index_store_per_owner(kv):
    main = sorted((r.owner, nid) for nid, r in kv.items() if r.kind == "GlobalKVStore")
    index = sorted((r.owner, nid) for nid, r in kv.items() if r.kind == "IndexKStore")
    assert main == [(2, "L2.store.main_kv"), (8, "L8.store.main_kv"), (14, "L14.store.main_kv"),
                    (20, "L20.store.main_kv")]
    assert index == [(2, "L2.store.index_k"), (8, "L8.store.index_k"), (14, "L14.store.index_k"),
                     (20, "L20.store.index_k")]


def test_memory_by_owner(kv):
    assert kv["L2.store.main_kv"].bytes == 150_994_944  # 2^19 × 288
    assert kv["L20.store.main_kv"].bytes == 301_989_888  # 2^20 × 288
    assert kv["L2.store.index_k"].bytes == 35_651_584  # 2^19 × 68
    assert kv["L20.store.index_k"].bytes == 71_303_168  # 2^20 × 68
    owners = cache_memory(_model(), MI).owners
    for o in owners:
        assert kv[f"L{o.owner}.store.main_kv"].bytes == o.main_kv_bytes
        assert kv[f"L{o.owner}.store.index_k"].bytes == o.index_k_bytes
    assert sum(r.bytes for r in kv.values() if r.kind in ("GlobalKVStore", "IndexKStore")) == 933_232_640


def test_swa_ring_per_layer_is_exact(kv):
    # min(N, 128) × 528 B per layer, an exact integer (never a float)
    assert kv["L5.store.swa"].bytes == 67_584
    assert type(kv["L5.store.swa"].bytes) is int
    assert sum(r.bytes for r in kv.values() if r.kind == "SwaRing") == 2_703_360  # 40 × 67,584


def test_reads_are_counted_per_consumer(kv, million):
    readers = kv["L20.store.main_kv"].readers
    assert len(readers) == 20  # owner 20 itself plus 19 Reuse/Reindex layers
    # unfused, each reads through its attention's unpack (fusion maps them to L{i}.attn)
    assert set(readers) == {f"L{i}.kv_unpack" for i in range(20, 40)}
    assert set(kv["L2.store.main_kv"].readers) == {f"L{i}.kv_unpack" for i in range(2, 8)}
    assert set(kv["L20.store.index_k"].readers) == {f"L{i}.idx.score" for i in (20, 24, 28, 32, 36)}
    assert million.report("kv_dedup").reads == 95
    assert million.report("kv_dedup").storages == 54


def test_symbolic_global_bytes():
    from v41graph.symbols import N
    c = compile_graph(_model(), Plan([Request.prefill(N)], fusion="unfused"))
    report = c.report("kv_dedup")
    for n, expected in ((1, 356), (2, 1780), (129, 114_276), (MI, 933_232_640)):
        assert report.global_bytes.subs(N, n) == expected


# --------------------------------------------------------------------------- a duplicated storage


def _with_duplicate(graph, nid):
    """Copy storage ``nid`` to ``nid#dup`` and move every other reader edge to the copy."""
    dup = nid + "#dup"
    readers = sorted(e.dst for e in graph.outputs(nid))
    moved = set(readers[::2])
    edges = [Edge(dup, e.dst, e.role, e.dims, e.format) if e.src == nid and e.dst in moved else e
             for e in graph.edges]
    nodes = list(graph.nodes.values()) + [replace(graph.nodes[nid], id=dup)]
    return verify(graph.with_nodes(nodes, edges)), dup, readers


def _storages(graph):
    return sum(1 for n in graph.nodes.values() if n.op.storage)


def test_duplicated_storage_is_merged_back():
    plan = Plan([Request.prefill(4096)])
    lowered = lower(_model(), plan)
    graph, dup, readers = _with_duplicate(lowered, "L2.store.main_kv")
    assert len(readers) == 6
    assert len(graph.outputs(dup)) == 3 and len(graph.outputs("L2.store.main_kv")) == 3
    result = KVDedup()(graph, PassContext(_model(), plan))
    verify(result.graph)
    assert result.changed == 1 and result.report.merged == 1
    assert dup not in result.graph.nodes
    assert sorted(e.dst for e in result.graph.outputs("L2.store.main_kv")) == readers
    assert result.graph.annotation("kv")["L2.store.main_kv"].readers == tuple(readers)
    assert _storages(result.graph) == _storages(graph) - 1 == _storages(lowered)
    assert result.graph.edges == lowered.edges  # exactly the lowering's edges again


def test_kv_dedup_is_idempotent_and_never_adds_storage():
    plan = Plan([Request.prefill(4096), Request.decode(300)])
    graph, _, _ = _with_duplicate(lower(_model(), plan), "L20.store.index_k")
    once = KVDedup()(graph, PassContext(_model(), plan))
    twice = KVDedup()(once.graph, PassContext(_model(), plan))
    assert once.changed == 1 and twice.changed == 0
    assert twice.graph.nodes == once.graph.nodes and twice.graph.edges == once.graph.edges
    assert _storages(twice.graph) <= _storages(once.graph) < _storages(graph)
