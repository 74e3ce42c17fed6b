"""How long ``lower`` takes on DeepSeek-V4.1-Flash: one 8K prefill, and a mixed batch of 256 requests.

Run it from the repository root (the package must be installed, e.g. ``pip install -e .``)::

    python benchmarks/bench_lower.py            # 30 repeats per case
    python benchmarks/bench_lower.py --repeats 100

Every repeat lowers a new plan of the case's shape (the prefill: a length drawn over 4K–16K; the
mix: every length moved by a new offset), timed with ``time.perf_counter`` around ``lower(model,
plan)`` only (the model loaded and the plan built outside the timed region): *warm*, the shape
lowered before (its template kept, ``ir/lower/template.py``), and *cold*, every memo and cached
function cleared before the repeat (``common.from_nothing``). The report gives the median, min and
max over the repeats, plus the node and edge counts of the graph. Nothing here asserts a time:
wall-clock figures depend on the machine and belong in a report, not in a test.
"""

from __future__ import annotations

import statistics
import time

from common import COLD, WARM, drawn_length, from_nothing, header, mixed_batch, repeats_option, shifted

from v41graph import Plan, Request, load_model, lower

_MIX = mixed_batch()
#: each case's plan for repeat ``i``: a new one every repeat
CASES = {
    "prefill 4K-16K": lambda i: Plan([Request.prefill(drawn_length(i, 31))], label="prefill"),
    "mixed 256 (32 prefill + 224 decode)": lambda i: shifted(_MIX, 1 + 7 * i),
}


def bench(model, make, repeats: int, cold: bool) -> tuple[list[float], int, int]:
    """Seconds per ``lower`` call over ``repeats`` new plans, and the graph's node / edge counts."""
    times = []
    graph = None
    for i in range(repeats):
        plan = make(i + (repeats if cold else 0))
        if cold:
            from_nothing()
        start = time.perf_counter()
        graph = lower(model, plan)
        times.append(time.perf_counter() - start)
    return times, len(graph.nodes), len(graph.edges)


def main(argv: list[str] | None = None) -> None:
    repeats = repeats_option(__doc__, 30, 20, argv)
    model = load_model("deepseek-v4.1-flash")
    print(header(f"lower() on {model.name}, each repeat a new plan of the case's shape; {WARM}; {COLD}", repeats))
    top = f"{'case':<46} {'requests':>8} {'nodes':>6} {'edges':>6} {'median ms':>10} {'min ms':>8} {'max ms':>8}"
    print(top)
    print("-" * len(top))
    for name, make in CASES.items():
        lower(model, make(-1))  # warm-up: the shape lowered once
        for kind, cold in (("warm", False), ("cold", True)):
            times, nodes, edges = bench(model, make, repeats, cold)
            ms = [t * 1e3 for t in times]
            print(f"{name + ', ' + kind:<46} {len(make(0).requests):>8} {nodes:>6} {edges:>6} "
                  f"{statistics.median(ms):>10.2f} {min(ms):>8.2f} {max(ms):>8.2f}")


if __name__ == "__main__":
    main()
