"""Shapes: what one compile reuses from an earlier compile of a plan of the same shape.

A graph's *shape* is everything but its ledger rows: the node ids in order, their payloads,
layers, stages and counts, the edges, which nodes carry one rows tuple, and the annotation
tables a pass derived from those. Plans that differ only in lengths (a sweep over prompt
lengths, a serving simulator's next step) lower to graphs of one shape, so the structural half
of lowering and of each pass — which nodes exist, which storages merge, which groups fuse, what a
module reads and writes — is computed once per shape and looked up afterwards, while the value
half (rows, bytes held, costs, the critical path) runs on every compile (docs/architecture.md,
"Shapes").

A graph carries its shape as ``Graph.shape``: an opaque hashable token, or ``None`` for a graph
nobody vouches for (built by hand or rewritten), which every pass then handles from scratch.
A pass's structural half is a function decorated with :func:`v41graph.structural.memo`, whose
arguments are its key: the graph's ``skeleton`` (the graph keyed by its token alone) and every
other input it reads (the fusion profile, the point of a regime, the model's content). The pass
names its output :func:`derived` from the key that memo kept its answer under
(``fn.key(*args)``) plus whatever value-dependent decisions it took (the fusion pass's legality
outcomes, which tuples replay rewrote): an input that splits the memo always splits the shapes
after it, so equal tokens mean equal structure.

The memos themselves, the ``V41GRAPH_NO_CACHE`` and ``V41GRAPH_SHADOW`` switches and
:func:`clear_caches` live in :mod:`v41graph.reuse` (the one registry; re-exported here).

>>> from v41graph.structural import Keyed, memo
>>> @memo("example plans", 2)
... def plan(skeleton, profile):
...     return len(skeleton.value)
>>> k = plan.key(Keyed(("lower", "m"), "graph"), "single-pass")
>>> derived(k, True) == derived(plan.key(Keyed(("lower", "m"), "graph"), "two-pass"), True)
False
>>> derived(plan.key(Keyed(None, "graph"), "single-pass"), True) is None
True
"""

from __future__ import annotations

from typing import Hashable

from ..errors import GraphError
from ..reuse import Memo, caching, clear_caches, shadow, shadowing, uncached
from ..structural import Keyed, memo
from .flow import numbered, rows_classes

__all__ = ["SHAPES_KEPT", "Memo", "caching", "clear_caches", "derived", "numbered", "rows_slots", "shadow",
           "shadowing", "uncached"]

#: shapes each structural memo keeps (least recently used first out): one V4.1-Flash shape holds ~2 MB
SHAPES_KEPT = 32


def derived(key: tuple | None, *decisions: Hashable) -> tuple | None:
    """The shape of the output of the pass whose memo key is ``key`` (``structural.memo``'s ``fn.key``; None:
    unknown), after taking ``decisions``."""
    return None if key is None else (key, decisions)


@memo("rows slots", SHAPES_KEPT)
def rows_slots(skeleton: Keyed) -> tuple[int, ...]:
    """Per node of the graph, in order, the number of the rows tuple it carries (numbered in order of
    first sight): nodes of one number carry one tuple. Which nodes share a tuple is part of a shape, and
    the graph's maker states it (``Graph.slots``): lowering from the sources its builders named
    (``lower/template.py``), each pass that makes new nodes from its input's (replay: the tuples it
    rewrote; fusion and measured modules: a module carries its first member's; kv_dedup: the kept
    nodes'). A graph nobody stated them for (built by hand with ``GraphBuilder``, rewritten) is read by
    the identity of its nodes' rows tuples (``flow.rows_classes``); under the shadow check stated slots
    are compared with that reading, graph by graph.

    >>> from v41graph.ir.graph import GraphBuilder
    >>> from v41graph.ir.ops import GraphInput, Norm
    >>> b = GraphBuilder("toy")
    >>> rows = b.rows(8)
    >>> _ = b.op("L0.in", GraphInput(4), rows), b.op("L0.norm", Norm(4), rows, reads=[("L0.in", "x", 4, "bf16")])
    >>> _ = b.op("L0.out", Norm(4), b.rows(8), reads=[("L0.norm", "x", 4, "bf16")], sink=True)
    >>> rows_slots(b.build().skeleton)
    (0, 0, 1)
    """
    graph = skeleton.value
    stated = graph.slots
    if stated is None:
        return rows_classes(tuple(graph.nodes.values()))  # (verify() reads each graph's own)
    if shadowing() and stated != rows_classes(tuple(graph.nodes.values())):
        raise GraphError(f"shadow check: graph {graph.model!r} states rows slots that differ from its rows tuples "
                         f"(shape {graph.shape!r:.200})")
    return stated
