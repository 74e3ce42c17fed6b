"""docs/measured-vs-model.md is what benchmarks/bench_measured_vs_aic.py writes from its recorded run (which
names the machine and date it ran on), v41graph's side of it is what the code computes today, and that run
meets issue 25's acceptance: hybrid within 10 % of AIConfigurator SILICON on all four workloads,
communication and attention within 15 % per family or explained in the doc's "Families outside 15 %"."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import bench_measured_vs_aic as bench  # noqa: E402
from common import STAMP  # noqa: E402

RECORD = json.loads(bench.RECORD.read_text())


def test_the_doc_table_is_what_the_script_writes_from_its_record():
    text = bench.DOC.read_text()
    block = bench.BEGIN + text.split(bench.BEGIN, 1)[1].split(bench.END, 1)[0] + bench.END
    stamp = block.splitlines()[1]
    assert STAMP.fullmatch(stamp), stamp
    assert block == bench.markdown(RECORD, stamp)


def test_the_record_names_its_machine_and_date():
    run = RECORD["run"]
    assert re.fullmatch(r".+ \(.+, \d+ CPUs, Python \S+\)", run["machine"]) and re.fullmatch(r"\d{4}-\d\d-\d\d",
                                                                                            run["date"])
    assert run["aiconfigurator_core"] == "0.12.0"


def test_v41graphs_side_of_the_record_is_what_the_code_computes():
    # exact but for float formatting: the hybrid figures read the measured tables, so they hold where the same
    # tables are found (the extra when installed, else the vendored slice)
    from v41graph.costs.measured.layout import find_source
    if find_source().kind != RECORD["v41graph"][0]["data"]:
        pytest.skip(f"the record was priced from the {RECORD['v41graph'][0]['data']} tables; "
                    f"here they are {find_source().kind}")
    ours = bench.rows()
    assert [round(r["v41graph_ms"], 9) for r in ours] == [round(r["v41graph_ms"], 9) for r in RECORD["v41graph"]]
    assert [round(r["v41graph_sol_ms"], 9) for r in ours] == \
        [round(r["v41graph_sol_ms"], 9) for r in RECORD["v41graph"]]
    assert [{k: round(v, 9) for k, v in r["families_ms"].items()} for r in ours] == \
        [{k: round(v, 9) for k, v in r["families_ms"].items()} for r in RECORD["v41graph"]]


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
    # ... with the record's ratios
    q = {r["workload"]: r["families_ms"]["attention module"] / silicon[r["workload"]]["families_ms"]["attention module"]
         for r in RECORD["v41graph"]}
    ratios = f"(×{q['decode 64 @ 8192, TP1']:.2f} at TP1, ×{q['decode 64 @ 8192, TP8 EP8']:.2f} at TP8/EP8)"
    assert ratios in bench.DOC.read_text()


def test_a_live_run_reproduces_the_record():
    pytest.importorskip("aiconfigurator_core", reason="the live comparison needs aiconfigurator-core (measured extra)")
    theirs = bench.aic(live=True)["silicon"]
    assert {w: round(v["total_ms"], 6) for w, v in theirs.items()} == \
        {w: round(v["total_ms"], 6) for w, v in RECORD["aic"]["silicon"].items()}
