"""Regenerate the pictures the README shows (docs/pictures/): the plots of ``v41graph plot`` and
the collapsed cost diagram. Run from the repository root: ``python docs/make_pictures.py``
(needs ``pip install -e '.[plot]'``; about 20 s, most of it the sweep).

The Pareto picture is a 54-point sweep (prompt × batch × TP × EP on h200_sxm); points that do not
fit one GPU's memory are not ranked.

What each picture draws is recorded in docs/pictures/figures.json with the machine and date of the run
(pixels are not compared: they depend on matplotlib). tests/test_docs_from_scripts.py recomputes the
latency, memory and op-family series and the diagram's DOT exactly, and reprices the sweep's Pareto
points one by one, against that record.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from v41graph import Plan, Request, compile, load_model, sweep, write_diagram
from v41graph.analysis.plot_data import latency_series, memory_series, ops_bars
from v41graph.costs.measured.layout import find_source
from v41graph.render import plots as plot
from v41graph.render.dot_costs import render_cost_dot

OUT = Path(__file__).resolve().parent / "pictures"
RECORD = OUT / "figures.json"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from common import run_record  # noqa: E402

#: the sweep the Pareto picture draws
SWEEP = {"prompt": [1024, 8192, 65536], "batch": [1, 16, 64], "tp": [2, 4, 8], "ep": [8, 16]}


def _plain(value):
    """JSON-ready: numpy arrays and scalars as lists and floats, tuples as lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.tolist() if hasattr(value, "tolist") else value


def collapsed_dot(model) -> str:
    return render_cost_dot(compile(model, Plan([Request.prefill(8192)]), "h200_sxm"), collapse=True)


def series(model) -> dict:
    """What the latency, memory and op-family pictures draw, and the diagram's DOT (as its SHA-256)."""
    return {"latency": _plain(latency_series(model, [1024, 1 << 20], ["off", "bounded"])),
            "memory": _plain(memory_series(model, [1024, 1 << 20])),
            "ops": _plain(ops_bars(model, [8192, 131072], ["off", "bounded"])),
            "collapsed_dot_sha256": hashlib.sha256(collapsed_dot(model).encode()).hexdigest()}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    model = load_model()
    print(plot.plot_latency(latency_series(model, [1024, 1 << 20], ["off", "bounded"]), OUT / "latency.png"))
    print(plot.plot_memory(memory_series(model, [1024, 1 << 20]), OUT / "memory.png"))
    print(plot.plot_ops(ops_bars(model, [8192, 131072], ["off", "bounded"]), OUT / "ops.png"))
    result = sweep(**SWEEP).with_pareto()
    print(plot.plot_pareto(result, OUT / "pareto.png"))
    print(write_diagram(collapsed_dot(model), OUT / "collapsed.svg"))
    record = {"run": {**run_record(), "measured_tables": find_source().kind}, **series(model),
              "sweep": SWEEP, "sweep_rows": _plain(result.rows)}
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {RECORD}")


if __name__ == "__main__":
    main()
