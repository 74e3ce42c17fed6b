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

from v41graph import PlanError, Plan, Request, load_model, verify
from v41graph.ops import Fused, MhcCoefficients, MhcCollapse, MhcExpand, Norm, SparseAttention
from v41graph.passes import Context, compile_graph
from v41graph.passes.fusion import Fusion
from v41graph.traffic import activation_elements, unfused_elements

MEGA = ("L3.hc_attn.expand", "L3.hc_ffn.coeff", "L3.hc_ffn.collapse", "L3.ffn_norm")
INDEX_SOURCES = (2, 8, 14, 20, 24, 28, 32, 36)


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
    # bounded replay also keeps L20's (its next sublayer runs only the tail) = 76
    assert _compiled("single-pass").report("fusion").groups == {"mhc": 76, "quant": 56, "score_topk": 8}
    assert _compiled("single-pass", "off").report("fusion").groups == {"mhc": 77, "quant": 56, "score_topk": 8}
    assert _compiled("single-pass").report("fusion").nodes_removed == 294  # 76·3 + 56·1 + 7·1 + 1·3
    assert _compiled("single-pass").passes[3].changed == 294


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
    for nid in before.nodes:
        assert (nid in after.nodes) != (nid in members), nid  # kept, or covered exactly once
    assert set(after.nodes) - set(before.nodes) == set(fused)  # the only new ids are modules
    assert len(before.nodes) - len(after.nodes) == 294


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
    assert isinstance(g.nodes[f"L{layer}.attn"].op, SparseAttention)


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
    # golden values of this graph (regression), with the order the profiles must keep
    report = _compiled("single-pass").report("fusion")
    assert (report.elements_before, report.elements_after) == (8_125_715, 4_122_880)
    two = _compiled("two-pass").report("fusion")
    assert two.elements_before == 8_125_715
    assert report.elements_after < two.elements_after < two.elements_before


@pytest.mark.parametrize("fusion", ["two-pass", "single-pass"])
def test_fusion_is_idempotent(fusion):
    c = _compiled(fusion)
    again = Fusion()(c.graph, Context(_model(), Plan([Request.prefill(5000)], decoder_replay="bounded",
                                                     fusion=fusion)))
    assert again.changed == 0 and again.report.nodes_removed == 0
    assert again.graph.nodes == c.graph.nodes and again.graph.edges == c.graph.edges
