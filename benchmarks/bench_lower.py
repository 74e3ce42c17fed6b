"""How long ``lower`` takes on DeepSeek-V4.1-Flash: one 8K prefill, and a mixed batch of 256 requests.

Run it from the repository root (the package must be installed, e.g. ``pip install -e .``)::

    python benchmarks/bench_lower.py            # 30 repeats per case
    python benchmarks/bench_lower.py --repeats 100

Each case is timed with ``time.perf_counter`` around ``lower(model, plan)`` only (the model is
loaded and the plan built once, outside the timed region); the report gives the median, min and
max over the repeats, plus the node and edge counts of the graph. Nothing here asserts a time:
wall-clock figures depend on the machine and belong in a report, not in a test.
"""

from __future__ import annotations

import statistics
import time

from common import mixed_batch, repeats_option

from v41graph import Plan, Request, load_model, lower

CASES = {
    "prefill 8K": lambda: Plan([Request.prefill(8192)], label="prefill-8k"),
    "mixed 256 (32 prefill + 224 decode)": mixed_batch,
}


def bench(model, plan: Plan, repeats: int) -> tuple[list[float], int, int]:
    """Seconds per ``lower`` call over ``repeats`` runs, and the graph's node / edge counts."""
    times = []
    graph = None
    for _ in range(repeats):
        start = time.perf_counter()
        graph = lower(model, plan)
        times.append(time.perf_counter() - start)
    return times, len(graph.nodes), len(graph.edges)


def main(argv: list[str] | None = None) -> None:
    repeats = repeats_option(__doc__, 30, 20, argv)
    model = load_model("deepseek-v4.1-flash")
    lower(model, CASES["prefill 8K"]())  # warm-up: imports and first-call caches stay out of the figures
    header = f"{'case':<38} {'requests':>8} {'nodes':>6} {'edges':>6} {'median ms':>10} {'min ms':>8} {'max ms':>8}"
    print(f"lower() on {model.name}, {repeats} repeats per case")
    print(header)
    print("-" * len(header))
    for name, make in CASES.items():
        plan = make()
        times, nodes, edges = bench(model, plan, repeats)
        ms = [t * 1e3 for t in times]
        print(f"{name:<38} {len(plan.requests):>8} {nodes:>6} {edges:>6} {statistics.median(ms):>10.2f} "
              f"{min(ms):>8.2f} {max(ms):>8.2f}")


if __name__ == "__main__":
    main()
