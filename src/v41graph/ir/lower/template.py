"""Lowering once per shape: a lowered graph with its rows taken out, filled again for the next plan.

The block builders read lengths only through :func:`~.context.row_sources` (each node carries
one of those tuples), so the graph they build is fixed by the model's content, the plan's
policies (mapping, DSpark mode, …) and images, and by which row sources are one object (DP rank
0's rows *are* every rank's when dp = 1; every empty tuple is the same one). Under that key the
first lowering is kept as a :class:`Template` — each node with the name of the source it
carries — and a later plan's graph is the template over that plan's sources: the same nodes,
edges and order, and the same sharing of rows tuples between nodes that a fresh lowering gives
(docs/architecture.md, "Shapes").

Before ⇒ after, for a second plan of one shape::

    lower(model, Plan([Request.prefill(8192)]))  builds 1,321 nodes and keeps the template
    lower(model, Plan([Request.prefill(4096)]))  ⇒ the template's nodes over the new rows
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Callable

from ...model.config import ModelSpec
from ..graph import Graph, node_of
from ..ledger import Row
from ..plan import Plan
from ..routing import shared_expert_overlap
from ...reuse import content_digest, refresh
from ..shapes import SHAPES_KEPT, Memo, caching
from .context import SourceKey

_TEMPLATES = Memo("lowering templates", SHAPES_KEPT)
#: the name under which a node carries no rows (storage, or an empty source)
_NONE: SourceKey = ("none",)


def _aliases(sources: dict[SourceKey, tuple[Row, ...]]) -> tuple[tuple[SourceKey, ...], ...]:
    """The sources that are one object, as groups of names (part of the shape)."""
    groups: dict[int, list[SourceKey]] = {id(()): [_NONE]}
    for k, v in sources.items():
        groups.setdefault(id(v), []).append(k)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)


@dataclass(frozen=True)
class Template:
    """A lowered graph without its rows: per node, the name of the source it carries."""

    graph: Graph  # the first graph of this shape (its edges are shared)
    carries: tuple[SourceKey, ...]  # per node of ``graph``, in order
    token: tuple

    @cached_property
    def _places(self) -> tuple[tuple[SourceKey, ...], tuple[tuple[dict, int], ...], tuple[str, ...]]:
        """The names carried, once each; per node its fields and its name's place among them (a
        name is a tuple, hashed afresh at every lookup: a list index per node instead); the ids."""
        names = tuple(dict.fromkeys(self.carries))
        place = {k: i for i, k in enumerate(names)}
        nodes = self.graph.nodes.values()
        return names, tuple((n.__dict__, place[k]) for n, k in zip(nodes, self.carries)), tuple(self.graph.nodes)

    def instantiate(self, sources: dict[SourceKey, tuple[Row, ...]]) -> Graph:
        names, places, ids = self._places
        rows = [found[k] for found in ({_NONE: (), **sources},) for k in names]
        made = []
        for base, i in places:  # Node.with_fields(rows=…), unrolled
            fields = base.copy()
            fields["rows"] = rows[i]
            made.append(node_of(fields))
        nodes = MappingProxyType(dict(zip(ids, made)))
        return Graph(self.graph.model, nodes, self.graph.edges, shape=self.token)


def _template(graph: Graph, sources: dict[SourceKey, tuple[Row, ...]], token: tuple
              ) -> Template | None:
    names = {id(()): _NONE}
    for k, v in sources.items():
        names.setdefault(id(v), k)
    carries = tuple(names.get(id(n.rows)) for n in graph.nodes.values())
    if None in carries:  # a builder made rows of its own: this shape cannot be reused
        return None
    return Template(graph, carries, token)


def lowering_key(model: ModelSpec, plan: Plan, sources: dict[SourceKey, tuple[Row, ...]]) -> tuple:
    """The shape of ``plan``'s lowered graph: the model's content, every policy of the plan (all its
    fields but the requests — a field added to ``Plan`` joins the key by itself), and of the
    requests only what the builders see (which row sources exist and which are one object, and whether
    the shared expert overlaps the routed ones: ``shared_overlap="engine"`` reads the phase from them)."""
    return ("lower", content_digest(model), plan.policies, shared_expert_overlap(plan), ("vision",) in sources,
            _aliases(sources))


def lowered(model: ModelSpec, plan: Plan, sources: dict[SourceKey, tuple[Row, ...]],
            build: Callable[[], Graph]) -> Graph:
    """The graph of ``plan``: from the template of its shape, or ``build()`` (which then becomes it)."""
    refresh(plan)  # every compile starts by lowering: the reuse switches are read here
    if not caching():
        return build()
    token = lowering_key(model, plan, sources)
    template = _TEMPLATES.get(token, lambda: _template(build(), sources, token), _answer)
    if template is not None:
        return template.instantiate(sources)
    graph = build()
    template = _template(graph, sources, token)
    if template is None:
        return graph
    _TEMPLATES.put(token, template)
    return template.instantiate(sources)


def _answer(t: Template | None) -> tuple | None:
    """What a template decides: every node but its rows, the edges, which source each node carries."""
    if t is None:
        return None
    return (tuple((n.id, n.op, n.layer, n.stage, n.path, n.count, n.sink) for n in t.graph.nodes.values()),
            t.graph.model, t.graph.edges, t.carries, t.token)
