"""Plan-level memory counts sequences (issue 10, D1 and D2): ``copies`` multiply every cache, and
the chunks of one prompt fill one cache.

Hand arithmetic for V4.1-Flash: owners 2, 8, 14 keep ⌊N/2⌋ entries, owner 20 keeps N; each entry
is 288 B of main KV + 68 B of index K = 356 B. A SWA ring entry is 528 B, 128 per layer.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from v41graph import Plan, Request, load_model
from v41graph.analysis.symbolic.query import closed_form
from v41graph.errors import PlanError
from v41graph.passes import compile_graph
from v41graph.symbols import B, L

from helpers import run_json


@cache
def _model():
    return load_model()


def _global(n: int) -> int:
    return (3 * (n // 2) + n) * 356


def _kv(*requests, **policies):
    compiled = compile_graph(_model(), Plan(list(requests), **policies))
    return compiled.report("kv_dedup"), compiled.graph.annotation("kv")


def test_copies_multiply_global_kv():
    report, _ = _kv(Request.decode(8192, copies=64))
    # a decode at context 8192 holds 8193 tokens afterwards: (3 · 4096 + 8193) · 356 = 7,291,236 per sequence
    assert _global(8193) == 7_291_236
    assert report.global_bytes == 64 * 7_291_236 == 466_639_104
    assert report.naive_global_bytes == 64 * (18 * (8193 // 2) + 20 * 8193) * 356


def test_copies_multiply_swa_rings_and_owner_storage():
    _, kv = _kv(Request.decode(8192, copies=64))
    assert kv["L0.store.swa"].bytes == 64 * 128 * 528
    assert kv["L39.store.swa"].bytes == 64 * 128 * 528
    assert kv["L2.store.main_kv"].bytes == 64 * (8193 // 2) * 288
    assert kv["L20.store.index_k"].bytes == 64 * 8193 * 68


def test_kv_bytes_formula_carries_the_batch():
    cf = closed_form(_model(), Plan([Request.decode(L, copies=B)]), "kv_bytes")
    assert B in cf.expr.free_symbols and L in cf.expr.free_symbols
    assert cf(B=64, L=8192) == 64 * _global(8193)
    assert cf(B=1, L=8192) == _global(8193)
    assert cf(B=3, L=1) == 3 * _global(2)


def test_cli_kv_bytes_formula_has_b(capsys):
    data = run_json(capsys, "formula", "kv_bytes", "--decode", "B:L")
    assert "B" in data["symbols"] and "L" in data["symbols"]


def test_ten_chunks_of_one_prompt_hold_one_cache():
    report, kv = _kv(*[Request.chunk(1000, s, 100) for s in range(0, 1000, 100)])
    # one 1,000-token prompt: (3 · 500 + 1000) · 356 = 890,000 B, not ten partial caches
    assert report.global_bytes == _global(1000) == 890_000
    assert kv["L0.store.swa"].bytes == 128 * 528  # one ring per layer, not ten
    one, _ = _kv(Request.prefill(1000))
    assert report.global_bytes == one.global_bytes


def test_two_chunked_prompts_need_their_own_seq():
    chunks = [Request.chunk(1000, s, 500, seq=name) for name in ("a", "b") for s in (0, 500)]
    report, _ = _kv(*chunks)
    assert report.global_bytes == 2 * 890_000
    with pytest.raises(PlanError, match=r"requests 0 and 2 both process positions \[0, 500\) of sequence "
                                        r"\('prompt', 1000\); give each prompt its own seq="):
        Plan([Request.chunk(1000, 0, 500), Request.chunk(1000, 500, 500), Request.chunk(1000, 0, 500)])


def test_a_sequence_holds_its_furthest_position():
    # a prompt's last chunk and the decode after it, tied by seq: one cache of 1001 tokens
    report, _ = _kv(Request.chunk(1000, 500, 500, seq=7), Request.decode(1000, seq=7))
    assert report.global_bytes == _global(1001)
    plan = Plan([Request.prefill(10), Request.chunk(1000, 0, 500), Request.decode(64), Request.chunk(1000, 500, 500)])
    assert [plan.sequence_of(i) for i in range(4)] == [0, 1, 2, 1]
    assert [(s.requests, s.end) for s in plan.sequences()] == [((0,), 10), ((1, 3), 1000), ((2,), 65)]


def test_a_sequence_has_one_copies():
    with pytest.raises(PlanError, match="requests 0 and 1 of sequence \\('seq', 's'\\) have copies 2 and 1"):
        Plan([Request.decode(100, copies=2, seq="s"), Request.decode(200, seq="s")])


@settings(max_examples=15, deadline=None)
@given(n=st.integers(min_value=1, max_value=5000), size=st.integers(min_value=1, max_value=5000),
       copies=st.integers(min_value=1, max_value=8))
def test_any_chunking_holds_one_prompts_cache(n, size, copies):
    """Chunks of one prompt hold what the whole prompt holds; ``copies`` decodes hold copies caches."""
    chunks = [Request.chunk(n, s, min(size, n - s)) for s in range(0, n, size)]
    report, kv = _kv(*chunks, Request.decode(n, copies=copies))
    assert report.global_bytes == _global(n) + copies * _global(n + 1)
    assert kv["L7.store.swa"].bytes == (min(n, 128) + copies * min(n + 1, 128)) * 528
