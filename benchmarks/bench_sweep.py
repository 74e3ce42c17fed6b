"""Speed of sweeps: the closed-form fast path over 10^6 prompt lengths, and a compiled grid.

Run: ``python benchmarks/bench_sweep.py [--repeats R]``. Prints medians (min, max) in ms, wall
clock and this process's CPU time (the machine may be shared), and the ratio to the target;
asserts nothing (tests never depend on time; ``tests/test_sweep.py`` checks the values).

What is timed: building ``LengthSweep`` for one symbolic plan (*cold*: every memo and cached function
cleared before each build, ``common.from_nothing``); evaluating the built sweep over the same 10^6
lengths (numpy over a built function: nothing to warm); two compiled grids, once each (their first
run in this process: the shapes new).

Target (issue 13): a closed-form sweep of one plan shape over 10^6 prompt lengths in < 1 s.
"""

from __future__ import annotations

import statistics

from common import COLD, cpu_and_wall, from_nothing, header, repeats_option
import numpy as np

from v41graph import Plan, Request, load_model, sweep
from v41graph.analysis.sweep.length_sweep import LengthSweep
from v41graph.symbols import N


def main() -> None:
    repeats = repeats_option(__doc__, 5, 1)
    model = load_model()
    lengths = np.arange(1, 1_000_001, dtype=np.int64)
    plan = Plan([Request.prefill(N)], decoder_replay="bounded")
    rows = []
    print(header(f"LengthSweep build ({COLD}), its evaluation over 10^6 lengths, two grids once each", repeats))

    def build():
        from_nothing()
        return LengthSweep(model, plan, "h200_sxm")
    rows.append(("fast path: build (1 symbolic compile), cold", *cpu_and_wall(build, max(1, repeats // 2)), None))
    ls = LengthSweep(model, plan, "h200_sxm")
    rows.append(("fast path: 10^6 lengths, forward time", *cpu_and_wall(lambda: ls.evaluate(lengths, bound=False),
                                                                          repeats), 1.0))
    rows.append(("fast path: 10^6 lengths, + bound", *cpu_and_wall(lambda: ls.evaluate(lengths), repeats), 1.0))
    rows.append(("compiled grid: 8 points (16 forwards)", *cpu_and_wall(
        lambda: sweep(prompt=[1024, 8192], tp=[1, 8], replay=["off", "bounded"], cost_mode=["sol"],
                      executor="serial"), 1), None))
    rows.append(("forecast grid: 8 points (16 + 16 SOL)", *cpu_and_wall(  # the default: hybrid beside SOL
        lambda: sweep(prompt=[1024, 8192], tp=[1, 8], replay=["off", "bounded"], executor="serial"), 1), None))
    print(f"{'case':<40} {'wall median ms':>15} {'cpu median ms':>14} {'min wall':>9} {'target ms':>10} "
          f"{'wall/target':>12}")
    for name, wall, cpu, target in rows:
        med = statistics.median(wall)
        ratio = f"{med / target:.2f}" if target else "-"
        print(f"{name:<40} {med * 1e3:>15.1f} {statistics.median(cpu) * 1e3:>14.1f} {min(wall) * 1e3:>9.1f} "
              f"{target * 1e3 if target else float('nan'):>10.0f} {ratio:>12}")


if __name__ == "__main__":
    main()
