"""Diagrams with costs: each node's SOL time and bound, the critical path bold and coloured,
stages as clusters; ``collapse=True`` draws one box per layer so all layers stay readable.

Works on a scheduled :class:`~v41graph.passes.Compiled` (``v41graph.compile``): the node times
come from its ``schedule`` side table and the path from its schedule report.

>>> from v41graph import load_model, compile, Plan, Request
>>> c = compile(load_model(), Plan([Request.prefill(1024)]))
>>> text = render_cost_dot(c, layers=[20])
>>> "critical path" in text and 'color="#d62728"' in text
True
>>> text = render_cost_dot(c, collapse=True)
>>> text.count("label=\\"layer ") >= 40
True
"""

from __future__ import annotations

from typing import Collection, Iterable

import graphviz

from ..errors import GraphError
from .dot import CRITICAL, _stage_order, render_dot


#: box fill of a collapsed layer, by attention path (distinct, and apart from the op palette)
PATH_COLOURS = {"swa": "#c6dbef", "full": "#fdd0a2", "reindex": "#c7e9c0", "reuse": "#dadaeb", None: "#f0f0f0"}


def _schedule(compiled):
    try:
        return compiled.report("schedule"), compiled.graph.annotation("schedule")
    except GraphError:
        raise GraphError("dot --costs: needs a scheduled result (v41graph.compile(model, plan, hardware))") from None


def _ms(seconds: float) -> str:
    """Four significant digits in the unit that fits: ``7.68 ns``, ``3.495 µs``, ``8.237 ms``, ``1.174 s``."""
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return "0 s" if seconds == 0 else f"{seconds * 1e9:.4g} ns"


_BASIS = {"sol": "SOL", "op": "OP", "hybrid": "hybrid"}


def plan_words(plan) -> str:
    """The requests and mapping of a plan in a few words: ``decode 64 × 8,192 · tp 8 · ep 8 · dp 1 (8 GPUs)``."""
    from ..model.sharding import mapping_of
    parts = []
    for r in plan.requests:
        copies = f"{r.copies:,} × " if r.copies != 1 else ""
        parts.append(f"{r.kind} {copies}{r.cached:,}+{r.new:,}" if r.cached and r.kind != "decode"
                     else f"{r.kind} {copies}{r.cached if r.kind == 'decode' else r.new:,}")
    mp = mapping_of(plan)
    return f"{', '.join(parts)} · tp {mp.tp} · ep {mp.ep} · dp {mp.dp} ({mp.gpus} GPU{'s' if mp.gpus > 1 else ''})"


def _families_note(compiled, model, plan) -> str:
    from ..analysis.families import SPLIT_RULE, by_family
    f = by_family(model, plan, compiled)
    rows = sorted(f.families.items(), key=lambda kv: (-kv[1].time_s, kv[0]))
    lines = [f"op families (Σ {_ms(f.total_time_s)} over all nodes)"]
    lines += [f"{k}: {_ms(v.time_s)} · {100 * v.time_s / f.total_time_s if f.total_time_s else 0:.1f}%"
              for k, v in rows]
    return "\\l".join([*lines, SPLIT_RULE]) + "\\l"


def cost_notes(compiled) -> dict[str, str]:
    """``"<time> · <bound>"`` per node id."""
    _, slots = _schedule(compiled)
    return {n: f"{_ms(float(s.sol.time))} · {s.sol.bound}" for n, s in slots.items()}


def render_cost_dot(compiled, layers: Iterable[int] | None = None, stages: Collection[str] | None = None, *,
                    collapse: bool = False, title: str | None = None, model=None, plan=None) -> str:
    """DOT text of a scheduled graph with times, bounds and the critical path (see module doc).

    Given the ``model`` and ``plan`` it was compiled from, the title names the plan and mapping
    and the legend lists the time by op family (analysis/families.py) over all nodes.
    """
    report, _ = _schedule(compiled)
    basis = _BASIS.get(report.cost_mode, report.cost_mode)
    where = f" · {plan_words(plan)}" if plan is not None else ""
    head = title or f"{compiled.graph.model} · {report.hardware}{where} · {basis} total {_ms(report.total_time_s)}"
    note = _families_note(compiled, model, plan) if model is not None and plan is not None else None
    if not collapse:
        return render_dot(compiled.graph, layers, stages, head, node_notes=cost_notes(compiled),
                          critical_path=report.critical_path, legend_note=note)
    return _collapsed(compiled, report, head, None if layers is None else set(layers), note)


def _box(node) -> str:
    return f"{node.stage}.L{node.layer}" if node.layer is not None else f"{node.stage}.rest"


def _collapsed(compiled, report, title: str, layers: set[int] | None, note: str | None = None) -> str:
    """One box per (stage, layer); the nodes without a layer as one box per stage."""
    graph, slots = compiled.graph, compiled.graph.annotation("schedule")
    members: dict[str, list] = {}
    for n in graph.nodes.values():
        if layers is None or n.layer in layers:
            members.setdefault(_box(n), []).append(n)
    if not members:
        raise GraphError(f"dot --collapse: no node in layers {sorted(layers or ())}")
    box_of = {n.id: _box(n) for ns in members.values() for n in ns}
    path = report.critical_path
    on_path = {box_of[n] for n in path if n in box_of}
    path_edges = {(box_of[a], box_of[b]) for a, b in zip(path, path[1:]) if a in box_of and b in box_of}
    dot = graphviz.Digraph("v41graph", graph_attr={"label": title, "labelloc": "t", "fontname": "Helvetica"},
                           node_attr={"fontname": "Helvetica", "fontsize": "10", "shape": "box",
                                      "style": "filled,rounded"}, edge_attr={"color": "grey50"})
    for stage in sorted({ns[0].stage for ns in members.values()}, key=_stage_order):
        with dot.subgraph(name=f"cluster_{stage}") as sg:
            sg.attr(label=stage, style="rounded", color="grey50")
            for box in sorted((b for b, ns in members.items() if ns[0].stage == stage),
                              key=lambda b: (members[b][0].layer is None, members[b][0].layer or 0)):
                _collapsed_box(sg, box, members[box], slots, box in on_path)
    edges = sorted({(box_of[e.src], box_of[e.dst]) for e in graph.edges
                    if e.src in box_of and e.dst in box_of and box_of[e.src] != box_of[e.dst]})
    for a, b in edges:
        dot.edge(a, b, **(CRITICAL if (a, b) in path_edges else {}))
    with dot.subgraph(name="cluster_legend") as lg:
        lg.attr(label="legend", style="rounded", color="grey50")
        names = []
        for p, colour in PATH_COLOURS.items():
            names.append(f"legend_{p or 'none'}")
            lg.node(names[-1], label=f"{p or 'no layer'} path" if p else "no layer", fillcolor=colour)
        names.append("legend_critical")
        lg.node(names[-1], label="critical path", style="rounded", **CRITICAL)
        if note:
            names.append("legend_families")
            lg.node(names[-1], label=note, shape="note", style="filled", fillcolor="white")
        for a, b in zip(names, names[1:]):
            lg.edge(a, b, style="invis")
    return dot.source


def _collapsed_box(g, box: str, nodes: list, slots, critical: bool) -> None:
    first = nodes[0]
    time = sum(float(slots[n.id].sol.time) for n in nodes if n.id in slots)
    by_bound: dict[str, float] = {}
    for n in nodes:
        if n.id in slots:
            sol = slots[n.id].sol
            by_bound[sol.bound] = by_bound.get(sol.bound, 0.0) + float(sol.time)
    bound = max(sorted(by_bound), key=lambda k: by_bound[k]) if by_bound else "none"
    name = f"layer {first.layer} · {first.path}" if first.layer is not None else f"{first.stage} (no layer)"
    g.node(box, label=f"{name}\\n{_ms(time)} · {bound}\\n{len(nodes)} nodes",
           fillcolor=PATH_COLOURS.get(first.path if first.layer is not None else None, PATH_COLOURS[None]),
           **(CRITICAL if critical else {}))
