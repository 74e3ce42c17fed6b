"""Regenerate the pictures the README shows (docs/pictures/): the plots of ``v41graph plot`` and
the collapsed cost diagram. Run from the repository root: ``python docs/make_pictures.py``
(needs ``pip install -e '.[plot]'``).

The Pareto picture is a 54-point sweep (prompt × batch × TP × EP on h200_sxm); points that do not
fit one GPU's memory are not ranked.
"""

from __future__ import annotations

from pathlib import Path

from v41graph import Plan, Request, compile, load_model, sweep, write_diagram
from v41graph.render.dot_costs import render_cost_dot
from v41graph.analysis.plot_data import latency_series, memory_series, ops_bars
from v41graph.render import plots as plot

OUT = Path(__file__).resolve().parent / "pictures"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    model = load_model()
    print(plot.plot_latency(latency_series(model, [1024, 1 << 20], ["off", "bounded"]), OUT / "latency.png"))
    print(plot.plot_memory(memory_series(model, [1024, 1 << 20]), OUT / "memory.png"))
    print(plot.plot_ops(ops_bars(model, [8192, 131072], ["off", "bounded"]), OUT / "ops.png"))
    result = sweep(prompt=[1024, 8192, 65536], batch=[1, 16, 64], tp=[2, 4, 8], ep=[8, 16]).with_pareto()
    print(plot.plot_pareto(result, OUT / "pareto.png"))
    scheduled = compile(model, Plan([Request.prefill(8192)]), "h200_sxm")
    print(write_diagram(render_cost_dot(scheduled, collapse=True), OUT / "collapsed.svg"))


if __name__ == "__main__":
    main()
