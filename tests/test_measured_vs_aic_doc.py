"""docs/measured-vs-model.md is what benchmarks/bench_measured_vs_aic.py writes from its recorded run, and
that run meets issue 25's acceptance: hybrid within 10 % of AIConfigurator SILICON on all four workloads,
communication and attention within 15 % per family or explained in the doc's "Families outside 15 %"."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import bench_measured_vs_aic as bench  # noqa: E402

RECORD = json.loads(bench.RECORD.read_text())


def test_the_doc_table_is_what_the_script_writes_from_its_record():
    text = bench.DOC.read_text()
    block = bench.BEGIN + text.split(bench.BEGIN, 1)[1].split(bench.END, 1)[0] + bench.END
    assert block == bench.markdown(RECORD)


def test_the_recorded_run_is_within_10_percent_of_aic_silicon_on_every_workload():
    silicon = RECORD["aic"]["silicon"]
    ratios = {r["workload"]: r["v41graph_ms"] / silicon[r["workload"]]["total_ms"] for r in RECORD["v41graph"]}
    assert list(ratios) == list(bench.WORKLOADS)
    assert all(0.9 <= q <= 1.1 for q in ratios.values()), ratios


def test_checked_families_are_within_15_percent_or_explained():
    silicon = RECORD["aic"]["silicon"]
    explained = bench.DOC.read_text().split("## Families outside 15 %", 1)[1].lower()
    off = []
    for r in RECORD["v41graph"]:
        for fam in bench.CHECKED:
            ours, theirs = r["families_ms"].get(fam, 0.0), silicon[r["workload"]]["families_ms"].get(fam, 0.0)
            if theirs and abs(ours / theirs - 1) > 0.15:
                off.append((r["workload"], fam))
                assert fam in explained, (r["workload"], fam)
    # what the record holds today: only decode attention, which the doc explains from the table rows
    assert off == [("decode 64 @ 8192, TP1", "attention module"), ("decode 64 @ 8192, TP8 EP8", "attention module")]


def test_a_live_run_reproduces_the_record():
    pytest.importorskip("aiconfigurator_core", reason="the live comparison needs aiconfigurator-core (measured extra)")
    ours = bench.rows()
    assert [round(r["v41graph_ms"], 6) for r in ours] == [round(r["v41graph_ms"], 6) for r in RECORD["v41graph"]]
    theirs = bench.aic(live=True)["silicon"]
    assert {w: round(v["total_ms"], 6) for w, v in theirs.items()} == \
        {w: round(v["total_ms"], 6) for w, v in RECORD["aic"]["silicon"].items()}
