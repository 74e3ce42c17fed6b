"""Precision annotation pass (SPEC §4.1): role × storage format × compute precision → bytes.

Golden values are literals worked out by hand from SPEC §1.4 / §4.1: main KV 512 × (1/2 + 1/16)
= 288 B, index K 128 × (1/2 + 1/32) = 68 B, SWA KV 512 × (1 + 1/32) = 528 B (512 payload),
experts FP4 with a ue8m0 scale per 32 = 17/32 B per value, FP8 weights with one scale per
32×32 block = 1 + 1/1024 B per value, Engram rows 256 × (1 + 1/32) = 264 B.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from v41graph import GraphError, Plan, Request, load_model, lower
from v41graph.model.formats import LAYOUTS, bytes_per_value
from v41graph.passes import PassContext, compile_graph
from v41graph.passes.precision import PrecisionAnnotation


@pytest.fixture(scope="module")
def compiled():
    # 'unfused' keeps every original node id (the golden nodes below are fusion members otherwise)
    return compile_graph(load_model(), Plan([Request.prefill(1000)], fusion="unfused"))


@pytest.fixture(scope="module")
def table(compiled):
    return compiled.graph.annotation("precision")


def _output(table, nid, role):
    (t,) = [t for t in table[nid].outputs if t.role == role]
    return t


def _input(table, nid, role):
    (t,) = [t for t in table[nid].inputs if t.role == role]
    return t


@pytest.mark.parametrize("nid", ["L20.cmp.write", "L2.cmp.write"])
def test_main_kv_entry_is_288_bytes(table, nid):
    t = _output(table, nid, "main_kv")
    assert t.dims == 512
    assert t.bytes_per_value == Fraction(9, 16)
    assert t.bytes_per_token == 288
    assert t.scale_layout == "e4m3/16"


def test_index_k_entry_is_68_bytes(table):
    t = _output(table, "L2.idx.k_write", "index_k")
    assert (t.dims, t.bytes_per_token) == (128, 68)
    assert t.bytes_per_value == Fraction(17, 32)


def test_swa_entry_is_528_bytes_with_512_payload(table):
    t = _output(table, "L2.swa_write", "swa_kv")
    assert (t.dims, t.bytes_per_token) == (512, 528)
    assert LAYOUTS["v41_swa_kv"].payload_bytes == 512
    assert LAYOUTS["v41_swa_kv"].bytes == 528


def test_expert_weights_are_fp4_with_a_scale_per_32(table):
    p = table["L5.moe.experts.up"]
    assert p.weight.dims == 2 * 5120 * 2304  # w1 and w3; the down GEMM holds w2
    assert table["L5.moe.experts.down"].weight.dims == 5120 * 2304
    assert table["L5.moe.experts.swiglu"].weight is None and table["L5.moe.experts.swiglu"].compute == "bf16"
    assert p.weight.bytes_per_value == Fraction(17, 32)
    assert p.weight.bytes_per_value == 0.53125
    assert p.weight.format == "fp4_e2m1_ue8m0_g32"
    assert p.compute == "fp4"


def test_linear_weights_are_fp8_with_a_scale_per_32x32_block(table):
    p = table["L5.wq_a"]
    assert p.weight.bytes_per_value == 1 + Fraction(1, 1024)
    assert p.weight.bytes_per_value == Fraction(1025, 1024)
    assert p.weight.scale_layout == "ue8m0/1024"
    assert p.weight.dims == 5120 * 1280
    assert p.compute == "fp8"


def test_engram_rows_are_264_bytes_per_256_values(table):
    t = _input(table, "L1.engram.lookup", "table")
    assert t.format == "fp8_e4m3_g32"
    assert bytes_per_value(t.format) * 256 == 264
    assert t.bytes_per_value == Fraction(33, 32)


@pytest.mark.parametrize("nid", ["L3.attn", "L20.attn", "L29.attn"])
def test_attention_computes_in_bf16_although_its_kv_is_fp4(table, nid):
    p = table[nid]
    assert p.compute == "bf16"  # FP4 KV is dequantised before attention: compute, not an FP4 GEMM
    assert p.weight is None
    # the unpack reads the 288 B FP4 entries and hands attention 512 bf16 values (1,024 B)
    unpack = nid.replace(".attn", ".kv_unpack")
    assert _input(table, unpack, "main_kv").bytes_per_token == 288
    assert table[unpack].compute == "bf16" and table[unpack].weight is None
    assert _input(table, nid, "main_kv").bytes_per_token == 1024


def test_storage_nodes_have_no_compute(table):
    assert table["L20.store.main_kv"].compute == "none"
    assert table["L2.store.swa"].compute == "none"


def test_unknown_format_raises():
    with pytest.raises(GraphError, match="'nope'"):
        bytes_per_value("nope")


def test_every_node_is_annotated_and_nothing_else_changes(compiled):
    lowered, result = lower(load_model(), Plan([Request.prefill(1000)], fusion="unfused")), compiled.passes[0]
    assert result.name == "precision"
    assert result.graph.nodes == lowered.nodes and result.graph.edges == lowered.edges
    assert set(result.graph.annotation("precision")) == set(lowered.nodes)
    assert result.report.nodes == 1321 == len(result.graph.nodes)
    assert result.changed == 1321
    assert set(result.report.formats) >= {"v41_main_kv", "v41_swa_kv", "index_k_fp4", "fp8_e4m3_g32"}


def test_precision_pass_is_idempotent(compiled):
    model, graph = load_model(), compiled.passes[0].graph
    again = PrecisionAnnotation()(graph, PassContext(model, Plan([Request.prefill(1000)], fusion="unfused")))
    assert again.changed == 0
    assert again.graph.nodes == graph.nodes and again.graph.edges == graph.edges
