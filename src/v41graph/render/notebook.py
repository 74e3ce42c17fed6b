"""Diagrams in notebooks: ``display(diagram(result, layers=[20]))`` shows the SVG inline.

Graphs and compiled results display as HTML tables by themselves (``ir/display.py``,
``passes/display.py``); a drawing needs the DOT backend, which those lower layers may not
import, so it is this wrapper: an object with ``_repr_svg_`` (rendered by the first DOT
renderer found) and the DOT text as its plain ``repr`` fallback.

>>> from v41graph import load_model, compile, Plan, Request
>>> d = diagram(compile(load_model(), Plan([Request.prefill(256)])), layers=[20])
>>> d.dot.startswith("digraph v41graph {"), len(repr(d)) <= 300
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..errors import GraphError
from ..ir.graph import Graph
from .dot import render_dot
from .dot_files import find_renderer, render_svg
from .dot_costs import render_cost_dot


@dataclass(frozen=True)
class Diagram:
    """DOT text that notebooks show as SVG."""

    dot: str

    def __repr__(self) -> str:
        return f"Diagram({len(self.dot.splitlines())} lines of DOT; display() it in a notebook for the SVG)"

    def _repr_svg_(self) -> str | None:
        exe = find_renderer()
        return None if exe is None else render_svg(exe, self.dot, 120.0).decode("utf-8")


def diagram(obj, layers: Iterable[int] | None = None, *, collapse: bool = False) -> Diagram:
    """A :class:`Diagram` of a graph, or of a scheduled result with times and the critical path."""
    if isinstance(obj, Graph):
        return Diagram(render_dot(obj, layers))
    if hasattr(obj, "graph") and hasattr(obj, "report"):
        return Diagram(render_cost_dot(obj, layers, collapse=collapse))
    raise GraphError(f"diagram: expected a Graph or a compiled result, got {type(obj).__name__}")
