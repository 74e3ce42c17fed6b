"""Speed of closed forms (issue 14): building them, and sweeping them through numpy.

Run: ``python benchmarks/bench_closed_form.py [--repeats R]``. Prints medians in ms (wall
clock, and this process's CPU time: the machine may be shared) and the ratio to each target;
asserts nothing (tests never depend on wall-clock time).

- build: ``closed_form(load_model(), Plan([Request.prefill(N)], decoder_replay="bounded"),
  "sol_time")``, the Piecewise over 1 ≤ N ≤ 1,048,576. Target <= 0.5 s (the issue's bound for
  the full piecewise form is 2 s). The first build in a process is shown apart: it also fills
  sympy's caches. Then *cold*: every memo and cached function cleared before each build
  (``common.from_nothing``; sympy's own caches stay warm), and *warm*: the same form built again
  with the memos kept (the lowering template, the passes' plans, the symbolic sums): what a second
  question about the same symbolic plan costs. A closed form has one plan (its lengths are the
  symbol), so a warm repeat is that plan again, not another of its shape.
- sweep: that form's ``lambdify()`` at N = 1 .. 10^6, sorted and shuffled. Target >= 10^7
  points per second; the ratio printed is 10^7 / (points per second), so <= 1 meets it.
- for reference, without targets: SOL forms of decode in L and in B, one in two symbols
  (extend P:S, compiled and pathed at one binding), and building the numpy function.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from common import COLD, cpu_and_wall, from_nothing, header, repeats_option
import numpy as np

from v41graph import Plan, Request, load_model
from v41graph.analysis.symbolic.query import closed_form
from v41graph.symbols import B, L, N, P, S

PREFILL = Plan([Request.prefill(N)], decoder_replay="bounded")
OTHERS = {
    "closed form: decode in L (64 copies)": Plan([Request.decode(L, copies=64)]),
    "closed form: decode 8K in B": Plan([Request.decode(8192, copies=B)]),
    "closed form: extend P:S (two symbols)": Plan([Request.extend(P, S)], decoder_replay="bounded"),
}
BUILD_TARGET_S, POINTS_TARGET = 0.5, 1e7


def _row(name: str, wall: list[float], cpu: list[float], ratio: str = "-", extra: str = "") -> None:
    print(f"{name:<44} {statistics.median(wall) * 1e3:>10.1f} {statistics.median(cpu) * 1e3:>9.1f} "
          f"{min(wall) * 1e3:>9.1f} {ratio:>8}{extra}")


def main() -> None:
    repeats = repeats_option(__doc__, 5, 1)
    model = load_model()
    print(header(f"closed-form builds (the first apart; {COLD}; warm: the same plan again, memos kept), "
                 "lambdify, sweeps; this process's CPU time beside", repeats))
    print(f"{'case':<44} {'wall ms':>10} {'cpu ms':>9} {'min wall':>9} {'ratio':>8}")
    wall, cpu = cpu_and_wall(lambda: closed_form(model, PREFILL, "sol_time"), 1)
    _row("closed form: prefill SOL time, first build", wall, cpu)

    def cold():
        from_nothing()
        return closed_form(model, PREFILL, "sol_time")
    for name, build in (("cold", cold), ("warm", lambda: closed_form(model, PREFILL, "sol_time"))):
        wall, cpu = cpu_and_wall(build, repeats)
        _row(f"closed form: prefill SOL time, {name}", wall, cpu, f"{statistics.median(wall) / BUILD_TARGET_S:.2f}",
             f"   (median / target {BUILD_TARGET_S * 1e3:.0f} ms)")
    for name, plan in OTHERS.items():  # (warm)
        _row(name, *cpu_and_wall(lambda: closed_form(model, plan, "sol_time"), max(1, repeats // 2)))
    cf = closed_form(model, PREFILL, "sol_time")
    _row("lambdify() of the prefill form", *cpu_and_wall(lambda: replace(cf).lambdify(), repeats))  # a copy: unbuilt
    f = cf.lambdify()
    xs = np.arange(1, 1_000_001, dtype=np.int64)
    for name, x in (("sorted", xs), ("shuffled", np.random.default_rng(0).permutation(xs))):
        wall, cpu = cpu_and_wall(lambda: f(x), repeats)
        rate = len(x) / statistics.median(wall)
        _row(f"sweep of 10^6 N (lambdified), {name}", wall, cpu, f"{POINTS_TARGET / rate:.2f}",
             f"   {rate:,.0f} points/s (target >= {POINTS_TARGET:,.0f})")


if __name__ == "__main__":
    main()
