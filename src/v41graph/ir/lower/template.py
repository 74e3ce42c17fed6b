"""Lowering once per shape: a lowered graph with its rows taken out, filled again for the next plan.

The block builders read lengths only through :func:`~.context.row_sources` (each node carries
one of those tuples), so the graph they build is a function of the model's content, the plan's
policies (mapping, DSpark mode, …) and what the builders read of the requests (:class:`Requests`:
the shared expert's overlap, which row sources there are — images or not — and which of them are
one tuple, :func:`~.context.coinciding`). :func:`template_of` is memoised under exactly those arguments
(``structural.memo``, the shadow check inside it): the first lowering is kept as a
:class:`Template` — each node with the name of the source its builder handed it
(``LowerContext.carried``) — and a later plan's graph is
the template over that plan's sources: the same nodes, edges and order, and the same sharing of rows
tuples between nodes that a fresh lowering gives, which the graph states (``Graph.slots``, numbered from the
names carried) rather than leaving it to be read from the tuples' identity (docs/architecture.md, "Shapes").

Before ⇒ after, for a second plan of one shape::

    lower(model, Plan([Request.prefill(8192)]))  builds 1,321 nodes and keeps the template
    lower(model, Plan([Request.prefill(4096)]))  ⇒ the template's nodes over the new rows
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from types import MappingProxyType
from typing import Callable, NamedTuple

from ...model.config import ModelSpec
from ...reuse import refresh
from ...structural import Keyed, by_content, memo
from ..graph import Graph, node_of
from ..ledger import Row
from ..plan import Plan
from ..routing import shared_expert_overlap
from ..shapes import SHAPES_KEPT, caching, numbered
from .context import NO_ROWS, SourceKey, coinciding


class Requests(NamedTuple):
    """What the builders read of a plan's requests besides their lengths (a template's argument)."""

    shared_overlap: bool  # the shared expert beside the routed ones (``shared_overlap="engine"`` reads the phase)
    sources: tuple[SourceKey, ...]  # which row sources there are, in order (``("vision",)``: some image)
    coinciding: tuple[tuple[SourceKey, ...], ...]  # which of them are one tuple (context.coinciding)

    @staticmethod
    def of(plan: Plan, sources: dict[SourceKey, tuple[Row, ...]]) -> "Requests":
        return Requests(shared_expert_overlap(plan), tuple(sources), coinciding(plan, sources))


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

    @cached_property
    def slots(self) -> tuple[int, ...]:
        """Which nodes carry one rows tuple (``Graph.slots``): nodes carrying one name carry one tuple, and
        two names one tuple only where they coincide (``context.coinciding``), which ``carries`` already
        names by its group's first."""
        return numbered(self.carries)

    def instantiate(self, sources: dict[SourceKey, tuple[Row, ...]]) -> Graph:
        names, places, ids = self._places
        rows = [found[k] for found in ({NO_ROWS: (), **sources},) for k in names]
        made = []
        for base, i in places:  # Node.with_fields(rows=…), unrolled
            fields = base.copy()
            fields["rows"] = rows[i]
            made.append(node_of(fields))
        nodes = MappingProxyType(dict(zip(ids, made)))
        return Graph(self.graph.model, nodes, self.graph.edges, shape=self.token, slots=self.slots)


def _answer(t: Template) -> tuple:
    """What a template decides: every node but its rows, the edges, which source each node carries."""
    return (tuple((n.id, n.op, n.layer, n.stage, n.path, n.count, n.sink) for n in t.graph.nodes.values()),
            t.graph.model, t.graph.edges, t.carries, t.token)


@memo("lowering templates", SHAPES_KEPT, view=_answer)
def template_of(model: Keyed, policies: tuple, requests: Requests, rows: Keyed) -> Template:
    """The template of the graphs lowered from ``model`` (keyed by its content) under a plan's ``policies``
    (every field but the requests: a field added to ``Plan`` joins the key by itself) over requests the
    builders see as ``requests``; ``rows`` (keyed by nothing) carries the build over this plan's sources,
    which returns the graph and the name of the source each node carries (``LowerContext.carried``)."""
    graph, carries = rows.value()
    return Template(graph, carries, template_of.key(model, policies, requests, rows))


def lowered(model: ModelSpec, plan: Plan, sources: dict[SourceKey, tuple[Row, ...]],
            build: Callable[[], tuple[Graph, tuple[SourceKey, ...]]]) -> Graph:
    """The graph of ``plan``: from the template of its shape, or ``build()`` (which then becomes it)."""
    refresh(plan)  # every compile starts by lowering: the reuse switches are read here
    if not caching():
        graph, carries = build()
        return replace(graph, slots=numbered(carries))
    return template_of(by_content(model), plan.policies, Requests.of(plan, sources),
                       Keyed("rows", build)).instantiate(sources)

