"""Latency vs prompt length (replay off and bounded), memory by owner, time by op family.

Run: ``python examples/12_plot_latency.py [OUT_DIR]`` (needs ``pip install 'v41graph[plot]'``);
without OUT_DIR the files go to a temporary folder, removed at the end.
"""

import sys
import tempfile
from pathlib import Path

from v41graph import load_model
from v41graph.errors import V41Error

with tempfile.TemporaryDirectory() as scratch:  # removed at the end unless OUT_DIR is given
    out = Path(sys.argv[1] if len(sys.argv) > 1 else scratch)
    try:
        from v41graph.analysis.plot_data import latency_series, memory_series, ops_bars
        from v41graph.render import plots as plot
        plot.pyplot()
    except V41Error as exc:
        print(f"skipped: {exc}")
        raise SystemExit(0)
    model = load_model()
    print(plot.plot_latency(latency_series(model, [1024, 1 << 20], ["off", "bounded"]), out / "latency.png"))
    print(plot.plot_memory(memory_series(model, [1024, 1 << 20]), out / "memory.png"))
    print(plot.plot_ops(ops_bars(model, [8192], ["off", "bounded"]), out / "ops.svg"))
