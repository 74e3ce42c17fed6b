"""Lowering (model, plan) → Graph on the real configs (SPEC §3, validation row "structure and ownership").

The expected structure is written out per path as an explicit Counter of op kinds, with the node
names behind each count, so this file documents what one layer of each kind lowers to.
"""

from __future__ import annotations

from collections import Counter

import networkx as nx
import pytest

from v41graph import Plan, Request, load_model, lower
from v41graph.extend import verify
from v41graph.ir.ops import (BlockMax, CandidatePool, CandidateSelect, Compressor, CompressorState, Dequantize,
                             EngramGate, EngramHash, EngramLookup, EngramTable, GlobalKVStore, IndexKStore, IndexScore,
                             SwaRing, TopK)


@pytest.fixture(scope="module")
def g(flash):
    return lower(flash, Plan([Request.prefill(4096)]))


# --------------------------------------------------------------------------- per-layer structure

# Every backbone layer, whatever its path (29 nodes):
#   mHC   hc_attn.{coeff, collapse, expand}, hc_ffn.{coeff, collapse, expand}
#   attn  attn_norm, wq_a, q_norm, wq_b, q_rope            (its own query)
#         wkv, kv_norm, kv_rope, kv_quant, swa_write, store.swa   (its own SWA KV)
#         attn, wo_a, wo_b
#   ffn   ffn_norm, moe.gate, moe.combine,
#         moe.experts.{up, swiglu, down}, moe.shared.{up, swiglu, down}   (w1·w3 → SwiGLU → w2)
# An SWA-only layer is exactly that; a layer that reads global KV (Reuse and every other path)
# adds kv_unpack, the Dequantize of its selected FP4 main-KV entries: 30 nodes.
SWA = Counter({
    "Gemm": 5,  # wq_a, wq_b, wkv, wo_a, wo_b
    "Norm": 4,  # attn_norm, q_norm, kv_norm, ffn_norm
    "Rope": 2,  # q_rope, kv_rope
    "Quantize": 1,  # kv_quant (FP8 SWA KV)
    "CacheWrite": 1,  # swa_write
    "SwaRing": 1,  # store.swa
    "SparseAttention": 1,  # attn
    "MhcCoefficients": 2, "MhcCollapse": 2, "MhcExpand": 2,
    "MoeGate": 1, "MoeCombine": 1,
    "RoutedExperts": 4, "SwiGLU": 2,  # up and down GEMMs + SwiGLU, routed and shared
})
REUSE = SWA + Counter({"Dequantize": 1})  # kv_unpack
REUSE_IDS = {"attn", "attn_norm", "ffn_norm", "hc_attn.coeff", "hc_attn.collapse", "hc_attn.expand",
             "hc_ffn.coeff", "hc_ffn.collapse", "hc_ffn.expand", "kv_norm", "kv_quant", "kv_rope", "kv_unpack",
             "moe.combine", "moe.experts.up", "moe.experts.swiglu", "moe.experts.down", "moe.gate",
             "moe.shared.up", "moe.shared.swiglu", "moe.shared.down", "q_norm", "q_rope", "store.swa",
             "swa_write", "wkv", "wo_a", "wo_b", "wq_a", "wq_b"}

# Engram module before the block (layers 1 and 14): +5 nodes (layer 1 is SWA-only: 34)
#   store.engram_table, engram.hash, engram.lookup, engram.proj (Gemm), engram.gate
SWA_ENGRAM = SWA + Counter({"EngramTable": 1, "EngramHash": 1, "EngramLookup": 1, "Gemm": 1, "EngramGate": 1})

# Full, m = 2 (layers 2, 8): 30 + 9 compressor + 6 index K + 6 indexer = 51
#   compressor  cmp.wkv, cmp.wgate (Gemm, fp32), cmp.pool (Compressor), store.cmp_state, cmp.norm,
#               cmp.rope, cmp.quant (FP4), cmp.write, store.main_kv
#   index K     idx.wk, idx.k_norm, idx.k_rope, idx.k_quant, idx.k_write, store.index_k
#   indexer     idx.wq_b, idx.q_rope, idx.q_quant, idx.weights_proj, idx.score, idx.topk
FULL_M2 = Counter({
    "Gemm": 10,  # 5 + cmp.wkv, cmp.wgate, idx.wk, idx.wq_b, idx.weights_proj
    "Norm": 6,  # 4 + cmp.norm, idx.k_norm
    "Rope": 5,  # 2 + cmp.rope, idx.k_rope, idx.q_rope
    "Quantize": 4,  # kv_quant, cmp.quant, idx.k_quant, idx.q_quant
    "CacheWrite": 3,  # swa_write, cmp.write, idx.k_write
    "Compressor": 1, "CompressorState": 1, "GlobalKVStore": 1, "IndexKStore": 1, "IndexScore": 1, "TopK": 1,
    "SwaRing": 1, "SparseAttention": 1, "Dequantize": 1,
    "MhcCoefficients": 2, "MhcCollapse": 2, "MhcExpand": 2,
    "MoeGate": 1, "RoutedExperts": 4, "SwiGLU": 2, "MoeCombine": 1,
})

# Full, m = 2, with the second Engram module (layer 14): 51 + 5 = 56
FULL_M2_ENGRAM = FULL_M2 + Counter({"EngramTable": 1, "EngramHash": 1, "EngramLookup": 1, "Gemm": 1,
                                    "EngramGate": 1})

# Full, m = 1, candidate source (layer 20): no gate and no partial-group state (ratio 1 is a
# pass-through), plus idx.block_max, idx.candidates and store.candidate_pool: 51 − 2 + 3 = 52
FULL_M1_CANDIDATES = Counter({
    "Gemm": 9,  # 5 + cmp.wkv, idx.wk, idx.wq_b, idx.weights_proj
    "Norm": 6, "Rope": 5, "Quantize": 4, "CacheWrite": 3,
    "Compressor": 1, "GlobalKVStore": 1, "IndexKStore": 1, "IndexScore": 1, "TopK": 1,
    "BlockMax": 1, "CandidateSelect": 1, "CandidatePool": 1,
    "SwaRing": 1, "SparseAttention": 1, "Dequantize": 1,
    "MhcCoefficients": 2, "MhcCollapse": 2, "MhcExpand": 2,
    "MoeGate": 1, "RoutedExperts": 4, "SwiGLU": 2, "MoeCombine": 1,
})

# Reindex (24, 28, 32, 36): its own index query and Top-K over the owner's index K, inside the pool:
#   idx.wq_b, idx.q_rope, idx.q_quant, idx.weights_proj, idx.score, idx.topk: 30 + 6 = 36
REINDEX = Counter({
    "Gemm": 7,  # 5 + idx.wq_b, idx.weights_proj
    "Norm": 4, "Rope": 3, "Quantize": 2, "CacheWrite": 1,
    "IndexScore": 1, "TopK": 1, "SwaRing": 1, "SparseAttention": 1, "Dequantize": 1,
    "MhcCoefficients": 2, "MhcCollapse": 2, "MhcExpand": 2,
    "MoeGate": 1, "RoutedExperts": 4, "SwiGLU": 2, "MoeCombine": 1,
})


def _kinds(g, layer):
    return Counter(n.op.kind for n in g.layer_nodes(layer))


@pytest.mark.parametrize("layer, expected, total", [
    (0, SWA, 29),
    (1, SWA_ENGRAM, 34),
    (2, FULL_M2, 51),
    (8, FULL_M2, 51),
    (14, FULL_M2_ENGRAM, 56),
    (20, FULL_M1_CANDIDATES, 52),
    (24, REINDEX, 36),
    (36, REINDEX, 36),
    (3, REUSE, 30),
    (29, REUSE, 30),
    (39, REUSE, 30),
])
def test_op_kinds_per_layer(g, layer, expected, total):
    assert _kinds(g, layer) == expected
    assert len(g.layer_nodes(layer)) == total


def test_reuse_layer_node_ids(g):
    assert {n.id for n in g.layer_nodes(29)} == {f"L29.{name}" for name in REUSE_IDS}


def test_full_layer_adds_compressor_and_indexer(g):
    extra = {n.id for n in g.layer_nodes(2)} - {f"L2.{name}" for name in REUSE_IDS}
    assert extra == {"L2.cmp.wkv", "L2.cmp.wgate", "L2.cmp.pool", "L2.store.cmp_state", "L2.cmp.norm", "L2.cmp.rope",
                     "L2.cmp.quant", "L2.cmp.write", "L2.store.main_kv",
                     "L2.idx.wk", "L2.idx.k_norm", "L2.idx.k_rope", "L2.idx.k_quant", "L2.idx.k_write",
                     "L2.store.index_k",
                     "L2.idx.wq_b", "L2.idx.q_rope", "L2.idx.q_quant", "L2.idx.weights_proj", "L2.idx.score",
                     "L2.idx.topk"}
    # The compressor chain scales with the owner's compressor tokens, not the query tokens; after
    # the pooling (m = 2 tokens → 1 entry) with the compressed entries (issue 10, C3).
    counts = {n.id: n.count for n in g.layer_nodes(2) if ".cmp." in n.id or n.id.startswith("L2.idx.k")
              or n.id == "L2.idx.wk"}
    assert {k for k, v in counts.items() if v == "kv"} == {"L2.cmp.wkv", "L2.cmp.wgate", "L2.cmp.pool"}
    assert {k for k, v in counts.items() if v == "entry"} == {
        "L2.cmp.norm", "L2.cmp.rope", "L2.cmp.quant", "L2.cmp.write",
        "L2.idx.wk", "L2.idx.k_norm", "L2.idx.k_rope", "L2.idx.k_quant", "L2.idx.k_write"}


def test_nodes_per_layer_and_totals(g):
    sizes = [len(g.layer_nodes(l)) for l in range(40)]
    assert sizes == [29, 34, 51, 30, 30, 30, 30, 30, 51, 30, 30, 30, 30, 30, 56, 30, 30, 30, 30, 30,
                     52, 30, 30, 30, 36, 30, 30, 30, 36, 30, 30, 30, 36, 30, 30, 30, 36, 30, 30, 30]
    # + embed, head.collapse, head.norm, head.proj: the 1123 before the split + 40 × 4 MoE + 38 unpacks
    assert len(g.nodes) == 1321
    assert sorted(n.id for n in g.nodes.values() if n.layer is None) == ["embed", "head.collapse", "head.norm",
                                                                          "head.proj"]


def test_edges_into_each_layer(g):
    # Reuse: 1 + 2 (hc_attn coeff, collapse) + 19 (attention: 13 single-input nodes + attn's q, swa_kv,
    # main_kv, topk + kv_unpack's main_kv, topk) + 3 (expand) + 3 (hc_ffn) + 11 (ffn_norm, gate,
    # experts.up x+route, experts.swiglu, experts.down, shared.up, shared.swiglu, shared.down, combine ×2)
    # + 3 (expand) = 42, + 1 in a prefill: the shared expert runs after the routed ones ("after", 0 values;
    # ir/routing.py shared_expert_overlap) = 43. SWA: no unpack, no main_kv/topk (38); layer 0 collapses with a
    # constant pre-mix
    # (37). Engram: lookup 2, proj 1, gate 2 (+5). Full m=2: +10 compressor, +6 index K, +8 indexer (66).
    # Full m=1 (20): +7 compressor, +6, +8, +3 candidate selection (66). Reindex: +8 indexer, +1 pool (51).
    into = Counter(g.nodes[e.dst].layer for e in g.edges)
    assert [into[l] for l in range(40)] == [38, 44, 67, 43, 43, 43, 43, 43, 67, 43, 43, 43, 43, 43, 72, 43, 43, 43,
                                            43, 43, 67, 43, 43, 43, 52, 43, 43, 43, 52, 43, 43, 43, 52, 43, 43, 43,
                                            52, 43, 43, 43]
    assert into[None] == 4  # head.collapse (x, coeff), head.norm, head.proj
    assert len(g.edges) == 1857  # 1581 before the split + 40 × 4 MoE + 38 × 2 unpack + 40 "after" (prefill)


# --------------------------------------------------------------------------- ownership


def test_layer_29_reads_kv_of_20_and_topk_of_28(g):
    ins = {e.role: e.src for e in g.inputs("L29.attn")}
    assert ins == {"q": "L29.q_rope", "swa_kv": "L29.store.swa", "main_kv": "L29.kv_unpack",
                   "topk": "L28.idx.topk"}
    assert g.nx.nodes["L29.attn"]["op"] == "SparseAttention"
    # the unpack reads the owner's FP4 entries that Top-K selects and hands attention bf16
    assert {e.role: (e.src, e.format) for e in g.inputs("L29.kv_unpack")} == {
        "main_kv": ("L20.store.main_kv", "v41_main_kv"), "topk": ("L28.idx.topk", "i32")}
    assert [(e.dst, e.role, e.format) for e in g.outputs("L29.kv_unpack")] == [("L29.attn", "main_kv", "bf16")]
    op = g.node("L29.kv_unpack").op
    assert isinstance(op, Dequantize) and (op.dim, op.format, op.ratio, op.topk) == (512, "v41_main_kv", 1, 512)


def test_every_attention_reads_its_owner_and_producer(flash, g):
    for spec in flash.layers:
        ins = {e.role: e.src for e in g.inputs(f"L{spec.index}.attn")}
        assert ins["q"] == f"L{spec.index}.q_rope"
        assert ins["swa_kv"] == f"L{spec.index}.store.swa"  # every layer keeps its own SWA KV
        if spec.path == "swa":
            assert set(ins) == {"q", "swa_kv"}
            assert f"L{spec.index}.kv_unpack" not in g.nodes
        else:
            assert ins["main_kv"] == f"L{spec.index}.kv_unpack"
            unpack = {e.role: e.src for e in g.inputs(ins["main_kv"])}
            assert unpack == {"main_kv": f"L{spec.kv_owner}.store.main_kv",
                              "topk": f"L{spec.topk_producer}.idx.topk"}
            assert ins["topk"] == f"L{spec.topk_producer}.idx.topk"
        op = g.nodes[f"L{spec.index}.attn"].op
        assert (op.kv_owner, op.topk_producer) == (spec.kv_owner, spec.topk_producer)


_INDEXING = (Compressor, IndexScore, TopK, BlockMax, CandidateSelect)


def test_no_indexing_on_reuse_or_swa_layers(flash, g):
    quiet = [l.index for l in flash.layers if l.path in ("reuse", "swa")]
    assert len(quiet) == 32
    for l in quiet:
        for n in g.layer_nodes(l):
            assert not isinstance(n.op, _INDEXING), n.id
            assert ".idx." not in n.id and ".cmp." not in n.id, n.id


def _layers_with(g, kind):
    return sorted(n.layer for n in g.nodes.values() if isinstance(n.op, kind))


def test_candidate_selection_only_on_20(g):
    assert _layers_with(g, CandidateSelect) == [20]
    assert _layers_with(g, BlockMax) == [20]
    assert _layers_with(g, CandidatePool) == [20]
    assert g.node("L20.store.candidate_pool").op.positions == 16384  # 2048 blocks × 8


def test_index_score_scope(g):
    scopes = {n.layer: n.op.scope for n in g.nodes.values() if isinstance(n.op, IndexScore)}
    assert scopes == {2: "all", 8: "all", 14: "all", 20: "all", 24: "pool", 28: "pool", 32: "pool", 36: "pool"}
    for l in (24, 28, 32, 36):
        ins = {e.role: e.src for e in g.inputs(f"L{l}.idx.score")}
        assert ins["index_k"] == "L20.store.index_k"
        assert ins["pool"] == "L20.store.candidate_pool"
    for l in (2, 8, 14, 20):
        ins = {e.role: e.src for e in g.inputs(f"L{l}.idx.score")}
        assert ins["index_k"] == f"L{l}.store.index_k" and "pool" not in ins


def test_engram_only_on_1_and_14(g):
    for kind in (EngramTable, EngramHash, EngramLookup, EngramGate):
        assert _layers_with(g, kind) == [1, 14]
    assert sorted(n.layer for n in g.nodes.values() if ".engram." in n.id) == [1] * 4 + [14] * 4
    # The Engram output feeds the residual the block's attention collapse reads.
    assert {e.src for e in g.inputs("L1.hc_attn.collapse") if e.role == "x"} == {"L1.engram.gate"}


def test_storage_by_owner(g):
    assert _layers_with(g, GlobalKVStore) == [2, 8, 14, 20]
    assert _layers_with(g, IndexKStore) == [2, 8, 14, 20]
    assert _layers_with(g, SwaRing) == list(range(40))
    assert _layers_with(g, CompressorState) == [2, 8, 14]
    assert _layers_with(g, CandidatePool) == [20]
    assert _layers_with(g, EngramTable) == [1, 14]
    assert {g.node(f"L{l}.store.main_kv").op.ratio for l in (2, 8, 14)} == {2}
    assert g.node("L20.store.main_kv").op.ratio == 1
    # One copy per owner, read by every consumer: 20's main KV feeds its 20 decoder attentions.
    assert sorted(g.nodes[e.dst].layer for e in g.outputs("L20.store.main_kv")) == list(range(20, 40))
    assert {e.dst for e in g.outputs("L20.store.main_kv")} == {f"L{l}.kv_unpack" for l in range(20, 40)}
    assert sorted(g.nodes[e.dst].layer for e in g.outputs("L2.store.main_kv")) == [2, 3, 4, 5, 6, 7]


def test_networkx_view(g):
    view = g.nx
    assert isinstance(view, nx.DiGraph)
    assert view.number_of_nodes() == 1321 and view.number_of_edges() == 1857
    assert nx.is_directed_acyclic_graph(view)
    attrs = view.nodes["L20.cmp.pool"]
    assert (attrs["op"], attrs["layer"], attrs["stage"], attrs["path"]) == ("Compressor", 20, "decoder", "full")
    attrs = view.nodes["L3.attn"]
    assert (attrs["op"], attrs["layer"], attrs["stage"], attrs["path"]) == ("SparseAttention", 3, "encoder", "reuse")
    assert view.edges["L20.store.main_kv", "L29.kv_unpack"]["role"] == "main_kv"
    assert view.edges["L29.kv_unpack", "L29.attn"]["role"] == "main_kv"


def test_nodes_carry_base_rows(g):
    (row,) = g.node("L29.attn").rows
    assert (row.request, row.layer, row.q_start, row.q_end) == (0, 29, 0, 4096)
    assert g.node("L29.attn").count == "q"
    assert g.node("L20.store.main_kv").count == "none"


def test_head(g):
    head = g.node("head.proj")
    assert head.count == "logits" and head.sink and head.stage == "head"
    (row,) = head.rows
    assert (row.layer, row.q_start, row.q_end) == (39, 0, 4096)
    assert (head.op.k, head.op.n) == (5120, 129280)
    assert [e.src for e in g.inputs("head.collapse")] == ["L39.hc_ffn.expand", "L39.hc_ffn.coeff"]


# --------------------------------------------------------------------------- parallel mapping


def test_tp_and_ep_add_collectives(flash):
    g = lower(flash, Plan([Request.prefill(4096)], tp=2, ep=8))
    comm = Counter((n.op.collective, n.op.purpose) for n in g.nodes.values() if n.op.kind == "Communication")
    # tp 2 × ep 8 is 8 GPUs: the vocab-parallel embedding all-reduces; each layer's attention
    # all-reduces over tp; each GPU dispatches and combines its own tokens and the attention
    # group of 8 all-gathers the MoE output (SGLang attn_tp_all_gather); the Engram layers 1 and 14
    # all-gather the rows each TP rank looked up (vLLM ParallelEngramEmbedding)
    assert comm == {("all_reduce", "attention output"): 40, ("all_to_all", "dispatch"): 40,
                    ("all_to_all", "combine"): 40, ("all_gather", "MoE output"): 40, ("all_reduce", "embedding"): 1,
                    ("all_gather", "Engram rows"): 2}
    for l in range(40):
        kinds = Counter(n.op.collective for n in g.layer_nodes(l) if n.op.kind == "Communication")
        assert kinds == {"all_reduce": 1, "all_to_all": 2, "all_gather": 2 if l in (1, 14) else 1}
    assert {n.op.ranks for n in g.nodes.values() if n.op.kind == "Communication" and n.op.collective == "all_reduce"} \
        == {2}
    assert [e.src for e in g.inputs("L29.moe.experts.up") if e.role == "x"] == ["L29.moe.dispatch"]
    assert [e.dst for e in g.outputs("L29.moe.experts.down")] == ["L29.moe.combine_a2a"]
    assert len(g.nodes) == 1321 + 120 + 40 + 1 + 2  # + MoE all-gathers, embedding all-reduce, Engram all-gathers
    verify(g)


def test_no_collectives_without_parallelism(g):
    assert not [n for n in g.nodes.values() if n.op.kind == "Communication"]


# --------------------------------------------------------------------------- DSpark and images


def test_dspark_blocks(flash):
    g = lower(flash, Plan([Request.prefill(4096), Request.decode(1000), Request.verify(2000, 5)], dspark="on"))
    verify(g)
    for b, index in ((0, 40), (1, 41), (2, 42)):
        block = [n for n in g.nodes.values() if n.id.startswith(f"D{b}.")]
        # a full Block (model-facts §8): SWA-only attention and its own MoE, the same 29 nodes as layer 0
        assert Counter(n.op.kind for n in block) == SWA
        assert {(n.stage, n.layer, n.path) for n in block} == {("dspark", index, "swa")}
    assert [e.src for e in g.inputs("D.main_proj")] == ["L37.hc_attn.collapse", "L38.hc_attn.collapse",
                                                        "L39.hc_attn.collapse"]
    assert g.node("D.main_proj").op.k == 15360  # 3 × 5120
    assert g.node("D0.moe.experts.up").op.experts == 128 and g.node("D0.moe.experts.down").op.top_k == 3
    assert g.node("D.heads").sink
    # Draft rows: 5 positions for each decode / verify request, none for the prefill.
    assert [(r.request, r.q_start, r.q_end) for r in g.node("D0.attn").rows] == [(1, 1001, 1006), (2, 2005, 2010)]
    # The last stage (issue 10, D8): collapse → norm → base logits through the vocabulary head
    # (5120 → 129,280 per draft position) → Markov / confidence heads on top of them.
    assert [e.src for e in g.inputs("D.head")] == ["D.norm"]
    assert (g.node("D.head").op.k, g.node("D.head").op.n) == (5120, 129_280)
    assert sorted((e.src, e.role) for e in g.inputs("D.heads")) == [("D.head", "logits"), ("D.norm", "x")]
    # 1321 backbone + head, 5 (main_proj, collapse, norm, head, heads) + 3 × 29
    assert len(g.nodes) == 1321 + 5 + 3 * 29 == 1413


def test_dspark_without_drafting_requests_adds_nothing(flash):
    g = lower(flash, Plan([Request.prefill(4096)], dspark="on"))
    assert not [n for n in g.nodes.values() if n.stage == "dspark"]
    assert len(g.nodes) == 1321


def test_images_add_the_vision_stage(flash):
    g = lower(flash, Plan([Request.prefill(4096, images=2, image_size=(896, 448))]))
    verify(g)
    enc, fc1, fc2 = g.node("vision.encoder"), g.node("vision.aligner.fc1"), g.node("vision.aligner.fc2")
    assert (enc.stage, fc1.stage, fc2.stage) == ("vision", "vision", "vision")
    # the aligner is two layers (issue 10, D7): 1024 · 3² merged patch values → 5120 → 5120
    assert [(e.src, e.dst) for e in g.outputs("vision.encoder")] == [("vision.encoder", "vision.aligner.fc1")]
    assert [(e.dst, e.role) for e in g.outputs("vision.aligner.fc1")] == [("vision.aligner.fc2", "x")]
    assert [(e.dst, e.role) for e in g.outputs("vision.aligner.fc2")] == [("embed", "image")]
    assert (fc1.op.k, fc1.op.n, fc2.op.k, fc2.op.n) == (1024 * 3 * 3, 5120, 5120, 5120)
    # 896×448 resized by the image processor (issue 10, D6) to multiples of 14 · 3 = 42:
    # 896/42 = 21.3 → 21 · 42 = 882, 448/42 = 10.7 → 11 · 42 = 462 (area inside [min, max] pixels);
    # 63 × 33 = 2079 patches per image, two images
    assert enc.rows[0].q_end == 2 * (882 // 14) * (462 // 14) == 4158
    # the text backbone's 1321 nodes, and the vision encoder, fc1 and fc2
    assert len(g.nodes) == 1321 + 3
    assert "vision.encoder" not in lower(flash, Plan([Request.prefill(4096)])).nodes


# --------------------------------------------------------------------------- V4 baseline


def test_v4_flash(flash):
    v4 = load_model("deepseek-v4-flash")
    g = lower(v4, Plan([Request.prefill(4096)]))
    verify(g)
    assert v4.num_layers == 43
    topk = sorted(n.layer for n in g.nodes.values() if n.id.endswith(".idx.topk"))
    assert len(topk) == 21 and topk == list(range(2, 43, 2))
    for spec in v4.layers:
        ins = {e.role: e.src for e in g.inputs(f"L{spec.index}.attn")}
        if spec.path == "hca":
            assert set(ins) == {"q", "swa_kv", "main_kv"}  # attends every compressed entry: no Top-K edge
            assert g.node(f"L{spec.index}.attn").op.dense_compressed
        if spec.path in ("csa", "hca"):
            assert ins["main_kv"] == f"L{spec.index}.kv_unpack"
            (store,) = [e.src for e in g.inputs(ins["main_kv"]) if e.role == "main_kv"]
            assert store == f"L{spec.index}.store.main_kv"  # every compressed layer owns its KV
            assert g.node(ins["main_kv"]).op.topk == (None if spec.path == "hca" else 512)
        if spec.path == "csa":
            assert ins["topk"] == f"L{spec.index}.idx.topk"
    assert len([n for n in g.nodes if n.endswith(".store.main_kv")]) == 41
    assert Counter(v4.layers[l].path for l in range(43)) == {"swa": 2, "csa": 21, "hca": 20}


# --------------------------------------------------------------------------- determinism


def test_lowering_is_deterministic(flash):
    plan = Plan([Request.prefill(4096), Request.decode(1000), Request.verify(2000, 5)], dspark="on", tp=2, ep=8)
    a, b = lower(flash, plan), lower(flash, plan)
    assert list(a.nodes) == list(b.nodes)
    assert a.edges == b.edges
    assert a.topological_order() == b.topological_order()
