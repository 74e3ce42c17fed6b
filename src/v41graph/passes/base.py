"""The pass contract and the pass manager: a pass is ``Graph, PassContext -> PassResult``;
:func:`run_pipeline` runs passes in order and, when asked, ``verify()`` between them, naming the
pass that broke the graph and the ones before it (docs/architecture.md, "passes")."""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Callable, Protocol

from ..errors import GraphError
from ..ir.graph import Graph
from ..ir.verify import verify
from ..ir.plan import Plan
from ..model.config import ModelSpec


def picker(keys) -> Callable[[Any], tuple]:
    """``seq → tuple(seq[k] for k in keys)`` in one C-level sweep where it can be (an
    ``itemgetter``, which hands back the item itself rather than a tuple for one key): how a pass
    applying a plan of its shape reads its nodes (or prices) by known ids or places.

    >>> picker(["b", "a"])({"a": 1, "b": 2}), picker([0])([5, 6]), picker([])([5])
    ((2, 1), (5,), ())
    """
    keys = tuple(keys)
    return itemgetter(*keys) if len(keys) > 1 else lambda seq: tuple(seq[k] for k in keys)


@dataclass(frozen=True)
class PassContext:
    """What every pass may read besides the graph: the model and the plan.

    ``at`` binds the symbols of a symbolic plan to one point of a regime: where a pass must
    decide something that depends on them (fusion legality: is ``N − Min(128, N)`` zero?), it
    decides it there, and :mod:`v41graph.analysis.symbolic.query` compiles once per regime.
    """

    model: ModelSpec
    plan: Plan
    at: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class PassResult:
    """A pass's output graph, its number of edits and its typed report."""

    name: str
    graph: Graph
    changed: int
    report: Any


class Pass(Protocol):
    name: str

    def __call__(self, graph: Graph, ctx: PassContext) -> PassResult: ...


@dataclass(frozen=True)
class Compiled:
    """The graph after the pipeline, with every pass's result in order."""

    graph: Graph
    passes: tuple[PassResult, ...]

    def __repr__(self) -> str:  # the dataclass repr would print the whole graph (megabytes)
        from .display import compiled_repr
        return compiled_repr(self)

    def _repr_html_(self) -> str:
        from .display import compiled_html
        return compiled_html(self)

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per node: name, layer, stage, kind, flops, bytes, time, bound, critical."""
        from .display import node_records
        return node_records(self.graph)

    def to_pandas(self):
        """:meth:`to_records` as a ``pandas.DataFrame`` (needs pandas)."""
        from .display import to_pandas
        return to_pandas(self.to_records())

    def report(self, name: str) -> Any:
        for p in self.passes:
            if p.name == name:
                return p.report
        raise GraphError(f"compiled: no pass named {name!r} ran")


def run_pipeline(graph: Graph, ctx: PassContext, passes: tuple[Pass, ...], *, check: bool = True,
                 run: dict | None = None) -> Compiled:
    """Run ``passes`` in order; with ``check`` verify the graph after each one (``run``: the dict the
    caller verified the input graph with, ``verify``'s ``run``)."""
    results: list[PassResult] = []
    run = {} if run is None else run
    for p in passes:
        before = ", ".join(r.name for r in results) or "none"
        try:
            result = p(graph, ctx)
            if check:
                verify(result.graph, run)
        except GraphError as exc:
            raise GraphError(f"pass {p.name!r} broke the graph (passes before it: {before}): {exc}") from None
        results.append(result)
        graph = result.graph
    return Compiled(graph, tuple(results))
