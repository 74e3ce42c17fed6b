"""Shapes: what one compile reuses from an earlier compile of a plan of the same shape.

A graph's *shape* is everything but its ledger rows: the node ids in order, their payloads,
layers, stages and counts, the edges, and the annotation tables a pass derived from those. Plans
that differ only in lengths (a sweep over prompt lengths, a serving simulator's next step) lower
to graphs of one shape, so the structural half of lowering and of each pass — which nodes exist,
which storages merge, which groups fuse, what a module reads and writes — is computed once per
shape and looked up afterwards, while the value half (rows, bytes held, costs, the critical
path) runs on every compile (docs/architecture.md, "Shapes").

A graph carries its shape as ``Graph.shape``: an opaque hashable token, or ``None`` for a graph
nobody vouches for (built by hand or rewritten), which every pass then handles from scratch. A
pass that returns a graph of a known shape names the new shape after its input's and whatever
value-dependent decisions it took (the fusion pass's legality outcomes), so equal tokens always
mean equal structure.

Every memo here is bounded (:data:`SHAPES_KEPT` shapes each, least recently used first out) and can be switched off
with ``V41GRAPH_NO_CACHE=1`` (each compile then starts from nothing, the reference the cached
path is tested against) or emptied with :func:`clear_caches` (what a benchmark of a cold compile does).

>>> m = Memo("example", 2)
>>> _ = m.put("a", 1), m.put("b", 2), m.get("a"), m.put("c", 3)
>>> m.get("b") is None, m.get("a"), m.get("c")
(True, 1, 3)
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import contextmanager
import os
from typing import Any, Hashable

_MEMOS: list["Memo"] = []
#: shapes each structural memo keeps (least recently used first out): one V4.1-Flash shape holds ~2 MB
SHAPES_KEPT = 32


#: read once: ``V41GRAPH_NO_CACHE`` is set for a whole process (:func:`uncached` for a block of code)
_ON = [os.environ.get("V41GRAPH_NO_CACHE", "") in ("", "0")]


def caching() -> bool:
    """False in a process started with ``V41GRAPH_NO_CACHE`` set (to anything but ``""`` or ``0``)
    and inside :func:`uncached`."""
    return _ON[0]


@contextmanager
def uncached():
    """Every memo off for the duration: each compile inside starts from nothing."""
    was, _ON[0] = _ON[0], False
    try:
        yield
    finally:
        _ON[0] = was


class Memo:
    """A bounded least-recently-used table of structural results, keyed by shape."""

    def __init__(self, name: str, size: int):
        self.name, self.size = name, size
        self._table: OrderedDict[Hashable, Any] = OrderedDict()
        _MEMOS.append(self)

    def get(self, key: Hashable) -> Any:
        """The entry for ``key``, or None (always None when caching is off)."""
        if not caching():
            return None
        value = self._table.get(key)
        if value is not None:
            self._table.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> Any:
        """Store ``value`` under ``key`` (not when caching is off); returns ``value``."""
        if caching():
            self._table[key] = value
            self._table.move_to_end(key)
            while len(self._table) > self.size:
                self._table.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._table)


def clear_caches() -> None:
    """Empty every shape memo (the next compile of any plan starts from nothing)."""
    for memo in _MEMOS:
        memo._table.clear()


def derived(name: str, shape: Hashable | None, *decisions: Hashable) -> Hashable | None:
    """The shape a pass ``name`` gives a graph of ``shape`` after taking ``decisions``."""
    return None if shape is None else (name, shape, decisions)
