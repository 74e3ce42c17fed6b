"""Per-request, per-layer token ledgers and the two bounded-replay policies (SPEC §2.2–2.3, §4.2).

Expected token×layer totals are literals worked out by hand from SPEC §2.2 (SGLang cut:
21N + 19·min(N, 128); paper cut: 20N + 20·min(N, 128); no replay: 40N), never recomputed
with the formula the code uses. The property tests check that the symbolic ledger (built with
``v41graph.symbols``) equals the numeric one at random points.
"""

from __future__ import annotations

from functools import cache

from helpers import PREFILL_TOKEN_LAYERS
from hypothesis import given, settings, strategies as st
import pytest
import sympy

from v41graph import Plan, Request, load_model
from v41graph.ir.ledger import ledger
from v41graph.symbols import N, P, S


def _prefill(model, n, **policies):
    return ledger(model, Plan([Request.prefill(n)], **policies))


# --------------------------------------------------------------------------- one prefill




@pytest.mark.parametrize("n", sorted(PREFILL_TOKEN_LAYERS))
def test_prefill_token_layers_at_the_window_boundaries(flash, n):
    sglang, off, paper = PREFILL_TOKEN_LAYERS[n]
    assert _prefill(flash, n, decoder_replay="bounded").token_layers() == sglang
    assert _prefill(flash, n).token_layers() == off
    assert _prefill(flash, n, decoder_replay="off").token_layers() == off
    assert _prefill(flash, n, decoder_replay="bounded", replay_cut="paper").token_layers() == paper


def test_prefill_closed_forms(flash):
    assert _prefill(flash, N, decoder_replay="bounded").token_layers() == 21 * N + 19 * sympy.Min(N, 128)
    assert _prefill(flash, N, decoder_replay="bounded", replay_cut="paper").token_layers() == \
        20 * N + 20 * sympy.Min(N, 128)
    assert _prefill(flash, N).token_layers() == 40 * N


def test_prefill_rows_before_and_after_the_cut(flash):
    led = _prefill(flash, 5000, decoder_replay="bounded")
    assert [led.layer_tokens(l) for l in (0, 19, 20, 21, 39)] == [5000, 5000, 5000, 128, 128]
    tail = led.row(0, 21)
    assert (tail.q_start, tail.q_end, tail.swa_start) == (4872, 5000, 4872)
    # Layer 20 (the decoder KV owner) runs before the SGLang cut: every token, its compressor sees all.
    owner = led.row(0, 20)
    assert (owner.q_start, owner.q_end, owner.kv_start, owner.kv_end) == (0, 5000, 0, 5000)
    assert owner.new_entries(1) == 5000
    # 129 tokens: the tail drops exactly the first one.
    assert _prefill(flash, 129, decoder_replay="bounded").row(0, 39).q_start == 1


def test_paper_cut_keeps_global_kv_complete(flash):
    # The paper cut halves at 20, the decoder KV owner: its queries are pruned, its compressor is not.
    owner = _prefill(flash, 5000, decoder_replay="bounded", replay_cut="paper").row(0, 20)
    assert owner.tokens == 128
    assert owner.kv_tokens == 5000
    assert owner.new_entries(1) == 5000


def test_custom_window_and_start(flash):
    # window 64 from layer 30: 30 × 1000 + 10 × 64
    assert _prefill(flash, 1000, decoder_replay="bounded", replay_window=64, late_layer_start=30).token_layers() \
        == 30640


# --------------------------------------------------------------------------- heterogeneous batches


PROMPTS = [1, 127, 128, 129, 5000]
CONTEXTS = [4096, 100000]


def _mixed(model):
    reqs = [Request.prefill(n) for n in PROMPTS] + [Request.decode(c) for c in CONTEXTS]
    return ledger(model, Plan(reqs, decoder_replay="bounded"))


def test_mixed_batch_sums_per_request_tails(flash):
    led = _mixed(flash)
    # 40 + 5080 + 5120 + 5141 + 107432 (prefills) + 40 + 40 (decodes)
    assert led.token_layers() == 122893
    # One min over the whole batch would give 21·5385 + 19·min(5385, 128) + 80 = 115597: wrong.
    assert led.token_layers() != 115597
    assert [led.request_tokens(i) for i in range(7)] == [40, 5080, 5120, 5141, 107432, 40, 40]
    # layer 21: 1 + 127 + 128 + 128 + 128 prefill tail tokens + 2 decode tokens
    assert led.layer_tokens(21) == 514
    assert led.layer_tokens(20) == 5387


@pytest.mark.parametrize("index, context", [(5, 4096), (6, 100000)])
def test_decode_tokens_traverse_every_layer(flash, index, context):
    led = _mixed(flash)
    for layer in (0, 20, 21, 39):
        row = led.row(index, layer)
        assert (row.request, row.layer) == (index, layer)
        assert (row.tokens, row.q_start, row.q_end, row.swa_start) == (1, context, context + 1, 0)
    assert led.request_tokens(index) == 40


def test_decode_at_owners_writes_completed_groups_only(flash):
    led = _mixed(flash)
    # m = 2 at layer 2: context 4096 → 4097 completes no pair; m = 1 at layer 20 writes one entry.
    assert led.row(5, 2).new_entries(2) == 0
    assert led.row(5, 20).new_entries(1) == 1
    assert led.row(5, 2).kv_tokens == 1


# --------------------------------------------------------------------------- chunked prefill


def _chunks(model, tail):
    reqs = [Request.chunk(1000, 0, 400), Request.chunk(1000, 400, 400), Request.chunk(1000, 800, 200)]
    return ledger(model, Plan(reqs, decoder_replay="bounded", chunk_tail=tail))


def test_chunk_tail_every(flash):
    led = _chunks(flash, "every")
    # 21 × (400 + 400 + 200) + 19 × (128 + 128 + 128)
    assert led.token_layers() == 28296
    assert [(led.row(i, 20).tokens, led.row(i, 21).tokens, led.row(i, 39).tokens) for i in range(3)] == \
        [(400, 128, 128), (400, 128, 128), (200, 128, 128)]
    assert [led.row(i, 21).q_start for i in range(3)] == [272, 672, 872]


def test_chunk_tail_last(flash):
    led = _chunks(flash, "last")
    # 21 × 1000 + 19 × 128: only the final chunk sends tokens past the cut.
    assert led.token_layers() == 23432
    assert [led.row(i, 21).tokens for i in range(3)] == [0, 0, 128]
    assert [led.row(i, 39).tokens for i in range(3)] == [0, 0, 128]
    assert [led.row(i, 20).tokens for i in range(3)] == [400, 400, 200]


def test_chunk_owner_entries(flash):
    led = _chunks(flash, "every")
    # pairs completed by tokens 400..800 at layer 2: 400 − 200
    assert led.row(1, 2).new_entries(2) == 200
    assert (led.row(1, 2).kv_start, led.row(1, 2).kv_end) == (400, 800)
    assert led.row(2, 20).new_entries(1) == 200


# --------------------------------------------------------------------------- extend after a prefix hit


def test_encoder_restore_replays_the_last_window_of_the_prefix(flash):
    led = ledger(flash, Plan([Request.extend(1001, 50, swa_cached=False)], encoder_restore="bounded"))
    for layer in (0, 1, 2, 8, 19):
        row = led.row(0, layer)
        assert (row.tokens, row.q_start, row.q_end, row.swa_start, row.restored) == (178, 873, 1051, 873, 128)
    # Owner 2 (m = 2, P = 1001 odd): the pair (1000, 1001) straddles the boundary, so the compressor
    # re-projects token 1000 into its state; entries written: ⌊1051/2⌋ − ⌊1001/2⌋ = 525 − 500.
    owner = flash.layers[2]
    row = led.row(0, 2)
    assert (owner.compress_ratio, row.kv_start, row.kv_end, row.cached) == (2, 1000, 1051, 1001)
    assert row.new_entries(2) == 25
    # Non-owners project nothing for a compressor.
    assert led.row(0, 3).kv_tokens == 0
    # Decoder layers (issue 10, D4): the replayed rows go through them too, so their rings are
    # rebuilt and the suffix queries keep a full window of history; the m = 1 owner at 20 still
    # writes entries for the 50 new tokens only.
    for layer in (20, 21, 39):
        row = led.row(0, layer)
        assert (row.tokens, row.q_start, row.swa_start, row.restored) == (50 + 128, 1001 - 128, 1001 - 128, 128)
    assert led.row(0, 20).new_entries(1) == 50
    assert (led.row(0, 20).kv_start, led.row(0, 20).kv_end) == (1001, 1051)
    assert led.token_layers() == 40 * (50 + 128)


def test_extend_with_surviving_swa_state(flash):
    led = ledger(flash, Plan([Request.extend(1001, 50, swa_cached=True)], encoder_restore="bounded"))
    for layer in (0, 2, 19, 20, 39):
        row = led.row(0, layer)
        assert (row.tokens, row.q_start, row.swa_start, row.restored) == (50, 1001, 0, 0)
    assert (led.row(0, 2).kv_start, led.row(0, 2).new_entries(2)) == (1001, 25)
    assert led.token_layers() == 2000
    # The persisted policy gives the same ledger for a surviving state.
    assert ledger(flash, Plan([Request.extend(1001, 50)])).token_layers() == 2000


def test_encoder_restore_even_and_short_prefixes(flash):
    led = ledger(flash, Plan([Request.extend(1000, 51, swa_cached=False), Request.extend(100, 50, swa_cached=False)],
                             encoder_restore="bounded"))
    even = led.row(0, 2)
    assert (even.kv_start, even.new_entries(2), even.tokens) == (1000, 25, 179)  # no straddling pair
    short = led.row(1, 2)
    # the whole 100-token prefix is replayed
    assert (short.q_start, short.restored, short.tokens, short.kv_start, short.new_entries(2)) == (0, 100, 150, 100, 25)


def test_restore_and_decoder_replay_together(flash):
    led = ledger(flash, Plan([Request.extend(1001, 300, swa_cached=False)], encoder_restore="bounded",
                             decoder_replay="bounded"))
    assert led.row(0, 0).tokens == 428  # 128 replayed + 300 new
    assert led.row(0, 20).tokens == 428  # the decoder sees the replayed rows too (issue 10, D4)
    # the late tail is the last 128 of the combined 428 rows: [1301 − 128, 1301)
    assert (led.row(0, 21).tokens, led.row(0, 21).q_start, led.row(0, 21).swa_start) == (128, 1173, 1173)
    assert led.token_layers() == 21 * 428 + 19 * 128


# --------------------------------------------------------------------------- properties


def _requests(n, p, s):
    """Prefill, lost-SWA extend, kept-SWA extend, a non-final and a final chunk, a decode."""
    return [Request.prefill(n), Request.extend(p, s, swa_cached=False), Request.extend(p, s),
            Request.chunk(p + s + n, p, s), Request.chunk(p + s, p, s), Request.decode(p)]


POLICIES = {
    "off": dict(decoder_replay="off"),
    "bounded": dict(decoder_replay="bounded"),
    "bounded-last": dict(decoder_replay="bounded", chunk_tail="last"),
    "bounded-paper": dict(decoder_replay="bounded", replay_cut="paper"),
}


@cache
def _symbolic(name):
    return ledger(load_model(), Plan(_requests(N, P, S), encoder_restore="bounded", **POLICIES[name]))


def _at(expr, values):
    return sympy.sympify(expr).subs(values)


lengths = st.integers(min_value=1, max_value=5000)


@settings(max_examples=100, deadline=None)
@given(n=lengths, p=lengths, s=lengths, name=st.sampled_from(sorted(POLICIES)))
def test_symbolic_ledger_equals_numeric(n, p, s, name):
    model = load_model()
    numeric = ledger(model, Plan(_requests(n, p, s), encoder_restore="bounded", **POLICIES[name]))
    symbolic = _symbolic(name)
    values = {N: n, P: p, S: s}
    assert _at(symbolic.token_layers(), values) == numeric.token_layers()
    for layer in (0, 20, 21, 39):
        assert _at(symbolic.layer_tokens(layer), values) == numeric.layer_tokens(layer)
    for request in range(6):
        assert _at(symbolic.request_tokens(request), values) == numeric.request_tokens(request)
    for layer, ratio in ((2, 2), (20, 1)):
        for request in (1, 2, 3):
            assert _at(symbolic.row(request, layer).new_entries(ratio), values) == \
                numeric.row(request, layer).new_entries(ratio)


@settings(max_examples=100, deadline=None)
@given(n=lengths, p=lengths, s=lengths)
def test_decoder_replay_never_adds_tokens(n, p, s):
    model = load_model()
    reqs = _requests(n, p, s)
    off = ledger(model, Plan(reqs, encoder_restore="bounded"))
    for policies in (POLICIES["bounded"], POLICIES["bounded-last"], POLICIES["bounded-paper"]):
        on = ledger(model, Plan(reqs, encoder_restore="bounded", **policies))
        for a, b in zip(off.rows, on.rows):
            assert (a.request, a.layer) == (b.request, b.layer)
            if policies is POLICIES["bounded-last"] and a.request == 4 and a.layer >= 21:
                # The final chunk [p, p + s) takes the *prompt's* last min(p + s, 128) positions,
                # reaching back across chunks (issue 10, D5): never more than the prompt itself.
                assert b.tokens == min(p + s, 128) <= p + s
                continue
            assert 0 <= b.tokens <= a.tokens
            # Replay prunes queries only: the compressor's input and the entries it writes stay.
            assert (b.kv_start, b.kv_end) == (a.kv_start, a.kv_end)
        last_chunk = policies is POLICIES["bounded-last"]  # its prompt tail is checked row by row above
        for layer in range(40):
            extra_on = on.row(4, layer).tokens if last_chunk else 0
            extra_off = off.row(4, layer).tokens if last_chunk else 0
            assert on.layer_tokens(layer) - extra_on <= off.layer_tokens(layer) - extra_off
        # Layers before the cut are untouched, and decode tokens are never pruned.
        assert on.layer_tokens(0) == off.layer_tokens(0)
        assert on.request_tokens(5) == off.request_tokens(5) == 40
