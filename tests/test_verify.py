"""The one verifier (SPEC §3.1, STYLE 4): real graphs pass; each hand-broken graph fails with a
GraphError that names the offending node and its neighbours.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from v41graph import GraphError, Plan, Request, load_model, lower
from v41graph.extend import Edge, Node, verify
from v41graph.ir.ops import Compressor, Norm


@pytest.fixture(scope="module")
def g():
    return lower(load_model(), Plan([Request.prefill(4096)]))


def _raises(*fragments: str):
    """GraphError whose message contains every fragment, in order."""
    return pytest.raises(GraphError, match=".*".join(re.escape(f) for f in fragments))


def _edge(g, dst: str, role: str) -> Edge:
    (edge,) = [e for e in g.edges if e.dst == dst and e.role == role]
    return edge


def _redirect(g, dst: str, role: str, src: str):
    old = _edge(g, dst, role)
    edges = [dataclasses.replace(e, src=src) if e == old else e for e in g.edges]
    return g.with_nodes(g.nodes.values(), edges)


# --------------------------------------------------------------------------- real graphs pass


@pytest.mark.parametrize("name", ["deepseek-v4.1-flash", "deepseek-v4-flash", "deepseek-v4-pro"])
def test_real_graphs_pass(name):
    model = load_model(name)
    graph = lower(model, Plan([Request.prefill(4096), Request.decode(100_000)]))
    assert verify(graph) is graph


def test_rich_v41_graph_passes():
    plan = Plan([Request.prefill(4096, images=1), Request.extend(1001, 50, swa_cached=False), Request.decode(4096),
                 Request.verify(8192, 5), Request.chunk(1000, 400, 400)],
                encoder_restore="bounded", decoder_replay="bounded", dspark="on", tp=4, ep=16)
    graph = lower(load_model(), plan)
    assert verify(graph) is graph


def test_unchanged_rebuild_passes(g):
    same = g.with_nodes(g.nodes.values(), g.edges)
    assert same is not g
    assert verify(same) is same


# --------------------------------------------------------------------------- ownership edges


def test_missing_main_kv_edge(g):
    broken = g.with_nodes(g.nodes.values(), [e for e in g.edges if e != _edge(g, "L29.attn", "main_kv")])
    with _raises("verify: missing input main_kv for node 'L29.attn' (SparseAttention, layer 29, path reuse)",
                 "inputs [L28.idx.topk:topk, L29.q_rope:q, L29.store.swa:swa_kv]",
                 "outputs [L29.wo_a:x]"):
        verify(broken)


def test_main_kv_from_the_wrong_owner(g):
    broken = _redirect(g, "L29.attn", "main_kv", "L14.store.main_kv")
    with _raises("verify: attention reads main_kv from 'L14.store.main_kv' but its KV owner is layer 20",
                 "node 'L29.attn'", "L14.store.main_kv:main_kv"):
        verify(broken)


def test_main_kv_through_an_unpack_of_the_wrong_owner(g):
    broken = _redirect(g, "L29.kv_unpack", "main_kv", "L14.store.main_kv")
    with _raises("verify: attention reads main_kv through 'L29.kv_unpack' from ['L14.store.main_kv'] but its KV "
                 "owner is layer 20", "node 'L29.attn'", "node 'L29.kv_unpack' (Dequantize",
                 "L14.store.main_kv:main_kv"):
        verify(broken)


def test_topk_from_the_wrong_producer(g):
    broken = _redirect(g, "L29.attn", "topk", "L24.idx.topk")
    with _raises("verify: attention reads topk from 'L24.idx.topk' but its Top-K producer is layer 28",
                 "node 'L29.attn'", "L24.idx.topk:topk"):
        verify(broken)


def test_main_kv_from_a_non_store(g):
    broken = _redirect(g, "L29.attn", "main_kv", "L29.kv_quant")
    with _raises("verify: attention reads main_kv from 'L29.kv_quant' but its KV owner is layer 20"):
        verify(broken)


def test_missing_topk_edge(g):
    broken = g.with_nodes(g.nodes.values(), [e for e in g.edges if e != _edge(g, "L29.attn", "topk")])
    with _raises("verify: missing input topk for node 'L29.attn'"):
        verify(broken)


def test_missing_pool_edge_on_a_pool_scorer(g):
    broken = g.with_nodes(g.nodes.values(), [e for e in g.edges if e != _edge(g, "L24.idx.score", "pool")])
    with _raises("verify: missing input pool for node 'L24.idx.score' (IndexScore, layer 24, path reindex)"):
        verify(broken)


# --------------------------------------------------------------------------- shape of the DAG


def test_cycle(g):
    broken = g.with_nodes(g.nodes.values(), list(g.edges) + [Edge("L30.wq_a", "L29.attn_norm", "x", 5120, "bf16")])
    with pytest.raises(GraphError, match=r"verify: cycle ") as err:
        verify(broken)
    message = str(err.value)
    assert "L30.wq_a" in message and "L29.attn_norm" in message


def test_dangling_edge(g):
    broken = g.with_nodes(g.nodes.values(), list(g.edges) + [Edge("L29.wo_b", "L29.nowhere", "x", 5120, "bf16")])
    with _raises("verify: edge 'L29.wo_b' -> 'L29.nowhere' (x) has a dangling end 'L29.nowhere'"):
        verify(broken)


def test_dangling_source(g):
    broken = g.with_nodes(g.nodes.values(), list(g.edges) + [Edge("L99.attn", "L29.wo_a", "x", 5120, "bf16")])
    with _raises("has a dangling end 'L99.attn'"):
        verify(broken)


def test_output_consumed_by_nothing(g):
    stray = Node("L29.stray_norm", Norm(5120), 29, "decoder", "reuse")
    broken = g.with_nodes(list(g.nodes.values()) + [stray],
                          list(g.edges) + [Edge("L29.attn_norm", "L29.stray_norm", "x", 5120, "bf16")])
    with _raises("verify: output of node 'L29.stray_norm' (Norm, layer 29, path reuse)",
                 "inputs [L29.attn_norm:x]; outputs []", "is consumed by nothing"):
        verify(broken)


def test_dropping_a_consumer_edge_leaves_a_dead_output(g):
    broken = g.with_nodes(g.nodes.values(), [e for e in g.edges if e != _edge(g, "L29.hc_attn.expand", "f")])
    with _raises("verify: output of node 'L29.wo_b'", "is consumed by nothing"):
        verify(broken)


def test_compressor_on_a_reuse_layer(g):
    rogue = Node("L29.pool", Compressor(1, 512, gated=False), 29, "decoder", "reuse")
    broken = g.with_nodes(list(g.nodes.values()) + [rogue],
                          list(g.edges) + [Edge("L29.attn_norm", "L29.pool", "x", 5120, "bf16"),
                                           Edge("L29.pool", "L29.store.swa", "swa_kv", 512, "bf16")])
    with _raises("verify: Reuse layer 29 has compressor/indexer work: node 'L29.pool' (Compressor, layer 29, "
                 "path reuse)", "inputs [L29.attn_norm:x]"):
        verify(broken)


def test_indexer_id_on_a_reuse_layer(g):
    # An id in the indexer's namespace on a Reuse layer is refused whatever its op.
    rogue = Node("L29.idx.extra", Norm(128), 29, "decoder", "reuse")
    broken = g.with_nodes(list(g.nodes.values()) + [rogue],
                          list(g.edges) + [Edge("L29.attn_norm", "L29.idx.extra", "x", 5120, "bf16"),
                                           Edge("L29.idx.extra", "L29.wo_a", "x", 128, "bf16")])
    with _raises("verify: Reuse layer 29 has compressor/indexer work: node 'L29.idx.extra'"):
        verify(broken)


def test_moved_node_keeps_its_checks(g):
    # dataclasses.replace: relabel the Full layer 20's compressor as if it sat on a Reuse layer.
    nodes = [dataclasses.replace(n, path="reuse") if n.id == "L20.cmp.pool" else n for n in g.nodes.values()]
    with _raises("verify: Reuse layer 20 has compressor/indexer work: node 'L20.cmp.pool'"):
        verify(g.with_nodes(nodes, g.edges))


def test_missing_required_input(g):
    broken = g.with_nodes(g.nodes.values(), [e for e in g.edges if e != _edge(g, "L29.hc_attn.expand", "coeff")])
    with _raises("verify: missing input coeff for node 'L29.hc_attn.expand' (MhcExpand, layer 29, path reuse)"):
        verify(broken)


# --------------------------------------------------------------------------- annotations


def test_annotation_naming_a_missing_node(g):
    good = g.annotate("precision", {"L29.attn": "fp8", "L20.store.main_kv": "fp4"})
    assert verify(good) is good
    bad = g.annotate("precision", {"L29.attn": "fp8", "L99.attn": "fp8"})
    with _raises("verify: annotation 'precision' names missing nodes ['L99.attn']"):
        verify(bad)


def test_annotations_survive_with_nodes(g):
    annotated = g.annotate("cost", {"L29.attn": 1.0})
    # Dropping the annotated node but keeping the table is caught.
    nodes = [n for n in annotated.nodes.values() if n.id != "L29.attn"]
    edges = [e for e in annotated.edges if "L29.attn" not in (e.src, e.dst)]
    broken = annotated.with_nodes(nodes, edges)
    assert broken.annotation("cost") == {"L29.attn": 1.0}
    with pytest.raises(GraphError):
        verify(broken)


def test_missing_annotation_table(g):
    with _raises("graph: no 'schedule' annotation (run the pass that writes it first)"):
        g.annotation("schedule")


def test_unknown_node_lookup(g):
    with _raises("graph: no node 'L99.attn'"):
        g.node("L99.attn")


def test_inputs_are_never_mutated(g):
    before = (tuple(g.nodes), g.edges)
    g.with_nodes(list(g.nodes.values())[:10], g.edges[:5])
    g.annotate("x", {})
    assert (tuple(g.nodes), g.edges) == before
    assert dict(g.annotations) == {}


def test_index_scoring_must_read_its_owners_index_k():
    """L24 (Reindex, KV owner 20) scoring the index K of 14 is a lowering error."""
    import dataclasses as _dc

    from v41graph import GraphError, Plan, Request, load_model, lower
    from v41graph.extend import verify
    g = lower(load_model(), Plan([Request.prefill(300)]))
    edges = [_dc.replace(e, src="L14.store.index_k") if (e.dst, e.role) == ("L24.idx.score", "index_k") else e
             for e in g.edges]
    with pytest.raises(GraphError, match=r"index scoring reads index_k from 'L14.store.index_k' but its KV owner "
                                         r"is layer 20: node 'L24.idx.score'"):
        verify(g.with_nodes(g.nodes.values(), edges))
