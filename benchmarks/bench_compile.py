"""Where a compile's time goes on DeepSeek-V4.1-Flash: lowering, each pass, the schedule, ``verify()``; warm, cold.

Run it from the repository root (the package must be installed, e.g. ``pip install -e .``)::

    python benchmarks/bench_compile.py            # 15 repeats per case
    python benchmarks/bench_compile.py --repeats 30 --json

Two plans: one prefill (a length drawn over 4K–16K each repeat) and the 256-request mix
(``common.mixed_batch``, every length moved by a new offset each repeat). Every repeat is a new plan of
the case's shape, timed step by step with ``time.perf_counter``: ``lower``, each pass of ``compile``'s
pipeline on the graph the previous one produced (``schedule`` last, on h200_sxm), then ``verify()`` of
the five graphs ``compile_graph(check=True)`` checks (the lowered graph and each pass's output, one
``run``), and its ratio to the compile (the sum of the steps). *Warm*: the shape compiled before
(one warm-up plan of the shape). *Cold*: every memo and cached function cleared before the repeat
(``common.from_nothing``): each step from nothing but the imports and the loaded model. Besides, whole
calls, warm, each on its own new plan: ``compile_graph(check=False)``, ``compile_graph(check=True)``
(the default: ``verify()`` after lowering and every pass) and ``compile``.

Prints medians in ms; asserts nothing (wall-clock figures belong in a report, not a test).
``benchmarks/profile_doc.py`` writes docs/profile.md from these measurements.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Callable

from common import COLD, WARM, drawn_length, from_nothing, header, mixed_batch, shifted

from v41graph import Plan, Request, load_model, lower
from v41graph.costs.hardware import load_hardware
from v41graph.ir.verify import verify
from v41graph.passes import PassContext, compile, compile_graph
from v41graph.passes.fusion import Fusion
from v41graph.passes.kv_dedup import KVDedup
from v41graph.passes.precision import PrecisionAnnotation
from v41graph.passes.registry import arrange
from v41graph.passes.replay import ReplayPruning
from v41graph.passes.scheduling import Scheduling

_MIX = mixed_batch()
#: each case's plan for repeat ``i`` (a new one every repeat; ``i = -1``: the warm-up, another again)
CASES: dict[str, Callable[[int], Plan]] = {
    "prefill 4K-16K": lambda i: Plan([Request.prefill(drawn_length(i, 11))]),
    "256-request mix": lambda i: shifted(_MIX, 1 + 7 * i),  # (the mix's longest decode is 3,111 below the limit)
}
VERIFY = "verify()"


def _passes(hardware) -> tuple:
    """``compile``'s SOL pipeline, in its order."""
    return arrange((PrecisionAnnotation(), ReplayPruning(), KVDedup(), Fusion(), Scheduling(hardware)))


def steps(model, plan: Plan, hardware) -> dict[str, float]:
    """Seconds per step of one compile of ``plan`` (lower, each pass, then ``verify()`` as
    ``compile_graph(check=True)`` runs it) and ``"compile"``, the sum of lower and the passes."""
    out, graphs = {}, []
    start = time.perf_counter()
    graph = lower(model, plan)
    out["lower"] = time.perf_counter() - start
    ctx = PassContext(model, plan)
    for p in _passes(hardware):
        graphs.append(graph)
        start = time.perf_counter()
        graph = p(graph, ctx).graph
        out[p.name] = time.perf_counter() - start
    out["compile"] = sum(out.values())
    run: dict = {}
    start = time.perf_counter()
    for g in graphs:  # the lowered graph and each output of compile_graph's passes (schedule's is not checked)
        verify(g, run)
    out[VERIFY] = time.perf_counter() - start
    return out


def whole(model, make: Callable[[int], Plan], repeats: int, hardware) -> dict[str, float]:
    """Median seconds of whole warm calls, each on a new plan (indexes after the step repeats')."""
    calls = {"compile_graph(check=False)": lambda p: compile_graph(model, p, check=False),
             "compile_graph(check=True)": lambda p: compile_graph(model, p, check=True),
             "compile (lower, passes, schedule)": lambda p: compile(model, p, hardware)}
    times: dict[str, list[float]] = {k: [] for k in calls}
    for i in range(repeats):
        for k, (name, call) in enumerate(calls.items()):
            plan = make(repeats * (2 + k) + i)
            start = time.perf_counter()
            call(plan)
            times[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def measure(repeats: int) -> dict:
    """Every case's median seconds: ``{case: {"warm": {step: s}, "cold": {step: s}, "whole": {call: s}}}``."""
    model, hardware = load_model("deepseek-v4.1-flash"), load_hardware("h200_sxm")
    out = {}
    for name, make in CASES.items():
        compile(model, make(-1), hardware)  # the warm-up: the shape, seen once
        warm = [steps(model, make(i), hardware) for i in range(repeats)]
        cold = []
        for i in range(repeats):
            from_nothing()
            cold.append(steps(model, make(repeats + i), hardware))
        compile(model, make(-2), hardware)  # seen again after the last clearing
        out[name] = {"warm": _medians(warm), "cold": _medians(cold), "whole": whole(model, make, repeats, hardware),
                     "nodes": len(lower(model, make(-1)).nodes)}
    return out


def _medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="repeats per figure (at least 3; default 15)")
    parser.add_argument("--json", action="store_true", help="the medians as JSON (seconds)")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error(f"--repeats: at least 3, got {args.repeats}")
    print(header(f"compile steps on DeepSeek-V4.1-Flash, each repeat a new plan of the case's shape; {WARM}; "
                 f"{COLD}", args.repeats))
    found = measure(args.repeats)
    if args.json:
        print(json.dumps(found, indent=1))
        return
    for name, case in found.items():
        compiled = case["warm"]["compile"]
        print(f"{name} ({case['nodes']} nodes lowered)")
        print(f"  {'step':<36} {'warm ms':>9} {'cold ms':>9}")
        for step, s in case["warm"].items():
            ratio = f"   {s / compiled:.2f} x the warm compile" if step == VERIFY else ""
            print(f"  {step:<36} {s * 1e3:>9.2f} {case['cold'][step] * 1e3:>9.2f}{ratio}")
        for call, s in case["whole"].items():
            print(f"  {call:<36} {s * 1e3:>9.2f} {'-':>9}")


if __name__ == "__main__":
    main()
