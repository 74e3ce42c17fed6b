"""Compiler passes: pure ``Graph -> PassResult`` functions run as a visible pipeline.

Each pass is a frozen dataclass with a ``name``; calling it returns a new graph, how many
edits it made and a small typed report (docs/architecture.md, decision 5). :func:`run_pipeline` runs
``verify()`` between passes when asked and, if a pass breaks the graph, names that pass and
the ones that ran before it.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.passes import compile_graph
>>> result = compile_graph(load_model(), Plan([Request.prefill(1000)], decoder_replay="bounded"))
>>> [p.name for p in result.passes]
['precision', 'replay', 'kv_dedup', 'fusion']
>>> result.passes[1].report.token_layers_after
23432
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import GraphError
from ..ir.graph import Graph, verify
from ..ir.lower.blocks import lower
from ..model.config import ModelSpec
from ..ir.plan import Plan


@dataclass(frozen=True)
class Context:
    """What every pass may read besides the graph: the model and the plan."""

    model: ModelSpec
    plan: Plan


@dataclass(frozen=True)
class PassResult:
    """A pass's output graph, its number of edits and its typed report."""

    name: str
    graph: Graph
    changed: int
    report: Any


class Pass(Protocol):
    name: str

    def __call__(self, graph: Graph, ctx: Context) -> PassResult: ...


@dataclass(frozen=True)
class Compiled:
    """The graph after the pipeline, with every pass's result in order."""

    graph: Graph
    passes: tuple[PassResult, ...]

    def report(self, name: str) -> Any:
        for p in self.passes:
            if p.name == name:
                return p.report
        raise GraphError(f"compiled: no pass named {name!r} ran")


def run_pipeline(graph: Graph, ctx: Context, passes: tuple[Pass, ...], *, check: bool = True) -> Compiled:
    """Run ``passes`` in order; with ``check`` verify the graph after each one."""
    results: list[PassResult] = []
    for p in passes:
        before = ", ".join(r.name for r in results) or "none"
        try:
            result = p(graph, ctx)
            if check:
                verify(result.graph)
        except GraphError as exc:
            raise GraphError(f"pass {p.name!r} broke the graph (passes before it: {before}): {exc}") from None
        results.append(result)
        graph = result.graph
    return Compiled(graph, tuple(results))


def default_pipeline() -> tuple[Pass, ...]:
    # Precision first (everything after it reads bytes), then replay (it changes the token sets
    # the later passes count), then de-duplication (storage before fusion merges any readers),
    # then fusion (it recomputes traffic from the annotated edges).
    from .fusion import Fusion
    from .kv_dedup import KVDedup
    from .precision import PrecisionAnnotation
    from .replay import ReplayPruning
    return (PrecisionAnnotation(), ReplayPruning(), KVDedup(), Fusion())


def schedule(model: ModelSpec, plan: Plan, hardware, *, check: bool = False) -> Compiled:
    """Lower, run the pipeline, then the scheduling pass on ``hardware`` (a name or Hardware)."""
    from ..costs.hardware import Hardware, load_hardware
    from .scheduling import Scheduling
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    return compile_graph(model, plan, check=check, passes=default_pipeline() + (Scheduling(hw),))


def compile_graph(model: ModelSpec, plan: Plan, *, check: bool = True,
                  passes: tuple[Pass, ...] | None = None) -> Compiled:
    """Lower ``plan`` on ``model`` and run the pass pipeline."""
    ctx = Context(model, plan)
    graph = lower(model, plan)
    if check:
        verify(graph)
    return run_pipeline(graph, ctx, default_pipeline() if passes is None else passes, check=check)
