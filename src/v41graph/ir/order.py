"""The deterministic topological order of a graph's node ids (``Graph.topological_order``).

>>> from types import SimpleNamespace as E
>>> lexicographic_order(["c", "b", "a"], [E(src="b", dst="a"), E(src="c", dst="a")])
('b', 'c', 'a')
"""

from __future__ import annotations

import heapq
from typing import Iterable


def lexicographic_order(ids: Iterable[str], edges: Iterable) -> tuple[str, ...]:
    """The order of ``networkx.lexicographical_topological_sort`` over ``ids`` and ``edges`` (each
    with ``src`` and ``dst``), computed on the edge lists: a ready node leaves in id order, and a
    node is ready once all of its (distinct) predecessors have left. Raises ``ValueError`` on a cycle."""
    succ: dict[str, set[str]] = {n: set() for n in ids}
    indegree: dict[str, int] = dict.fromkeys(succ, 0)
    for e in edges:
        targets = succ.setdefault(e.src, set())
        indegree.setdefault(e.src, 0)
        if e.dst not in targets:
            targets.add(e.dst)
            indegree[e.dst] = indegree.get(e.dst, 0) + 1
            succ.setdefault(e.dst, set())
    ready = [n for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        n = heapq.heappop(ready)
        order.append(n)
        for child in succ[n]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, child)
    if len(order) != len(indegree):
        raise ValueError("graph contains a cycle")
    return tuple(order)
