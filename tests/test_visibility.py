"""What queries see (SPEC §3.1, §5.2): closed-form visibility sums and attention pairs on ledger rows.

Every expected figure is either a literal worked out by hand in the comment beside it or a
brute-force loop over query positions written here, never the closed forms under test.
Conventions (``visibility.py``): a query at position ``i`` sees ⌊(i+1)/m⌋ complete compressed
groups (capped at top-k 512) and min(i + 1 − s, 128) SWA keys when SWA starts at ``s``.
Reuse encoder layer 3: m = 2; Reuse decoder layer 21: m = 1; both top-k 512, window 128.
"""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings, strategies as st
import pytest
import sympy

from v41graph import Plan, Request, load_model
from v41graph.costs.counts import selected_pairs, window_pairs
from v41graph.ir.ledger import Row, ledger
from v41graph.ir.visibility import capped_floor_sum, floor_sum, range_sum, triangle, window_sum
from v41graph.symbols import N

TOPK, WINDOW = 512, 128
ENCODER_REUSE, DECODER_REUSE = 3, 21  # m = 2 and m = 1


@cache
def _model():
    return load_model()


def _row(n: int, layer: int, **policies) -> Row:
    """The ledger row of a single n-token prefill through ``layer``."""
    return ledger(_model(), Plan([Request.prefill(n)], **policies)).row(0, layer)


# ---- brute force: one loop over query positions ---------------------------------------------------

def brute_selected(q_start: int, q_end: int, m: int, cap: int | None) -> int:
    total = 0
    for i in range(q_start, q_end):
        groups = (i + 1) // m  # complete groups at or before position i
        total += groups if cap is None else min(groups, cap)
    return total


def brute_window(q_start: int, q_end: int, swa_start: int, w: int) -> int:
    return sum(min(i + 1 - swa_start, w) for i in range(q_start, q_end))


# ---- the prefix sums themselves ---------------------------------------------------------------------

def test_prefix_sum_literals():
    assert triangle(0) == 0 and triangle(128) == 8256          # 128·129/2
    assert floor_sum(0, 2) == 0
    assert floor_sum(1, 2) == 0                                  # ⌊1/2⌋
    assert floor_sum(2, 2) == 1                                  # 0 + 1
    assert floor_sum(3, 2) == 2                                  # 0 + 1 + 1
    assert floor_sum(128, 2) == 4096                             # n = 2k: k² = 64²
    assert floor_sum(129, 2) == 4160                             # n = 2k+1: k² + k = 4096 + 64
    assert floor_sum(10, 1) == 55                                # 1 + … + 10
    assert floor_sum(10, 4) == 10                                # 0,0,0,1,1,1,1,2,2,2
    assert capped_floor_sum(10, 1, 4) == 34                      # 1+2+3+4·7
    assert capped_floor_sum(1023, 2, 512) == 261632              # never reaches 512: 511² + 511
    assert capped_floor_sum(1024, 2, 512) == 262144              # j = 1024 is the first at the cap
    assert capped_floor_sum(2048, 2, 512) == 786432              # 261632 + 512·1025
    assert window_sum(5, 3) == 12                                # 1+2+3+3+3
    assert window_sum(127, 128) == 8128                          # 127·128/2
    assert window_sum(128, 128) == 8256
    assert window_sum(129, 128) == 8384                          # 8256 + 128
    assert range_sum(window_sum, 872, 1000, 128) == 16384        # 128 queries all past the knee


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 3000), m=st.integers(1, 8), cap=st.integers(1, 700), w=st.integers(1, 300))
def test_prefix_sums_match_brute_force(n, m, cap, w):
    assert floor_sum(n, m) == brute_selected(0, n, m, None)
    assert capped_floor_sum(n, m, cap) == brute_selected(0, n, m, cap)
    assert window_sum(n, w) == brute_window(0, n, 0, w)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5000), m=st.sampled_from([1, 2, 4, 128]), cap=st.sampled_from([512, 16384]))
def test_symbolic_prefix_sums_equal_numeric(n, m, cap):
    # one implementation: the sympy closed form, bound at n, is the integer the ints give
    assert floor_sum(N, m).subs(N, n) == floor_sum(n, m)
    assert capped_floor_sum(N, m, cap).subs(N, n) == capped_floor_sum(n, m, cap)
    assert window_sum(N, WINDOW).subs(N, n) == window_sum(n, WINDOW)


# ---- attention pairs on ledger rows ----------------------------------------------------------------

# N: (selected m=2 top-k 512, selected m=1 top-k 512, window 128), by hand:
#   m=2: Σ_{j≤N} ⌊j/2⌋ = k² (N = 2k) or k² + k (N = 2k+1); never capped below N = 1024
#   m=1: Σ_{j≤N} min(j, 512) = T(N) for N ≤ 512, else T(512) + 512(N − 512), T(512) = 131328
#   W  : Σ_{j≤N} min(j, 128) = T(N) for N ≤ 128, else 8256 + 128(N − 128)
PREFILL_PAIRS = {
    1: (0, 1, 1),
    2: (1, 3, 3),
    127: (4032, 8128, 8128),          # 63² + 63; T(127)
    128: (4096, 8256, 8256),          # 64²; T(128)
    129: (4160, 8385, 8384),          # 64² + 64; T(129); 8256 + 128
    600: (90000, 176384, 68672),      # 300²; 131328 + 512·88; 8256 + 128·472
    1000: (250000, 381184, 119872),   # 500²; 131328 + 512·488; 8256 + 128·872
    1100: (301056, 432384, 132672),   # 261632 + 512·77 (m=2 saturated); 131328 + 512·588; 8256 + 128·972
}


@pytest.mark.parametrize("n", sorted(PREFILL_PAIRS))
def test_prefill_pairs_literals(n):
    sel2, sel1, win = PREFILL_PAIRS[n]
    enc, dec = _row(n, ENCODER_REUSE), _row(n, DECODER_REUSE)
    assert selected_pairs((enc,), 2, TOPK) == sel2
    assert selected_pairs((dec,), 1, TOPK) == sel1
    assert window_pairs((enc,), WINDOW) == win
    assert window_pairs((dec,), WINDOW) == win


@pytest.mark.parametrize("n", [1, 2, 3, 127, 128, 129, 511, 512, 513, 600, 1000, 1023, 1024, 1025, 2049])
def test_prefill_pairs_match_brute_force(n):
    enc, dec = _row(n, ENCODER_REUSE), _row(n, DECODER_REUSE)
    assert selected_pairs((enc,), 2, TOPK) == brute_selected(0, n, 2, TOPK)
    assert selected_pairs((dec,), 1, TOPK) == brute_selected(0, n, 1, TOPK)
    assert selected_pairs((dec,), 1, None) == n * (n + 1) // 2  # uncapped scan: every earlier token
    assert window_pairs((enc,), WINDOW) == brute_window(0, n, 0, WINDOW)
    assert window_pairs((dec,), WINDOW) == brute_window(0, n, 0, WINDOW)


def test_topk_saturates_for_m1_not_m2_below_1024():
    # at 600 and 1000 every m=1 query past position 511 is capped; no m=2 query is (⌊1000/2⌋ = 500)
    for n in (600, 1000):
        dec, enc = _row(n, DECODER_REUSE), _row(n, ENCODER_REUSE)
        assert selected_pairs((dec,), 1, TOPK) < selected_pairs((dec,), 1, None)
        assert selected_pairs((enc,), 2, TOPK) == selected_pairs((enc,), 2, None)
    # at 1100 the m=2 queries at positions ≥ 1023 see 512 groups: the cap bites
    enc = _row(1100, ENCODER_REUSE)
    assert selected_pairs((enc,), 2, TOPK) < selected_pairs((enc,), 2, None)


@pytest.mark.parametrize("i", [0, 1, 2, 3, 126, 127, 128, 511, 512, 1022, 1023, 1024, 40000])
def test_causality_single_query(i):
    # a lone query at position i (a decode at context i) sees at most i+1 tokens of each kind,
    # and only complete compressed groups: ⌊(i+1)/m⌋
    for m in (1, 2, 4, 128):
        row = Row(request=0, layer=3, q_start=i, q_end=i + 1, swa_start=0, kv_start=0, kv_end=0, cached=i)
        assert selected_pairs((row,), m, None) == (i + 1) // m <= i + 1
        assert selected_pairs((row,), m, TOPK) == min((i + 1) // m, TOPK)
        assert window_pairs((row,), WINDOW) == min(i + 1, WINDOW) <= i + 1


def test_compressed_group_visible_only_when_complete():
    # prefill N=1 on an m=2 layer: the only group is incomplete, nothing selected
    assert selected_pairs((_row(1, ENCODER_REUSE),), 2, TOPK) == 0
    # N=2: query 1 closes group 0 and sees it; query 0 does not
    assert selected_pairs((_row(2, ENCODER_REUSE),), 2, TOPK) == 1
    # N=3: queries 1 and 2 see group 0; group 1 is still open
    assert selected_pairs((_row(3, ENCODER_REUSE),), 2, TOPK) == 2


def test_decode_rows_literals():
    # decode at context c: one query at position c
    row = ledger(_model(), Plan([Request.decode(1022)])).row(0, ENCODER_REUSE)
    assert selected_pairs((row,), 2, TOPK) == 511                  # ⌊1023/2⌋
    row = ledger(_model(), Plan([Request.decode(1023)])).row(0, ENCODER_REUSE)
    assert selected_pairs((row,), 2, TOPK) == 512                  # ⌊1024/2⌋, the cap
    row = ledger(_model(), Plan([Request.decode(100_000, copies=8)])).row(0, DECODER_REUSE)
    assert selected_pairs((row,), 1, TOPK) == 8 * 512              # 8 identical requests
    assert window_pairs((row,), WINDOW) == 8 * 128


def test_bounded_replay_tail_rows():
    # decoder bounded replay on a 1000-token prefill: layer 21 runs queries 872..999 with SWA from 872
    row = _row(1000, DECODER_REUSE, decoder_replay="bounded")
    assert (row.q_start, row.q_end, row.swa_start) == (872, 1000, 872)
    assert window_pairs((row,), WINDOW) == 8256                    # min(u, 128), u = 1..128: T(128)
    assert selected_pairs((row,), 1, TOPK) == 65536                # 128 queries × 512 (all past 511)
    assert window_pairs((row,), WINDOW) == brute_window(872, 1000, 872, WINDOW)


def test_symbolic_pairs_equal_numeric():
    enc, dec = _row(N, ENCODER_REUSE), _row(N, DECODER_REUSE)
    sel2, sel1, win = (selected_pairs((enc,), 2, TOPK), selected_pairs((dec,), 1, TOPK),
                       window_pairs((dec,), WINDOW))
    assert all(isinstance(v, sympy.Expr) for v in (sel2, sel1, win))
    for n, (e2, e1, ew) in PREFILL_PAIRS.items():
        assert (sel2.subs(N, n), sel1.subs(N, n), win.subs(N, n)) == (e2, e1, ew)
