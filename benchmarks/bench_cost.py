"""Speed of the cost side: full compile (lower + passes + schedule), closed-form build, sweeps.

Run: ``python benchmarks/bench_cost.py [--repeats R]``. Prints medians (min, max) in ms and the
ratio to the product's targets; asserts nothing (tests never depend on wall-clock time).

What a repeat is: the compiles, warm: each repeat a new plan of a shape compiled before (the prefill's
length drawn over 4K–16K, the mix's lengths moved by a new offset); the closed form, from nothing:
every memo and cached function cleared before each build (``common.from_nothing``); the sweep: the
same lambdified function over the same 10^6 lengths (a pure numpy call: nothing to warm).

Targets: one-request compile <= 10 ms; 256-request batch <= 50 ms; closed-form build of
prefill SOL time <= 0.5 s (issue 14: the issue's bound is 2 s, 0.5 s the aim); lambdified sweep
>= 10^7 points per second. ``bench_closed_form.py`` has more closed-form rows (first build, CPU
time, other plans, shuffled input).
"""

from __future__ import annotations

import statistics

from common import COLD, WARM, drawn_length, from_nothing, header, mixed_batch, repeats_option, shifted, timed
import numpy as np

from v41graph import Plan, Request, load_model
from v41graph.analysis.symbolic.query import closed_form
from v41graph.passes import compile
from v41graph.symbols import N


def main() -> None:
    repeats = repeats_option(__doc__, 5, 1)
    model = load_model()
    rows = []
    print(header(f"compile+schedule ({WARM}); the closed form ({COLD}); the lambdified sweep", repeats))
    # a new length every repeat: a compile reuses its shape's structure (ir/shapes.py), never a result
    one = lambda i: Plan([Request.prefill(drawn_length(i, 41))], decoder_replay="bounded")  # noqa: E731
    mix = mixed_batch(decoder_replay="bounded")
    batch = lambda i: shifted(mix, 1 + 7 * i)  # noqa: E731
    for make in (one, batch):
        compile(model, make(-1), "h200_sxm")  # the shape, seen once
    count = iter(range(10 ** 6))
    rows.append(("compile+schedule, 1 prefill 4K-16K", timed(lambda: compile(model, one(next(count)), "h200_sxm"),
                                                            repeats), 0.010))
    rows.append(("compile+schedule, 256-request mix", timed(lambda: compile(model, batch(next(count)), "h200_sxm"),
                                                            repeats), 0.050))
    sym = Plan([Request.prefill(N)], decoder_replay="bounded")

    def cold_form():
        from_nothing()
        return closed_form(model, sym, "sol_time")
    rows.append(("closed form: prefill SOL time", timed(cold_form, max(1, repeats // 2)), 0.5))
    f = closed_form(model, sym, "sol_time").lambdify()
    xs = np.arange(1, 1_000_001, dtype=np.int64)
    rows.append(("sweep of 10^6 N (lambdified)", timed(lambda: f(xs), repeats), len(xs) / 1e7))  # 10^7 points/s
    print(f"{'case':<36} {'median ms':>10} {'min':>9} {'max':>9} {'target ms':>10} {'median/target':>14}")
    for name, ts, target in rows:
        med = statistics.median(ts)
        rate = f"   -> {len(xs) / med:,.0f} points/s (target >= 10,000,000)" if name.startswith("sweep") else ""
        print(f"{name:<36} {med * 1e3:>10.1f} {min(ts) * 1e3:>9.1f} {max(ts) * 1e3:>9.1f} {target * 1e3:>10.0f} "
              f"{med / target:>14.2f}{rate}")

if __name__ == "__main__":
    main()
