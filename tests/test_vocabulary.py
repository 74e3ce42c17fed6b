"""The vocabulary is listed from the code (costs/vocabulary.py) and docs/vocabulary.md is rendered
from it; friendly format aliases resolve to canonical formats or fail naming the choices."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

import v41graph
from v41graph import GraphError
from v41graph.ir.ops import Gemm, Quantize
from v41graph.render.vocabulary_doc import vocabulary_markdown

DOC = Path(__file__).resolve().parents[1] / "docs" / "vocabulary.md"


def test_docs_vocabulary_is_generated_from_the_code():
    assert DOC.read_text(encoding="utf-8") == vocabulary_markdown(), \
        "run: python -m v41graph.render.vocabulary_doc > docs/vocabulary.md"


def test_formats_list_every_storage_format_with_bytes_per_value():
    f = v41graph.formats()
    # by hand: payload bytes + one scale byte over the values it covers
    assert f["bf16"] == 2 and f["fp32"] == 4 and f["fp8_e4m3"] == 1 and f["i32"] == 4
    assert f["fp8_e4m3_b32x32"] == 1 + Fraction(1, 32 * 32) and f["fp8_e4m3_g32"] == 1 + Fraction(1, 32)
    assert f["fp4_e2m1_ue8m0_g32"] == Fraction(1, 2) + Fraction(1, 32)
    assert f["fp4_e2m1_e4m3_g16"] == Fraction(1, 2) + Fraction(1, 16)
    assert f["v41_main_kv"] == Fraction(288, 512) and f["v41_swa_kv"] == Fraction(528, 512)
    assert f["v4_kv"] == Fraction(584, 512) and f["index_k_fp4"] == Fraction(68, 128)
    assert len(f) == 13


def test_aliases_resolve_or_fail_with_the_list():
    assert Gemm("x", 8, 8, "fp8").weight_format == "fp8_e4m3"
    assert Gemm("x", 8, 8, "fp4").weight_format == "fp4_e2m1_ue8m0_g32"
    assert Gemm("x", 8, 8, "bf16").weight_format == "bf16"
    assert Quantize(8, "nvfp4").format == "fp4_e2m1_e4m3_g16"
    assert Gemm("x", 8, 8, "fp8") == Gemm("x", 8, 8, "fp8_e4m3")  # one payload, one cost key
    with pytest.raises(GraphError, match=r"unknown storage format 'fp6' \(formats: bf16, fp32, .*fp8_e4m3_b32x32.*"
                                         r"aliases: fp8 → fp8_e4m3"):
        Gemm("x", 8, 8, "fp6")
    assert v41graph.extend.format_aliases()["mxfp4"] == "fp4_e2m1_ue8m0_g32"


def test_kinds_roles_and_precisions():
    kinds = v41graph.extend.op_kinds()
    assert {"Gemm", "Norm", "SparseAttention", "Communication", "GraphInput"} <= set(kinds)
    roles = v41graph.extend.edge_roles()
    assert {"x", "main_kv", "topk", "swa_kv", "index_k", "coeff"} <= set(roles)
    assert v41graph.extend.precisions() == ("fp4", "fp8", "bf16", "tf32", "fp32")
