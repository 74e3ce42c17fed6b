"""Regenerate the pictures the README shows (docs/pictures/): the plots of ``v41graph plot`` and
the collapsed cost diagram. Run from the repository root: ``python docs/make_pictures.py``
(needs ``pip install -e '.[plot]'``).

The Pareto picture needs tokens/s per GPU, which needs the parallel mapping's GPU count; while
the sweep reports that as not available, the script says so and draws no Pareto picture.
"""

from __future__ import annotations

from pathlib import Path

from v41graph import Plan, Request, compile, load_model, render_cost_dot, sweep, write_diagram
from v41graph.backends import plot
from v41graph.errors import V41Error

OUT = Path(__file__).resolve().parent / "pictures"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    model = load_model()
    print(plot.plot_latency(model, [1024, 1 << 20], ["off", "bounded"], OUT / "latency.png"))
    print(plot.plot_memory(model, [1024, 1 << 20], OUT / "memory.png"))
    print(plot.plot_ops(model, [8192, 131072], ["off", "bounded"], OUT / "ops.png"))
    result = sweep(prompt=[1024, 8192, 65536], batch=[1, 16, 64], tp=[1, 8], ep=[1, 8]).with_pareto()
    try:
        print(plot.plot_pareto(result, OUT / "pareto.png"))
    except V41Error as exc:
        print(f"no Pareto picture: {exc}")
    scheduled = compile(model, Plan([Request.prefill(8192)]), "h200_sxm")
    print(write_diagram(render_cost_dot(scheduled, collapse=True), OUT / "collapsed.svg"))


if __name__ == "__main__":
    main()
