"""Fusion pass (SPEC §4.4): fused modules, recomputed traffic, nothing charged twice.

mHC values per token per residual transform, n = 4 streams, d = 5120 (SPEC §4.4, by hand):
unfused with the input pre-norm (4n+4)d = 20 · 5120 = 102,400; two-pass Mega-mHC
(3n+2)d = 14 · 5120 = 71,680; single-pass (2n+2)d = 10 · 5120 = 51,200. V4-Flash (d = 4096)
two-pass: 14 · 4096 = 57,344.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from v41graph import Plan, PlanError, Request, load_model
from v41graph.extend import verify
from v41graph.costs.counts import CostContext
from v41graph.costs.node import node_cost
from v41graph.costs.traffic import activation_elements, unfused_elements
from v41graph.costs.value import Cost
from v41graph.ir.ops import (Dequantize, Fused, MhcCoefficients, MhcCollapse, MhcExpand, Norm, RoutedExperts,
                             SparseAttention, SwiGLU, covers)
from v41graph.passes import PassContext, compile, compile_graph
from v41graph.passes.fusion import Fusion

MEGA = ("L3.hc_attn.expand", "L3.hc_ffn.coeff", "L3.hc_ffn.collapse", "L3.ffn_norm")
INDEX_SOURCES = (2, 8, 14, 20, 24, 28, 32, 36)
KV_READERS = tuple(l for l in range(40) if l not in (0, 1))  # every layer but the two SWA-only ones


@cache
def _model(name=None):
    return load_model(name)


@cache
def _compiled(fusion, replay="bounded", n=5000, model=None):
    return compile_graph(_model(model), Plan([Request.prefill(n)], decoder_replay=replay, fusion=fusion))


def _fused(graph):
    return {nid: n.op for nid, n in graph.nodes.items() if isinstance(n.op, Fused)}


def test_unfused_mhc_traffic_is_4n_plus_4_d():
    g = _compiled("unfused").graph
    assert unfused_elements(g, MEGA) == 102_400
    assert not _fused(g)
    report = _compiled("unfused").report("fusion")
    assert (report.groups, report.nodes_removed, report.mhc_elements_per_transform) == ({}, 0, None)


def test_two_pass_mhc_traffic_is_3n_plus_2_d():
    c = _compiled("two-pass")
    assert c.report("fusion").mhc_elements_per_transform == 71_680
    assert activation_elements(c.graph, ["L3.hc_attn.mega"]) == 71_680
    assert c.graph.nodes["L3.hc_attn.mega"].op.reread == (("x", 20_480),)  # re-reads the n·d residual


def test_single_pass_mhc_traffic_is_2n_plus_2_d():
    c = _compiled("single-pass")
    assert c.report("fusion").mhc_elements_per_transform == 51_200
    assert activation_elements(c.graph, ["L3.hc_attn.mega"]) == 51_200
    assert c.graph.nodes["L3.hc_attn.mega"].op.reread == ()


def test_group_counts():
    # 80 expands − L0/L13's (Engram sits before layers 1 and 14) − L39's (the head) = 77;
    # bounded replay also keeps L20's (its next sublayer runs only the tail) = 76.
    # swiglu: routed and shared experts of 40 layers = 80; kv_unpack: the 38 layers that read global KV
    # rope: each layer's query RoPE into its wq_b epilogue = 40 (the indexer's goes with its quant)
    groups = {"mhc": 76, "quant": 56, "score_topk": 8, "swiglu": 80, "kv_unpack": 38, "rope": 40}
    assert _compiled("single-pass").report("fusion").groups == groups
    assert _compiled("single-pass", "off").report("fusion").groups == {**groups, "mhc": 77}
    # 76·3 + 56·1 + 7·1 + 1·3 = 294, + 80·2 (three GEMM/SwiGLU nodes into one) + 38·1 + 40·1 = 532
    assert _compiled("single-pass").report("fusion").nodes_removed == 532
    assert _compiled("single-pass").passes[3].changed == 532


def test_single_pass_needs_v41_lagged_coefficients():
    with pytest.raises(PlanError, match="'single-pass'"):
        compile_graph(_model("deepseek-v4-flash"), Plan([Request.prefill(300)], fusion="single-pass"))


def test_v4_flash_two_pass_works():
    c = compile_graph(_model("deepseek-v4-flash"), Plan([Request.prefill(300)], fusion="two-pass"))
    assert c.report("fusion").mhc_elements_per_transform == 57_344  # (3·4 + 2) · 4096
    assert verify(c.graph) is c.graph


def test_fused_node_records_members_and_covers():
    op = _compiled("single-pass").graph.nodes["L3.hc_attn.mega"].op
    assert op.rule == "mhc"
    assert op.members == MEGA
    assert tuple(type(c) for c in op.covers) == (MhcExpand, MhcCoefficients, MhcCollapse, Norm)
    unfused = _compiled("unfused").graph
    assert op.covers == tuple(unfused.nodes[m].op for m in MEGA)


@pytest.mark.parametrize("fusion", ["two-pass", "single-pass"])
def test_nothing_charged_twice_nothing_lost(fusion):
    before, after = _compiled("unfused").graph, _compiled(fusion).graph
    fused = _fused(after)
    members = Counter(m for op in fused.values() for m in op.members)
    assert max(members.values()) == 1  # no node in two modules
    kept = set(after.nodes) - set(fused)
    for nid in before.nodes:
        assert (nid in kept) != (nid in members), nid  # kept, or covered exactly once
    assert set(after.nodes) - set(before.nodes) <= set(fused)  # the only new ids are modules
    # a fused attention keeps its member's id, so references to L{l}.attn hold after fusion; so
    # does a query RoPE fused into its wq_b (attention's q still comes from L{l}.q_rope)
    assert {fid for fid, op in fused.items() if fid in op.members} == (
        {f"L{l}.attn" for l in KV_READERS} | {f"L{l}.q_rope" for l in range(40)})
    assert len(before.nodes) - len(after.nodes) == 532
    # the op multiset is conserved: every op of the unfused graph is covered once
    ops_after = Counter(c for n in after.nodes.values() for c in getattr(n.op, "covers", (n.op,)))
    assert ops_after == Counter(n.op for n in before.nodes.values())


def test_fusion_never_crosses_the_replay_cut():
    layers = {nid: n.layer for nid, n in _compiled("unfused").graph.nodes.items()}
    spans = [nid for nid, op in _fused(_compiled("single-pass").graph).items()
             if {20, 21} <= {layers[m] for m in op.members}]
    assert spans == []
    # without replay the L20 → L21 transform shares one ledger and fuses
    layers_off = {nid: n.layer for nid, n in _compiled("unfused", "off").graph.nodes.items()}
    spans_off = [nid for nid, op in _fused(_compiled("single-pass", "off").graph).items()
                 if {20, 21} <= {layers_off[m] for m in op.members}]
    assert spans_off == ["L20.hc_ffn.mega"]


def test_score_and_topk_fused_on_the_8_index_sources():
    fused = _fused(_compiled("single-pass").graph)
    score = {nid: op for nid, op in fused.items() if op.rule == "score_topk"}
    assert sorted(score) == sorted(f"L{i}.idx.score+" for i in INDEX_SOURCES)
    for i in INDEX_SOURCES:
        assert score[f"L{i}.idx.score+"].members[:2] == (f"L{i}.idx.score", f"L{i}.idx.topk")
    # the candidate source also folds block-max and candidate selection in
    assert score["L20.idx.score+"].members == ("L20.idx.score", "L20.idx.topk", "L20.idx.block_max",
                                               "L20.idx.candidates")


@pytest.mark.parametrize("layer,producer", [(3, 2), (21, 20), (29, 28), (39, 36)])
def test_attention_topk_comes_from_a_fused_node_at_the_producer(layer, producer):
    g = _compiled("single-pass").graph
    (edge,) = [e for e in g.inputs(f"L{layer}.attn") if e.role == "topk"]
    src = g.nodes[edge.src]
    assert edge.src == f"L{producer}.idx.score+"
    assert isinstance(src.op, Fused) and src.layer == producer
    attn = g.nodes[f"L{layer}.attn"].op
    assert covers(attn, SparseAttention) and attn.rule == "kv_unpack"


@pytest.mark.parametrize("fusion", ["unfused", "two-pass", "single-pass"])
def test_verify_holds_and_side_tables_follow(fusion):
    g = _compiled(fusion).graph
    assert verify(g) is g
    assert set(g.annotation("precision")) == set(g.nodes)
    readers = {r for rec in g.annotation("kv").values() for r in rec.readers}
    assert readers <= set(g.nodes)


def test_fused_module_precision_takes_its_weighted_member():
    g = _compiled("single-pass").graph
    table = g.annotation("precision")
    quant = [nid for nid, op in _fused(g).items() if op.rule == "quant"]
    assert len(quant) == 56
    assert table["L3.hc_attn.mega"].compute == "bf16"
    assert table["L20.idx.score+"].compute == "fp8"  # as L20.idx.score is unfused: fusion keeps precision
    assert _compiled("unfused").graph.annotation("precision")["L20.idx.score"].compute == "fp8"
    assert g.nodes["L3.kv_quant+"].op.members == ("L3.kv_rope", "L3.kv_quant")
    assert table["L3.kv_quant+"].compute == "bf16" and table["L3.kv_quant+"].weight is None


def test_traffic_only_goes_down():
    # Values per unit that every fused group moves between HBM and its kernels, unfused (each
    # member alone) and fused, derived rule by rule from the model's dimensions — not copied from
    # output. A 5,000-token prefill with bounded replay (SGLang cut after L20) on V4.1-Flash.
    m = _model()
    d, n, layers = m.hidden_size, m.hc_mult, len(m.layers)                    # 5120, 4, 40
    hd, rope, heads = m.head_dim, m.rope_head_dim, m.num_heads                # 512, 64, 64
    ih, idim, topk = m.index_n_heads, m.index_head_dim, m.index_topk          # 32, 128, 512
    inter, k = m.moe_intermediate_size, m.experts_per_token                   # 2304, 6
    full, indexers = len(m.kv_source_ids), len(m.index_source_ids)            # 4 KV sources, 8 indexers
    compressed = sum(1 for r in m.compress_ratios[:layers] if r > 0)          # 38 (2 layers are SWA-only)
    groups = {  # rule: [(count, unfused, fused), ...]
        # single-pass Mega-mHC: (4n+4)d → (2n+2)d per transform; two per layer, less the one into
        # the head, the two into Engram and the one across the replay cut (docs/architecture.md)
        "mhc": [(2 * layers - 1 - len(m.engram_layer_ids) - 1, (4 * n + 4) * d, (2 * n + 2) * d)],
        # RoPE into its quantisation; alone a RoPE moves 2 × its rotary slice, fused the whole
        # entry is read and written once: the main KV (every layer), the compressed KV (KV
        # sources), the index K (KV sources) and the index query (indexers, ih heads)
        "quant": [(layers, 2 * rope + 2 * hd, 2 * hd), (full, 2 * rope + 2 * hd, 2 * hd),
                  (full, 2 * rope + 2 * idim, 2 * idim), (indexers, 2 * ih * rope + 2 * ih * idim, 2 * ih * idim)],
        # index score (reads the query and ih weights, writes 1) into Top-K (reads 1, writes topk);
        # on the candidate source also block max (reads 1, writes 1) and candidate selection (reads 1)
        "score_topk": [(indexers - 1, ih * idim + ih + 2 + topk, ih * idim + ih + topk),
                       (1, ih * idim + ih + 5 + topk, ih * idim + ih + topk)],
        # up → SwiGLU → down keeps 2·inter + 2·inter + inter + inter = 6·inter per copy on chip;
        # routed: k copies, the k routing weights read; shared: one copy
        "swiglu": [(layers, 2 * d + k + 6 * k * inter, 2 * d + k), (layers, 2 * d + 6 * inter, 2 * d)],
        # FP4 main-KV unpack into attention: the unpack's Top-K read and its hd values out and in go
        "kv_unpack": [(compressed, 2 * heads * hd + topk + topk + 2 * hd, 2 * heads * hd + topk)],
        # a query RoPE into the epilogue of wq_b (q_lora_rank in, heads·hd out); alone 2·heads·rope
        "rope": [(layers, m.q_lora_rank + heads * hd + 2 * heads * rope, m.q_lora_rank + heads * hd)],
    }
    before = sum(c * u for parts in groups.values() for c, u, _ in parts)
    after = sum(c * f for parts in groups.values() for c, _, f in parts)
    report = _compiled("single-pass").report("fusion")
    assert report.groups == {rule: sum(c for c, _, _ in parts) for rule, parts in groups.items()}
    assert (report.elements_before, report.elements_after) == (before, after) == (16_918_019, 8_731_120)
    two = _compiled("two-pass").report("fusion")
    assert two.elements_before == before
    assert report.elements_after < two.elements_after < two.elements_before


@pytest.mark.parametrize("fusion", ["two-pass", "single-pass"])
def test_fusion_is_idempotent(fusion):
    c = _compiled(fusion)
    again = Fusion()(c.graph, PassContext(_model(), Plan([Request.prefill(5000)], decoder_replay="bounded",
                                                     fusion=fusion)))
    assert again.changed == 0 and again.report.nodes_removed == 0
    assert again.graph.nodes == c.graph.nodes and again.graph.edges == c.graph.edges


# --------------------------------------------------------------------------- SwiGLU and FP4 KV unpack


def test_unfused_keeps_expert_parts_and_unpack_apart():
    g = _compiled("unfused").graph
    for prefix, shared in (("L5.moe.experts", False), ("L5.moe.shared", True)):
        up, act, down = (g.nodes[f"{prefix}.{p}"].op for p in ("up", "swiglu", "down"))
        assert isinstance(up, RoutedExperts) and (up.part, up.shared) == ("up", shared)
        assert isinstance(act, SwiGLU) and isinstance(down, RoutedExperts) and down.part == "down"
        assert prefix not in g.nodes
    assert isinstance(g.nodes["L29.kv_unpack"].op, Dequantize)
    assert isinstance(g.nodes["L29.attn"].op, SparseAttention)
    assert [e.src for e in g.inputs("L29.attn") if e.role == "main_kv"] == ["L29.kv_unpack"]


def test_single_pass_fuses_swiglu_and_unpack_under_the_old_ids():
    g = _compiled("single-pass").graph
    for prefix in ("L5.moe.experts", "L5.moe.shared"):
        op = g.nodes[prefix].op
        assert op.rule == "swiglu" and op.members == tuple(f"{prefix}.{p}" for p in ("up", "swiglu", "down"))
        assert not any(f"{prefix}.{p}" in g.nodes for p in ("up", "swiglu", "down"))
    attn = g.nodes["L29.attn"].op
    assert attn.rule == "kv_unpack" and attn.members == ("L29.kv_unpack", "L29.attn")
    assert "L29.kv_unpack" not in g.nodes
    # the fused attention reads the owner's FP4 storage directly, and Top-K once
    assert sorted((e.role, e.src, e.format) for e in g.inputs("L29.attn")) == [
        ("main_kv", "L20.store.main_kv", "v41_main_kv"), ("q", "L29.q_rope", "bf16"),
        ("swa_kv", "L29.store.swa", "v41_swa_kv"), ("topk", "L28.idx.score+", "i32")]
    assert g.annotation("kv")["L20.store.main_kv"].readers == tuple(sorted(f"L{l}.attn" for l in range(20, 40)))
    assert g.annotation("precision")["L5.moe.experts"].weight.dims == 3 * 5120 * 2304  # w1, w3 and w2


@cache
def _small(fusion, tp=1, ep=1):
    plan = Plan([Request.prefill(100)], fusion=fusion, tp=tp, ep=ep)
    return compile_graph(_model(), plan).graph, CostContext(_model(), plan)


def _act(g, ctx, *nids):
    return sum((node_cost(g, n, ctx) for n in nids), Cost()).byte("act_in"), \
        sum((node_cost(g, n, ctx) for n in nids), Cost()).byte("act_out")


def test_fused_experts_keep_their_internal_tensors_on_chip():
    # T = 100, top-6, inter 2304: up writes T·6·2·2304·2 = 5,529,600 B, SwiGLU T·6·2304·2 = 2,764,800 B;
    # unfused each is written once and read once, fused neither touches HBM
    (g, ctx), (f, fctx) = _small("unfused"), _small("single-pass")
    parts = [f"L5.moe.experts.{p}" for p in ("up", "swiglu", "down")]
    (ins, outs), (fins, fouts) = _act(g, ctx, *parts), _act(f, fctx, "L5.moe.experts")
    assert (ins - fins, outs - fouts) == (8_294_400, 8_294_400)
    assert (fins, fouts) == (100 * (5120 * 2 + 6 * 4), 100 * 5120 * 2)  # x and the route in, y out
    # shared expert (k = 1): 100 · (2·2304·2 + 2304·2) = 1,382,400 B each way
    parts = [f"L5.moe.shared.{p}" for p in ("up", "swiglu", "down")]
    (ins, outs), (fins, fouts) = _act(g, ctx, *parts), _act(f, fctx, "L5.moe.shared")
    assert (ins - fins, outs - fouts) == (1_382_400, 1_382_400)


def test_fused_attention_reads_fp4_entries_without_a_bf16_round_trip():
    # T = 100 on layer 3 (m = 2): Σ min(⌊(i+1)/2⌋, 512) = 2,500 selected entries × 512 bf16 values
    (g, ctx), (f, fctx) = _small("unfused"), _small("single-pass")
    unpack, attn, fused = (node_cost(g, "L3.kv_unpack", ctx), node_cost(g, "L3.attn", ctx),
                           node_cost(f, "L3.attn", fctx))
    assert unpack.byte("act_out") == 2_560_000                        # 2500 · 512 · 2 B
    assert fused.byte("kv_read") == unpack.byte("kv_read") + attn.byte("kv_read")
    assert unpack.byte("kv_read") == 720_000                          # 2500 FP4 entries × 288 B
    # the bf16 entries are neither written nor read back; the Top-K indices are read once
    assert unpack.byte("act_out") + unpack.byte("act_in") + attn.byte("act_in") - fused.byte("act_in") == \
        2 * 2_560_000 + 100 * 512 * 4
    assert fused.flops == (unpack + attn).flops


@pytest.mark.parametrize("tp, ep", [(1, 1), (1, 8), (2, 8)])
def test_fusion_conserves_total_flops(tp, ep):
    (g, ctx), (f, fctx) = _small("unfused", tp, ep), _small("single-pass", tp, ep)
    def total(graph, c):
        return sum((node_cost(graph, n, c) for n in graph.nodes), Cost())

    before, after = total(g, ctx), total(f, fctx)
    assert after.flops == before.flops
    assert after.byte("act_in") + after.byte("act_out") < before.byte("act_in") + before.byte("act_out")
    for cat in ("weights", "kv_read", "kv_write"):
        assert after.byte(cat) == before.byte(cat), cat


def test_every_module_keeps_its_members_per_gpu_share():
    # each covered op keeps its own share: routed SwiGLU over ep like its GEMMs, the unpack and the
    # index scoring over tp, Top-K / block-max / candidate selection replicated — fused or not
    (g, ctx), (f, fctx) = _small("unfused", 2, 8), _small("single-pass", 2, 8)
    modules = list(_fused(f).items())
    assert len(modules) == 77 + 56 + 8 + 80 + 38 + 40  # replay off: the mHC transform at 20 → 21 fuses too
    for nid, op in modules:
        assert node_cost(f, nid, fctx).flops == sum((node_cost(g, m, ctx) for m in op.members), Cost()).flops, nid


@pytest.mark.parametrize("requests", [(Request.prefill(100),), (Request.prefill(5000),), (Request.decode(8192),),
                                      (Request.prefill(1000), Request.decode(4096, copies=8))])
def test_single_pass_schedule_never_slower_than_unfused(requests):
    times = {f: compile(_model(), Plan(requests, fusion=f), "h200").report("schedule").total_time_s
             for f in ("unfused", "single-pass")}
    assert times["single-pass"] <= times["unfused"]


def test_module_writes_keep_their_formats():
    # a fused module writes each escaping output in its own format: the Top-K indices as i32,
    # the mHC residual and sublayer input as bf16; the candidate pool is cache traffic, not a write
    g, _ = _small("single-pass")
    assert g.nodes["L20.idx.score+"].op.writes == ((512, "i32"),)
    assert g.nodes["L3.hc_attn.mega"].op.writes == ((5120, "bf16"), (20480, "bf16"))
