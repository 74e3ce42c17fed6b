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
A pass reads its memo under :func:`shape_key` — the input's shape and every other input its
structural half reads (the fusion profile, the point of a regime) — and names its output
:func:`derived` from that very key plus whatever value-dependent decisions it took (the fusion
pass's legality outcomes, which tuples replay rewrote). The output's shape is built from the
key, so an input that splits the memo always splits the shapes after it: equal tokens mean equal
structure.

The memos themselves, the ``V41GRAPH_NO_CACHE`` and ``V41GRAPH_SHADOW`` switches and
:func:`clear_caches` live in :mod:`v41graph.reuse` (the one registry; re-exported here).

>>> k = shape_key("fusion", ("lower", "m"), "single-pass")
>>> derived(k, True) == derived(shape_key("fusion", ("lower", "m"), "two-pass"), True)
False
>>> shape_key("fusion", None, "single-pass") is None
True
"""

from __future__ import annotations

from typing import Hashable

from ..reuse import Memo, caching, clear_caches, shadow, shadowing, uncached

__all__ = ["SHAPES_KEPT", "Memo", "caching", "clear_caches", "derived", "shadow", "shadowing",
           "shape_key", "uncached"]

#: shapes each structural memo keeps (least recently used first out): one V4.1-Flash shape holds ~2 MB
SHAPES_KEPT = 32


def shape_key(name: str, shape: Hashable | None, *inputs: Hashable) -> tuple | None:
    """The memo key of pass ``name`` on a graph of ``shape`` that also reads ``inputs``
    (None for a graph of unknown shape: nothing is looked up)."""
    return None if shape is None else (name, shape, inputs)


def derived(key: tuple | None, *decisions: Hashable) -> tuple | None:
    """The shape of the output of the pass whose memo key is ``key``, after taking ``decisions``."""
    return None if key is None else (key, decisions)
