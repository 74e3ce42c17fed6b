"""Host-resident Engram: hot-cache misses per decode step, host-link prefetch, hidden or stalled."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from v41graph.analysis.serving.engram_host import batch_contents, lockstep_misses, prefetch_report
from v41graph.costs.hardware import load_hardware
from v41graph.errors import PlanError
from v41graph.workload.tokens import TokenContent
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


def test_memory_engram_host_drops_the_tables_and_keeps_the_hot_cache(capsys):
    from helpers import run, run_json
    # one GPU named: the auto mapping would differ (8 GPUs hold the tables in HBM, 4 without them)
    hbm = run_json(capsys, "memory", "--context", "8K", "--engram", "hbm", "--tp", "1")["memory_per_gpu"]
    host = run_json(capsys, "memory", "--context", "8K", "--engram", "host", "--hot-cache-rows", "65536", "--tp", "1")
    gpu = host["memory_per_gpu"]
    tables = 384_006_168 * 264 + 384_016_682 * 264  # both Engram tables, 256 FP8 values + 8 scales a row
    hot = 2 * 65_536 * 264
    assert host["engram_table_bytes"] == tables == 202_758_032_400
    assert hbm["weights_bytes"] - gpu["weights_bytes"] == tables - hot
    assert gpu["weights_by_group"]["engram_tables"] == 0 and gpu["weights_by_group"]["engram_hot_cache"] == hot
    assert gpu["engram_residency"] == "host"
    # split like the tables: column-parallel over TP 8
    tp8 = run_json(capsys, "memory", "--context", "8K", "--engram", "host", "--tp", "8")["memory_per_gpu"]
    assert tp8["weights_by_group"]["engram_hot_cache"] == hot // 8
    status, out, err = run(capsys, "memory", "--context", "8K", "--hot-cache-rows", "10")
    assert (status, err) == (2, "v41graph: error: memory --hot-cache-rows: a hot cache goes with --engram host "
                                "(the tables are in HBM)\n")


def test_under_tp_each_gpu_fetches_its_column_slice(flash, layout):
    hw = load_hardware("h200_sxm")
    contents = batch_contents(_text(8 * 200), 8, 200)
    tp8 = prefetch_report(flash, layout, FOLD, contents, hw, 0, window=32, tp=8)
    assert tp8["prefetch_bytes"] == 2 * 8 * 24 * 264 / 8
    assert tp8["layers"][0]["lands_s"] == pytest.approx(8 * 24 * 264 / 8 / hw.host_bandwidth, rel=1e-12)
