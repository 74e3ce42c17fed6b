"""Do the closed forms equal the numbers over the whole domain? (issue 10's acceptance figures)

Run from the repository root: ``python benchmarks/closed_form_agreement.py [--random 50 --bytes-random 200]``.

* ``sol_time`` of an N-token prefill with bounded decoder replay (what ``v41graph report`` runs):
  the Piecewise closed form against the numeric schedule's total, at N = 1, 64, 8,192,
  131,072, 524,288, 1,048,576 and at random N (seed 10); the largest relative difference.
* ``bytes`` of the same plan against the sum of the numeric graph's node bytes, exactly, at
  N = 1, 100, 128, 129 and at random N; the largest absolute difference.
* N = 0 and N = 1,048,577 must be refused.

Slow (a numeric schedule per point); the test suite checks a sample of the same points.
"""

from __future__ import annotations

import argparse
import random
import time
from fractions import Fraction

from v41graph import Plan, Request, load_model
from v41graph.analysis.symbolic.query import bind, closed_form
from v41graph.passes import compile
from v41graph.costs.counts import CostContext
from v41graph.costs.node import node_cost
from v41graph.errors import CostError
from v41graph.passes import compile_graph
from v41graph.symbols import N


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--random", type=int, default=50)
    ap.add_argument("--bytes-random", type=int, default=200)
    args = ap.parse_args()
    model, plan = load_model(), Plan([Request.prefill(N)], decoder_replay="bounded")
    rng = random.Random(10)
    t = time.perf_counter()
    sol = closed_form(model, plan, "sol_time")
    print(f"sol_time closed form: {len(sol.pieces)} pieces over {sol.valid_range}, built in "
          f"{time.perf_counter() - t:.1f} s: {[(a, b) for a, b, _ in sol.pieces]}")
    points = [1, 64, 8192, 131_072, 524_288, 1_048_576] + [rng.randint(1, 1_048_576) for _ in range(args.random)]
    worst = 0.0
    for n in points:
        numeric = compile(model, bind(plan, {"N": n}), "h200_sxm").report("schedule").total_time_s
        worst = max(worst, abs(float(sol(N=n)) / numeric - 1))
    print(f"sol_time: {len(points)} points, largest relative difference {worst:.3g}")
    t = time.perf_counter()
    form = closed_form(model, plan, "bytes")
    print(f"bytes closed form: {len(form.pieces)} pieces, built in {time.perf_counter() - t:.1f} s")
    points = [1, 100, 128, 129] + [rng.randint(1, 1_048_576) for _ in range(args.bytes_random)]
    worst_b = Fraction(0)
    for n in points:
        p = bind(plan, {"N": n})
        g, ctx = compile_graph(model, p, check=False).graph, CostContext(model, p)
        numeric = sum((Fraction(node_cost(g, x, ctx).total_bytes) for x in g.nodes), Fraction(0))
        got = form(N=n)
        worst_b = max(worst_b, abs(Fraction(int(got.p), int(got.q)) - numeric) if hasattr(got, "p")
                      else abs(got - numeric))
    print(f"bytes: {len(points)} points, largest difference {worst_b} B")
    for n in (0, 1_048_577):
        try:
            sol(N=n)
            print(f"N = {n}: NOT refused")
        except CostError as exc:
            print(f"N = {n}: refused ({exc})")


if __name__ == "__main__":
    main()
