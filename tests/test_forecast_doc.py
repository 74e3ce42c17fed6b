"""docs/forecast.md is what benchmarks/bench_forecast.py writes (issue 34, item 6): regenerated here, it
must equal the committed file but for the line naming the machine and date."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_forecast", ROOT / "benchmarks" / "bench_forecast.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_forecast_doc_is_the_scripts_output():
    bench = _bench()
    committed = bench.DOC.read_text(encoding="utf-8")
    [stamp] = [line for line in committed.splitlines() if line.startswith(bench.STAMP)]
    assert bench.generate(stamp) == committed, "docs/forecast.md drifted: python benchmarks/bench_forecast.py --write"
    assert (ROOT / "docs" / "forecast.png").stat().st_size > 10_000
    # the figures the doc states are the fits the code makes (one of them, spelled out)
    row = "| `aisimulate-gb300-off-v1` | gb300 TP4, off | 124 | 150 | 18.94 | 2.294 | 0.9281 | – | 0.816 % |"
    assert row in committed
