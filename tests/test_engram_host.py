"""Host-resident Engram: hot-cache misses per decode step, host-link prefetch, hidden or stalled."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from v41graph.backends.engram_host import batch_contents, lockstep_misses, prefetch_report
from v41graph.costs.hardware import load_hardware
from v41graph.errors import PlanError
from v41graph.ir.tokens import TokenContent
from v41graph.model.engram_hash import hash_layout

FOLD = np.arange(99_092)  # identity fold: the synthetic ids below are their own compressed ids


@pytest.fixture(scope="module")
def layout():
    return hash_layout()


def _text(n: int) -> TokenContent:
    # a deterministic stand-in for text that repeats itself: quadratic residues mod 97, period 97
    return TokenContent.from_ids([(i * i) % 97 + 10 for i in range(n)])


def test_lockstep_misses_by_hand():
    a = np.array([[1, 2], [1, 2], [3, 4]])
    b = np.array([[5, 6], [1, 2], [1, 2]])
    # interleaved per step: (1 2 5 6) (1 2 1 2) (3 4 1 2)
    assert lockstep_misses([a, b], 0, 3) == 12 / 3
    # 4 rows of cache: step 2 hits all four, step 3 misses 3 and 4 (1 and 2 are still cached)
    assert lockstep_misses([a, b], 4, 2) == (0 + 2) / 2
    with pytest.raises(PlanError, match=r"window: must be in 1..3 steps, got 4"):
        lockstep_misses([a, b], 4, 4)


def test_prefetch_bytes_landing_and_hiding(flash, layout):
    hw = load_hardware("h200_sxm")
    contents = batch_contents(_text(8 * 200), 8, 200)
    cold = prefetch_report(flash, layout, FOLD, contents, hw, 0, window=32)
    # no hot cache: every one of the 8 × 24 lookups per layer goes over the host link, 264 B each
    assert [l["missed_rows_per_step"] for l in cold["layers"]] == [8 * 24, 8 * 24]
    assert cold["prefetch_bytes"] == 2 * 8 * 24 * 264
    l1, l14 = cold["layers"]
    assert l1["lands_s"] == pytest.approx(8 * 24 * 264 / hw.host_bandwidth, rel=1e-12)
    assert l14["lands_s"] == pytest.approx(2 * 8 * 24 * 264 / hw.host_bandwidth, rel=1e-12)
    assert 0 < l1["deadline_s"] < l14["deadline_s"]
    assert cold["hidden"] is True and cold["stall_s"] == 0
    warm = prefetch_report(flash, layout, FOLD, contents, hw, 1 << 20, window=32)
    # every n-gram of the last 32 steps was seen a period (97 positions) earlier: all hits
    assert warm["prefetch_bytes"] == 0 and warm["hot_cache_bytes_per_layer"] == (1 << 20) * 264
    pads = batch_contents(TokenContent.pad(8 * 200), 8, 200)
    assert prefetch_report(flash, layout, FOLD, pads, hw, 24, window=32)["prefetch_bytes"] == 0


def test_a_slow_host_link_stalls_the_step(flash, layout):
    slow = dataclasses.replace(load_hardware("h200_sxm"), host_bandwidth=1_000_000)  # 1 MB/s
    report = prefetch_report(flash, layout, FOLD, batch_contents(_text(400), 2, 200), slow, 0, window=16)
    l1 = report["layers"][0]
    assert l1["lands_s"] == pytest.approx(2 * 24 * 264 / 1e6, rel=1e-12)
    assert l1["hidden"] is False and l1["stall_s"] == pytest.approx(l1["lands_s"] - l1["deadline_s"], rel=1e-12)
    assert report["hidden"] is False


def test_batch_contents_splits_a_corpus():
    parts = batch_contents(TokenContent.from_ids(range(10, 20)), 2, 5)
    assert [p.ids for p in parts] == [tuple(range(10, 15)), tuple(range(15, 20))]
    with pytest.raises(PlanError, match="3 requests × 5 tokens need 15 tokens; ids has 10"):
        batch_contents(TokenContent.from_ids(range(10, 20)), 3, 5)
