"""Encoder bounded replay reaches the decoder; the last chunk's tail is the prompt's; an owner's
input counts both its queries and its compressor tokens (issue 10, D4, D5, C5).

Hand arithmetic: W = 128. An extend of P = 1000 cached + S = 50 new tokens with its SWA state
lost replays [1000 − 128, 1000) = [872, 1000) with the 50 new tokens: 178 rows per layer.
Σ_{u=1..n} min(u, W) SWA pairs = W(W+1)/2 + W(n − W) for n ≥ W.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from v41graph import GraphError, Plan, Request, load_model
from v41graph.ir.ledger import ledger
from v41graph.extend import verify
from v41graph.costs.counts import CostContext, tokens, window_pairs
from v41graph.costs.node import node_cost
from v41graph.passes import compile_graph


@cache
def _model():
    return load_model()


def _pairs(n: int, w: int = 128) -> int:
    return sum(min(u, w) for u in range(1, n + 1))


LOST = Plan([Request.extend(1000, 50, swa_cached=False)], encoder_restore="bounded")
KEPT = Plan([Request.extend(1000, 50)], encoder_restore="bounded")


def test_decoder_layers_see_the_replayed_rows():
    led = ledger(_model(), LOST)
    for layer in (0, 19, 20, 21, 30, 39):
        row = led.row(0, layer)
        assert (row.q_start, row.q_end, row.swa_start, row.restored) == (1000 - 128, 1000 + 50, 1000 - 128, 128)
    # the replayed tokens write no global KV: the m = 1 owner at 20 projects the 50 new tokens only
    assert (led.row(0, 20).kv_start, led.row(0, 20).kv_end, led.row(0, 20).new_entries(1)) == (1000, 1050, 50)
    assert led.token_layers() == 40 * (128 + 50)


def test_the_next_decode_step_finds_full_rings():
    # every layer wrote SWA KV for the last 128 positions [922, 1050), with and without decoder replay
    for plan in (LOST, LOST.with_policies(decoder_replay="bounded")):
        led = ledger(_model(), plan)
        for layer in range(40):
            row = led.row(0, layer)
            assert row.q_start <= 1050 - 128 and row.q_end == 1050, (plan.decoder_replay, layer)


def test_decoder_replay_takes_its_tail_over_the_combined_rows():
    led = ledger(_model(), LOST.with_policies(decoder_replay="bounded"))
    assert (led.row(0, 20).q_start, led.row(0, 20).tokens) == (872, 178)
    assert (led.row(0, 21).q_start, led.row(0, 21).swa_start, led.row(0, 21).tokens) == (1050 - 128, 922, 128)
    assert led.token_layers() == 21 * 178 + 19 * 128


def test_l30_reads_no_fewer_swa_keys_with_the_state_lost():
    lost_rows = compile_graph(_model(), LOST).graph.nodes["L30.attn"].rows
    kept_rows = compile_graph(_model(), KEPT).graph.nodes["L30.attn"].rows
    # kept: 50 queries each see a full window; lost: 178 queries from the replay start
    assert window_pairs(kept_rows, 128) == 50 * 128 == 6400
    assert window_pairs(lost_rows, 128) == _pairs(178) == 128 * 129 // 2 + 128 * 50 == 14656


@pytest.mark.parametrize("fusion", ["unfused", "single-pass"])
def test_l30_attention_bytes_with_the_state_lost_are_not_lower(fusion):
    def attn_bytes(plan):
        plan = plan.with_policies(fusion=fusion)
        compiled = compile_graph(_model(), plan)
        return node_cost(compiled.graph, "L30.attn", CostContext(_model(), plan))

    lost, kept = attn_bytes(LOST), attn_bytes(KEPT)
    assert lost.byte("kv_read") >= kept.byte("kv_read")
    assert lost.total_bytes >= kept.total_bytes


def test_embedding_runs_over_the_replayed_rows():
    (row,) = compile_graph(_model(), LOST).graph.nodes["embed"].rows
    assert (row.q_start, row.q_end) == (872, 1050)


# --------------------------------------------------------------------------- D5: chunk_tail='last'


CHUNKS = [Request.chunk(1000, 0, 990), Request.chunk(1000, 990, 10)]


def test_last_chunk_takes_the_prompts_tail_across_chunks():
    plan = Plan(CHUNKS, decoder_replay="bounded", encoder_restore="bounded", chunk_tail="last")
    led = ledger(_model(), plan)
    # the unchunked prompt: 21 · 1000 + 19 · min(1000, 128)
    assert led.token_layers() == 21 * 1000 + 19 * 128 == 23432
    assert ledger(_model(), Plan([Request.prefill(1000)], decoder_replay="bounded")).token_layers() == 23432
    assert (led.row(1, 21).q_start, led.row(1, 21).q_end, led.row(1, 21).swa_start) == (1000 - 128, 1000, 872)
    assert led.row(0, 21).tokens == 0
    compile_graph(_model(), plan)  # verify() between passes: the tail reads rows the first chunk produced


def test_a_last_chunk_alone_reads_its_prompts_history():
    plan = Plan([Request.chunk(1000, 990, 10)], decoder_replay="bounded", chunk_tail="last")
    led = ledger(_model(), plan)
    assert led.token_layers() == 21 * 10 + 19 * 128
    compile_graph(_model(), plan)  # positions before 990 are state the earlier forward left


def test_chunk_tail_every_is_unchanged():
    led = ledger(_model(), Plan(CHUNKS, decoder_replay="bounded"))
    assert led.token_layers() == 21 * 1000 + 19 * (128 + 10)


# --------------------------------------------------------------------------- C5: producer and consumer agree


PAPER = Plan([Request.prefill(8192)], decoder_replay="bounded", replay_cut="paper", fusion="unfused")


def test_paper_cut_owner_input_counts_every_token():
    compiled = compile_graph(_model(), PAPER)
    ctx, nodes = CostContext(_model(), PAPER), compiled.graph.nodes
    counted = {n: tokens(nodes[n], ctx) for n in ("L20.hc_attn.collapse", "L20.attn_norm", "L20.cmp.wkv",
                                                   "L20.wq_a", "L20.attn", "L19.attn_norm")}
    assert counted == {"L20.hc_attn.collapse": 8192, "L20.attn_norm": 8192, "L20.cmp.wkv": 8192,
                       "L20.wq_a": 128, "L20.attn": 128, "L19.attn_norm": 8192}
    # the pre-norm's flops follow: 4 flops per value, 5120 values, 8192 tokens
    assert node_cost(compiled.graph, "L20.attn_norm", ctx).flop("fp32") == 4 * 8192 * 5120


def test_sglang_cut_owner_input_is_unchanged():
    plan = PAPER.with_policies(replay_cut="sglang")
    compiled = compile_graph(_model(), plan)
    assert tokens(compiled.graph.nodes["L20.attn_norm"], CostContext(_model(), plan)) == 8192
    assert tokens(compiled.graph.nodes["L21.attn_norm"], CostContext(_model(), plan)) == 128


def test_verify_catches_a_consumer_counting_more_than_its_producer():
    g = compile_graph(_model(), PAPER).graph
    verify(g)
    # the defect as filed: the pre-norm charged for the 128 query tokens while its compressor consumes 8192
    broken = g.with_nodes([replace(n, count="q") if n.id == "L20.attn_norm" else n for n in g.nodes.values()])
    with pytest.raises(GraphError, match=r"'L20.cmp.wkv' \(kv count\) consumes positions \[0, 8192\) of seq 0 "
                                         r"from 'L20.attn_norm' \(x\), which is charged for \[8064, 8192\)"):
        verify(broken)


def test_verify_catches_a_row_mismatch():
    g = compile_graph(_model(), Plan([Request.prefill(1000)], fusion="unfused")).graph
    short = tuple(replace(r, q_start=500) for r in g.nodes["L5.wq_a"].rows)
    broken = g.with_nodes([replace(n, rows=short) if n.id == "L5.wq_a" else n for n in g.nodes.values()])
    with pytest.raises(GraphError, match=r"'L5.q_norm' \(q count\) consumes positions \[0, 1000\) .* charged "
                                         r"for \[500, 1000\)"):
        verify(broken)


def test_l30_kv_read_figures():
    """Single-pass (kv_unpack fused into attention): SWA pairs × 528 B + selected entries × 288 B."""
    def kv_read(plan):
        compiled = compile_graph(_model(), plan)
        return node_cost(compiled.graph, "L30.attn", CostContext(_model(), plan)).byte("kv_read")

    # kept: 50 queries × 128 SWA keys, 50 × 512 selected entries (every query sees > 512 of owner 20's)
    assert kv_read(KEPT) == 50 * 128 * 528 + 50 * 512 * 288 == 10_752_000
    # lost: 178 queries from the replay start; each of positions 872.. sees > 512 entries
    assert kv_read(LOST) == _pairs(178) * 528 + 178 * 512 * 288 == 33_985_536
