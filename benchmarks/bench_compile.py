"""How long compiling takes on DeepSeek-V4.1-Flash: lowering, the pass pipeline, and each pass.

Run it from the repository root (the package must be installed, e.g. ``pip install -e .``)::

    python benchmarks/bench_compile.py            # 20 repeats per case
    python benchmarks/bench_compile.py --repeats 50

Two plans, the same as ``bench_lower.py``: one uncached 8K-token prefill, and a mixed batch of
256 requests (32 prefills + 224 decodes). For each plan it times ``lower`` alone,
``compile_graph(..., check=False)`` (lowering plus the default pipeline), the same with
``check=True`` (``verify()`` after lowering and after every pass) and, separately, each pass of
the default pipeline on the graph the previous pass produced. Times come from
``time.perf_counter``; the report gives the median, min and max in milliseconds. The model is
loaded and one warm-up compile per plan runs before timing. Nothing here asserts a time:
wall-clock figures depend on the machine and belong in a report, not in a test.
"""

from __future__ import annotations

import statistics
from typing import Callable

from common import mixed_batch, repeats_option, timed

from v41graph import Plan, Request, load_model, lower
from v41graph.passes import PassContext, compile_graph, default_pipeline

CASES = {
    "prefill 8K": lambda: Plan([Request.prefill(8192)], label="prefill-8k"),
    "mixed 256": mixed_batch,
}


def timed_ms(fn: Callable[[], object], repeats: int) -> list[float]:
    """Milliseconds per call of ``fn`` over ``repeats`` runs."""
    return [t * 1e3 for t in timed(fn, repeats)]


def row(label: str, ms: list[float]) -> str:
    return f"  {label:<30} {statistics.median(ms):>10.2f} {min(ms):>9.2f} {max(ms):>9.2f}"


def main(argv: list[str] | None = None) -> None:
    repeats = repeats_option(__doc__, 20, 10, argv)
    model = load_model("deepseek-v4.1-flash")
    print(f"compile on {model.name}, {repeats} repeats per measurement (passes: check=False unless noted)")
    print(f"  {'step':<30} {'median ms':>10} {'min ms':>9} {'max ms':>9}")
    for name, make in CASES.items():
        plan = make()
        compile_graph(model, plan, check=False)  # warm-up: imports and first-call caches stay out
        print(f"{name} ({len(plan.requests)} requests)")
        print(row("lower", timed_ms(lambda: lower(model, plan), repeats)))
        print(row("lower + passes", timed_ms(lambda: compile_graph(model, plan, check=False), repeats)))
        print(row("lower + passes + verify", timed_ms(lambda: compile_graph(model, plan, check=True), repeats)))
        ctx, graph = PassContext(model, plan), lower(model, plan)
        for p in default_pipeline():
            print(row(f"pass {p.name}", timed_ms(lambda: p(graph, ctx), repeats)))
            graph = p(graph, ctx).graph


if __name__ == "__main__":
    main()
