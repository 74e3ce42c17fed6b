"""A graph's short ``repr`` and compact HTML summary for notebooks (plain code, no backends).

>>> from v41graph import load_model, lower, Plan, Request
>>> g = lower(load_model(), Plan([Request.prefill(64)]))
>>> repr(g).startswith("Graph('deepseek-v4.1-flash', ") and len(repr(g)) <= 300
True
>>> "<table>" in g._repr_html_()
True
"""

from __future__ import annotations

import html


def graph_repr(graph) -> str:
    tables = ", ".join(sorted(graph.annotations)) or "none"
    return f"Graph({graph.model!r}, {len(graph.nodes)} nodes, {len(graph.edges)} edges, annotations: {tables})"[:300]


def html_table(rows) -> str:
    """A two-column HTML table of (name, value) pairs."""
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in rows)
    return f"<table>{body}</table>"


def graph_html(graph) -> str:
    counts: dict[str, int] = {}
    for node in graph.nodes.values():
        counts[node.stage] = counts.get(node.stage, 0) + 1
    rows = [("model", graph.model), ("nodes", len(graph.nodes)), ("edges", len(graph.edges))]
    rows += [(f"stage {s}", f"{c} nodes") for s, c in sorted(counts.items())]
    return html_table(rows)
