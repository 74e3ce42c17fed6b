"""Replay tail pruning pass (SPEC §2.2, §4.2): bounded replay applied to every node's rows.

Token×layer totals are literals worked out by hand from SPEC §2.2 — SGLang cut (tail from layer
21): 21N + 19·min(N, 128); paper cut (tail from 20): 20N + 20·min(N, 128); no replay: 40N —
never recomputed with the formula the code uses.
"""

from __future__ import annotations

from functools import cache

from helpers import PREFILL_TOKEN_LAYERS
import pytest
import sympy

from v41graph import Plan, Request, load_model
from v41graph.model.inventory import inventory
from v41graph.ir.ops import Gemm
from v41graph.passes import PassContext, compile_graph
from v41graph.passes.replay import ReplayPruning, token_layers
from v41graph.symbols import N


@cache
def _model():
    return load_model()


@cache
def _compiled(requests: tuple[Request, ...], **policies):
    # 'unfused' keeps the default pipeline cheap; fusion never changes rows (checked below)
    policies.setdefault("fusion", "unfused")
    return compile_graph(_model(), Plan(requests, **policies))


def _prefill(n, **policies):
    return _compiled((Request.prefill(n),), **policies)




@pytest.mark.parametrize("n", sorted(PREFILL_TOKEN_LAYERS))
def test_prefill_token_layers(n):
    sglang, off, paper = PREFILL_TOKEN_LAYERS[n]
    assert token_layers(_prefill(n, decoder_replay="bounded").graph) == sglang
    assert token_layers(_prefill(n, decoder_replay="off").graph) == off
    assert token_layers(_prefill(n, decoder_replay="bounded", replay_cut="paper").graph) == paper


@pytest.mark.parametrize("n", sorted(PREFILL_TOKEN_LAYERS))
def test_report_matches_the_graph(n):
    sglang, off, _ = PREFILL_TOKEN_LAYERS[n]
    report = _prefill(n, decoder_replay="bounded").report("replay")
    assert (report.token_layers_before, report.token_layers_after) == (off, sglang)
    assert report.tokens_pruned == off - sglang


def test_fusion_does_not_change_token_layers():
    fused = compile_graph(_model(), Plan([Request.prefill(5000)], decoder_replay="bounded", fusion="single-pass"))
    assert token_layers(fused.graph) == 107432


def test_symbolic_prefill_closed_forms():
    bounded = token_layers(_prefill(N, decoder_replay="bounded").graph)
    assert sympy.simplify(bounded - (21 * N + 19 * sympy.Min(N, 128))) == 0
    paper = token_layers(_prefill(N, decoder_replay="bounded", replay_cut="paper").graph)
    assert sympy.simplify(paper - (20 * N + 20 * sympy.Min(N, 128))) == 0
    assert sympy.simplify(token_layers(_prefill(N).graph) - 40 * N) == 0


def test_symbolic_agrees_with_numbers_at_the_boundaries():
    bounded = token_layers(_prefill(N, decoder_replay="bounded").graph)
    for n, (sglang, _, _) in PREFILL_TOKEN_LAYERS.items():
        assert bounded.subs(N, n) == sglang


def test_rows_before_and_after_the_sglang_cut():
    g = _prefill(1000, decoder_replay="bounded").graph
    (r20,) = g.nodes["L20.wq_a"].rows
    (r21,) = g.nodes["L21.wq_a"].rows
    assert (r20.q_start, r20.q_end) == (0, 1000)  # the last KV source stays full
    assert (r21.q_start, r21.q_end, r21.swa_start) == (872, 1000, 872)
    # the owner's compressor still projects every token (global KV stays complete)
    (c20,) = g.nodes["L20.cmp.wkv"].rows
    assert (c20.kv_start, c20.kv_end) == (0, 1000)


# --------------------------------------------------------------------------- batches


BATCH = (1, 127, 128, 129, 5000)  # Σ = 5385; Σ min(n, 128) = 1 + 127 + 128 + 128 + 128 = 512


def test_tails_are_per_request_and_summed():
    g = _compiled(tuple(Request.prefill(n) for n in BATCH), decoder_replay="bounded").graph
    assert token_layers(g) == 122813  # 21·5385 + 19·512 = 113085 + 9728
    assert token_layers(g) == 40 + 5080 + 5120 + 5141 + 107432  # the per-request literals above
    off = _compiled(tuple(Request.prefill(n) for n in BATCH), decoder_replay="off").graph
    assert token_layers(off) == 215400  # 40 · 5385


def test_decode_tokens_traverse_all_40_layers_in_a_mixed_batch():
    requests = tuple(Request.prefill(n) for n in BATCH) + (Request.decode(4096), Request.decode(17))
    g = _compiled(requests, decoder_replay="bounded").graph
    assert token_layers(g) == 122893  # 122813 + 2 × 40
    (row,) = [r for r in g.nodes["L39.attn"].rows if r.request == 5]
    assert (row.q_start, row.q_end) == (4096, 4097)


def test_decode_only_plan_is_unchanged():
    c = _compiled((Request.decode(4096), Request.decode(100_000)), decoder_replay="bounded")
    result = c.passes[1]
    assert result.name == "replay" and result.changed == 0
    assert result.report.rows_changed == 0
    assert token_layers(c.graph) == 80
    assert result.graph.nodes == c.passes[0].graph.nodes


# --------------------------------------------------------------------------- weights


def test_weights_are_a_property_of_the_model():
    on = _prefill(5000, decoder_replay="bounded")
    off = _prefill(5000, decoder_replay="off")
    assert inventory(_model()).total_bytes == 511759675736  # resident, whatever the plan
    gemms = {nid: n.op for nid, n in on.graph.nodes.items() if isinstance(n.op, Gemm)}
    assert len(gemms) == 230
    assert gemms == {nid: n.op for nid, n in off.graph.nodes.items() if isinstance(n.op, Gemm)}
    assert on.graph.annotation("precision") == off.graph.annotation("precision")


def test_rows_change_only_when_bounded():
    # the tail layers 21–39 rewrite their nodes' rows: 499 before the expert split and the unpack, which
    # add 5 nodes to each of the 19 layers (expert up/swiglu/down twice instead of two ops, kv_unpack)
    assert _prefill(5000, decoder_replay="bounded").report("replay").rows_changed == 594
    assert _prefill(5000, decoder_replay="off").report("replay").rows_changed == 0
    assert _prefill(5000, decoder_replay="off").passes[1].changed == 0
    # a prompt inside the window has nothing to prune
    assert _prefill(128, decoder_replay="bounded").report("replay").rows_changed == 0


def test_replay_pass_is_idempotent():
    c = _prefill(5000, decoder_replay="bounded")
    again = ReplayPruning()(c.passes[1].graph, PassContext(_model(), Plan([Request.prefill(5000)],
                                                                      decoder_replay="bounded", fusion="unfused")))
    assert again.changed == 0
    assert again.graph.nodes == c.passes[1].graph.nodes


# --------------------------------------------------------------------------- encoder restore


def test_encoder_restore_replays_the_last_128_prefix_tokens():
    # prefix 1001 with its SWA state lost, 50 new tokens: every layer, encoder and decoder, runs
    # 128 + 50 = 178 tokens (the replayed prefix writes SWA only); issue 10, D4: the decoder
    # layers see the replayed rows, so their rings are full for the next decode step.
    c = _compiled((Request.extend(1001, 50, swa_cached=False),), encoder_restore="bounded")
    g = c.graph
    for layer in range(40):
        (row,) = g.nodes[f"L{layer}.attn"].rows
        assert (row.tokens, row.q_start, row.q_end, row.restored) == (178, 873, 1051, 128), layer
    assert token_layers(g) == 40 * (128 + 50)
    # the embedding runs over the replayed rows too (they are processed again from the input)
    (row,) = g.nodes["embed"].rows
    assert (row.q_start, row.q_end) == (1001 - 128, 1051)
    assert c.report("replay").token_layers_before == 2000  # 40 × 50


def test_encoder_restore_completes_the_straddling_group_at_owners():
    # prefix 1001 mod 2 = 1: the owner re-projects that one prefix token into compressor state
    (row,) = _compiled((Request.extend(1001, 50, swa_cached=False),), encoder_restore="bounded") \
        .graph.nodes["L2.cmp.wkv"].rows
    assert (row.kv_start, row.kv_end) == (1000, 1051)


# --------------------------------------------------------------------------- the report's two directions


def test_encoder_restore_reports_tokens_added_not_negative_pruned(capsys):
    # issue 38, item 7: was tokens_pruned = -5120. Every layer replays min(1000, 128) = 128 prefix
    # tokens: 40 × 128 = 5120 token×layers added; no new token is removed.
    from helpers import run_json
    d = run_json(capsys, "compile", "--extend", "1000:500", "--swa-lost", "--encoder-restore", "bounded",
                 "--tp", "1")  # one GPU's graph (the auto mapping, 8 GPUs, holds more rows)
    (report,) = [p["report"] for p in d["passes"] if p["name"] == "replay"]
    assert report == {"token_layers_before": 20000, "token_layers_after": 25120, "rows_changed": 1318,
                      "tokens_added": 5120, "tokens_pruned": 0}


def test_decoder_replay_prunes_and_adds_nothing():
    report = _prefill(5000, decoder_replay="bounded").report("replay")
    assert (report.tokens_pruned, report.tokens_added) == (92568, 0)  # 40·5000 − 107432


def test_both_policies_report_both_directions():
    # prefix 8000 with its SWA state lost, 500 new tokens, SGLang cut: layers 0–20 add the 128
    # replayed prefix tokens (21 × 128); layers 21–39 keep the last 128 positions, all new, so
    # they add none and drop 500 − 128 new tokens each (19 × 372). Net: 7068 − 2688 = 4380.
    c = _compiled((Request.extend(8000, 500, swa_cached=False),), encoder_restore="bounded",
                  decoder_replay="bounded")
    r = c.report("replay")
    assert (r.tokens_added, r.tokens_pruned) == (2688, 7068)
    assert r.token_layers_before - r.token_layers_after == 4380 == r.tokens_pruned - r.tokens_added


def test_symbolic_reports_agree_with_numbers_and_are_never_negative():
    sym = _compiled((Request.extend(N, 50, swa_cached=False),), encoder_restore="bounded",
                    decoder_replay="bounded").report("replay")
    for n in (1, 77, 78, 128, 129, 5000):
        num = _compiled((Request.extend(n, 50, swa_cached=False),), encoder_restore="bounded",
                        decoder_replay="bounded").report("replay")
        assert (sympy.sympify(sym.tokens_added).subs(N, n), sympy.sympify(sym.tokens_pruned).subs(N, n)) \
            == (num.tokens_added, num.tokens_pruned)
        assert num.tokens_added >= 0 and num.tokens_pruned >= 0
