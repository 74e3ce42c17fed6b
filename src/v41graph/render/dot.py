"""DOT diagrams of a :class:`~v41graph.ir.graph.Graph` (SVG and files from them: :mod:`.dot_files`).

The text is built with the ``graphviz`` package and is deterministic: nodes in sorted id order,
edges sorted by ``(src, dst, role)``, and op colours taken from a fixed palette by the MD5 of the
op kind's name (Python's ``hash()`` is salted per process), so a ``Gemm`` has the same colour in
every diagram, run and process (the torch.fx drawer does the same).

Layout: one cluster per stage, inside it one cluster per layer (``layer 20 · decoder · full``)
whose cache storage sits in a ``storage`` sub-cluster as cylinders. A node outside the selection
that feeds a drawn node (the KV owner's ``L20.store.main_kv``, a Top-K producer, the residual
from the previous layer) is drawn as a grey dashed stub, so the reader sees where it comes from.

>>> from v41graph import load_model, lower, Plan, Request
>>> g = lower(load_model(), Plan([Request.prefill(256)]))
>>> text = render_dot(g, layers=[29])
>>> '"L20.store.main_kv" -> "L29.kv_unpack"' in text, '"L28.idx.topk" -> "L29.attn"' in text
(True, True)
>>> kind_colour("Gemm") == kind_colour("Gemm"), kind_colour("GlobalKVStore", storage=True)
(True, '#ece7f2')
"""

from __future__ import annotations

import operator
import re
from typing import Collection, Iterable, Mapping

import graphviz

from ..errors import GraphError, PlanError, expect
from ..ir.graph import Edge, Graph, Node
from .dot_colours import PALETTE, STORAGE_PALETTE, kind_colour  # noqa: F401 - re-exported (part of this API)
from .dot_files import RENDERERS, find_renderer, svg_text, write_diagram  # noqa: F401 - re-exported (this API)

STAGES = ("vision", "backbone", "encoder", "decoder", "dspark", "head")  # drawing order of the clusters

_STUB = {"shape": "box", "style": "dashed", "color": "grey60", "fontcolor": "grey40", "fontsize": "9"}
_LAYER_PREFIX = re.compile(r"^([LD])(\d+)\.")


#: the layers ``dot`` draws without ``--layers``: two, so a diagram stays readable
DEFAULT_LAYERS = range(19, 21)


def drawn_layers(model, plan, layers: range | None = None) -> range:
    """The layers ``dot`` draws of ``model`` under ``plan``: ``layers`` (A:B inclusive as a range), or
    :data:`DEFAULT_LAYERS`; a range past the last layer (or past the last draft block, which is drawn after
    the last layer when the plan runs DSpark) is refused before any work, as a huge one would take forever.

    >>> from v41graph import load_model, Plan, Request
    >>> drawn_layers(load_model(), Plan([Request.prefill(8)]))
    range(19, 21)
    >>> drawn_layers(load_model(), Plan([Request.prefill(8)]), range(30, 41))
    Traceback (most recent call last):
    ...
    v41graph.errors.PlanError: dot --layers: 30:40 goes past the last layer 39 of model 'deepseek-v4.1-flash'
    """
    layers = layers or DEFAULT_LAYERS
    drafts = plan.dspark == "on"
    last = len(model.layers) - 1 + (len(model.draft_blocks) if drafts else 0)
    if layers.stop - 1 > last:
        raise PlanError(f"dot --layers: {layers.start}:{layers.stop - 1} goes past the last layer "
                        f"{last} of model {model.name!r}{' and its draft blocks' if drafts else ''}")
    return layers


def _ints(layers: Iterable[int]) -> list[int]:
    out = []
    for layer in layers:
        if isinstance(layer, bool) or not hasattr(layer, "__index__"):
            raise GraphError(f"render_dot layers: expected ints, got {layer!r}")
        out.append(operator.index(layer))
    return out


def _select(graph: Graph, layers: Iterable[int] | None, stages: Collection[str] | None) -> set[str]:
    """Ids of the nodes to draw; bad or empty selections raise :class:`GraphError`."""
    wanted_layers = None if layers is None else set(layers)
    if wanted_layers is not None:
        present = {n.layer for n in graph.nodes.values() if n.layer is not None}
        for layer in sorted(wanted_layers):
            if layer not in present:
                raise GraphError(f"render_dot layers: no node in layer {layer} "
                                 f"(the graph has layers {_runs(present) or 'none'})")
    if stages is not None:
        unknown = sorted(s for s in stages if s not in STAGES)
        if unknown:
            raise GraphError(f"render_dot stages: unknown stage {unknown[0]!r} (known: {', '.join(STAGES)})")
    drawn = {n.id for n in graph.nodes.values()
             if (wanted_layers is None or n.layer in wanted_layers) and (stages is None or n.stage in stages)}
    if not drawn:
        chosen = "all" if wanted_layers is None else f"[{_runs(wanted_layers)}]"
        raise GraphError(f"render_dot: no node is in layers {chosen} and stages "
                         f"{'all' if stages is None else sorted(stages)}")
    return drawn


def _stage_order(stage: str) -> tuple[int, str]:
    return (STAGES.index(stage) if stage in STAGES else len(STAGES), stage)


def _runs(values: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` → ``0–2, 5``."""
    out: list[list[int]] = []
    for v in sorted(set(values)):
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in out)


def _title(graph: Graph, layers: Iterable[int] | None, stages: Collection[str] | None) -> str:
    parts = [graph.model]
    if layers is not None:
        parts.append(("layer " if len(set(layers)) == 1 else "layers ") + _runs(layers))
    if stages is not None:
        parts.append(("stage " if len(stages) == 1 else "stages ") + ", ".join(sorted(stages, key=_stage_order)))
    return " · ".join(parts)


#: how the critical path is drawn (nodes: border; edges: line), and its legend entry
CRITICAL = {"color": "#d62728", "penwidth": "3"}


def _add_node(g: graphviz.Digraph, n: Node, notes: Mapping[str, str] | None = None,
              critical: Collection[str] = ()) -> None:
    short = _LAYER_PREFIX.sub("", n.id)
    kind = n.op.kind
    label = f"{short}\\n{kind}" + (f"\\n{notes[n.id]}" if notes and n.id in notes else "")
    extra = CRITICAL if n.id in critical else {}
    if n.op.storage:
        g.node(n.id, label=label, shape="cylinder", style="filled",
               fillcolor=kind_colour(kind, storage=True), tooltip=n.id, **extra)
    else:
        g.node(n.id, label=label, shape="box", style="filled,rounded",
               fillcolor=kind_colour(kind), tooltip=n.id, **extra)


def _layer_label(nodes: list[Node]) -> str:
    first = nodes[0]
    match = _LAYER_PREFIX.match(first.id)
    name = f"draft block {match.group(2)}" if match and match.group(1) == "D" else f"layer {first.layer}"
    return " · ".join(p for p in (name, first.stage, first.path) if p)


def _layer_cluster(parent: graphviz.Digraph, stage: str, layer: int, nodes: list[Node], *decor) -> None:
    """Compute nodes in the layer's cluster; its caches apart, in a dashed ``storage`` cluster inside."""
    with parent.subgraph(name=f"cluster_{stage}_L{layer}") as lc:
        lc.attr(label=_layer_label(nodes), style="rounded", color="grey70")
        for n in (n for n in nodes if not n.op.storage):
            _add_node(lc, n, *decor)
        if any(n.op.storage for n in nodes):
            with lc.subgraph(name=f"cluster_{stage}_L{layer}_storage") as sc:
                sc.attr(label="storage", style="dashed", color="grey70")
                for n in (n for n in nodes if n.op.storage):
                    _add_node(sc, n, *decor)


def _edge_label(e: Edge, edge_bytes: Mapping[tuple[str, str, str], int] | None) -> str:
    nbytes = None if edge_bytes is None else edge_bytes.get((e.src, e.dst, e.role))
    return f"{e.role} {nbytes:,} B" if nbytes is not None else f"{e.role} {e.dims}×{e.format}"


def _legend(dot: graphviz.Digraph, nodes: list[Node], critical: bool = False, note: str | None = None) -> None:
    """One entry per op kind drawn (storage kinds as cylinders) and one for the external stub."""
    entries = [(f"legend_{k}", {"label": k, "shape": "box", "style": "filled,rounded", "fillcolor": kind_colour(k)})
               for k in sorted({n.op.kind for n in nodes if not n.op.storage})]
    entries += [(f"legend_storage_{k}", {"label": f"{k} (storage)", "shape": "cylinder", "style": "filled",
                                         "fillcolor": kind_colour(k, storage=True)})
                for k in sorted({n.op.kind for n in nodes if n.op.storage})]
    entries.append(("legend_external", {"label": "outside the selection", **_STUB}))
    if critical:
        entries.append(("legend_critical", {"label": "critical path", "shape": "box", "style": "rounded", **CRITICAL}))
    if note:  # e.g. the time by op family of a scheduled graph (dot_costs.py)
        entries.append(("legend_families", {"label": note, "shape": "note", "style": "filled", "fillcolor": "white"}))
    with dot.subgraph(name="cluster_legend") as lg:
        lg.attr(label="legend", style="rounded", color="grey50")
        for name, attrs in entries:
            lg.node(name, **attrs)
        ids = [name for name, _ in entries]
        for a, b in zip(ids, ids[1:]):  # invisible edges stack the entries vertically
            lg.edge(a, b, style="invis")


def render_dot(graph: Graph, layers: Iterable[int] | None = None, stages: Collection[str] | None = None,
               title: str | None = None, *, edge_bytes: Mapping[tuple[str, str, str], int] | None = None,
               node_notes: Mapping[str, str] | None = None, critical_path: tuple[str, ...] = (),
               legend_note: str | None = None) -> str:
    """DOT text of ``graph``, or of the nodes in ``layers`` and ``stages``.

    Parameters
    ----------
    graph : Graph
        A lowered (or passed) graph.
    layers : iterable of int, optional
        Layer indices to draw (``[19, 20]``, ``range(19, 21)``); a node is drawn when its
        ``.layer`` is listed (draft blocks carry their own indices after the backbone's; nodes
        without a layer — ``embed``, ``head.*`` — are not drawn). ``None`` draws every layer.
    stages : collection of str, optional
        Stage names (``"encoder"``, ``"decoder"``, ``"head"`` …, or one name) to draw; ``None``
        draws all. With ``layers``, a node must match both.
    title : str, optional
        The diagram's title; by default the model name and the selection.
    edge_bytes : mapping, optional
        Bytes per edge keyed by ``(src, dst, role)``; such edges are labelled ``role N B``,
        the others ``role dims×format``.
    node_notes : mapping, optional
        A third label line per node id, e.g. its SOL time and bound from a scheduled graph
        (``render.dot_costs``, ``examples/02_boundary_diagram.py``).
    critical_path : tuple of str, optional
        Node ids in path order: those nodes and the edges between consecutive ones are drawn
        bold in :data:`CRITICAL`'s colour, with a legend entry.

    Returns
    -------
    str
        The DOT source, byte-identical for equal inputs in any process.

    Raises
    ------
    GraphError
        A layer that is not an int or has no node, an unknown stage, or a selection of no node.
    """
    expect(graph, Graph, "render_dot graph", GraphError, " (v41graph.lower(...) or a compiled result's .graph)")
    layers = None if layers is None else _ints(layers)  # iterate once: a generator is welcome
    stages = None if stages is None else {stages} if isinstance(stages, str) else set(stages)
    drawn = _select(graph, layers, stages)
    dot = graphviz.Digraph("v41graph", graph_attr={"label": title or _title(graph, layers, stages),
                                                   "labelloc": "t", "fontname": "Helvetica"},
                           node_attr={"fontname": "Helvetica", "fontsize": "10"},
                           edge_attr={"fontname": "Helvetica", "fontsize": "8"})
    nodes = [graph.nodes[i] for i in sorted(drawn)]
    on_path, path_edges = set(critical_path), set(zip(critical_path, critical_path[1:]))
    for stage in sorted({n.stage for n in nodes}, key=_stage_order):
        with dot.subgraph(name=f"cluster_{stage}") as sg:
            sg.attr(label=stage, style="rounded", color="grey50")
            in_stage = [n for n in nodes if n.stage == stage]
            for n in in_stage:
                if n.layer is None:
                    _add_node(sg, n, node_notes, on_path)
            for layer in sorted({n.layer for n in in_stage if n.layer is not None}):
                _layer_cluster(sg, stage, layer, [n for n in in_stage if n.layer == layer], node_notes, on_path)
    edges = sorted((e for e in graph.edges if e.dst in drawn), key=lambda e: (e.src, e.dst, e.role, e.dims, e.format))
    for src in sorted({e.src for e in edges} - drawn):
        dot.node(src, label=src, tooltip=f"{src} (not drawn)", **_STUB)
    for e in edges:
        external = {} if e.src in drawn else {"style": "dashed", "color": "grey50"}
        style = {**external, **(CRITICAL if (e.src, e.dst) in path_edges else {})}
        dot.edge(e.src, e.dst, label=_edge_label(e, edge_bytes), **style)
    _legend(dot, nodes, critical=bool(on_path & drawn), note=legend_note)
    return dot.source
