"""The critical path through a graph whose nodes carry times (docs/architecture.md, decision 6).

The longest path in the graph's deterministic topological order, at one point (the schedule) or
at many points at once (a closed form's regimes, a length sweep's candidate paths): the same
rule both ways, ties going to the lexicographically first input and the path ending at the
largest (finish, id).

>>> from v41graph import load_model, lower, Plan, Request
>>> g = lower(load_model(), Plan([Request.prefill(64)]))
>>> f = PathFinder(g)
>>> finish, path = f.run_one([1.0] * len(f.order))
>>> path[0], path[-1], max(finish) == len(path)
('embed', 'head.proj', True)
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from ..ir.graph import Graph

if TYPE_CHECKING:
    import numpy as np


class PathFinder:
    """Critical paths with costs on nodes, for one or many sets of node times at once.

    The longest path through the DAG in deterministic topological order; ties go to the
    lexicographically first input, and the path ends at the largest (finish, id). The schedule
    runs it at one binding (:meth:`run_one`, plain floats), closed forms at many points
    (``analysis.symbolic.query``'s valid range, :meth:`run`, numpy) — the same rule both ways.
    """

    def __init__(self, graph: Graph):
        self.order = graph.topological_order()
        index = {n: i for i, n in enumerate(self.order)}
        self.inputs = [tuple(index[s] for s in sorted({e.src for e in graph.inputs(n)})) for n in self.order]
        self.by_name = sorted(range(len(self.order)), key=self.order.__getitem__)

    @cached_property
    def preds(self) -> list:
        """Each node's inputs as index arrays (numpy, for :meth:`run` at many points)."""
        import numpy as np
        return [np.array(p, dtype=np.intp) for p in self.inputs]

    @cached_property
    def rank(self):
        """Each node's rank by id (numpy)."""
        import numpy as np
        rank = np.empty(len(self.order), dtype=np.intp)
        rank[self.by_name] = np.arange(len(self.order))
        return rank

    def run(self, times) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """Finish times (nodes × points) and the critical path at each point of ``times`` (same shape)."""
        import numpy as np
        t = np.asarray(times, dtype=float)
        t = t[:, None] if t.ndim == 1 else t
        finish = np.empty_like(t)
        parent = np.full(t.shape, -1, dtype=np.intp)
        columns = np.arange(t.shape[1])
        for i, preds in enumerate(self.preds):  # times are >= 0, so every finish is too
            if len(preds) == 1:  # most nodes: one input
                finish[i] = finish[preds[0]] + t[i]
                parent[i] = np.where(finish[preds[0]] > 0, preds[0], -1)
            elif len(preds):
                before = finish[preds]
                first = before.argmax(axis=0)  # the first of the latest inputs, in id order
                best = before[first, columns]
                finish[i] = best + t[i]
                parent[i] = np.where(best > 0, preds[first], -1)
            else:
                finish[i] = t[i]
        if not len(self.order):
            return finish, [() for _ in columns]
        ends = np.argmax(np.where(finish == finish.max(axis=0), self.rank[:, None], -1), axis=0)
        paths = []
        for k, end in enumerate(ends):
            path = []
            while end >= 0:
                path.append(self.order[end])
                end = parent[end, k]
            paths.append(tuple(reversed(path)))
        return finish, paths

    def run_one(self, times: list[float]) -> tuple[list[float], tuple[str, ...]]:
        """:meth:`run` at one point, in plain Python floats (the same additions, so the same bits)."""
        finish = [0.0] * len(times)
        parent = [-1] * len(times)
        for i, preds in enumerate(self.inputs):
            if not preds:
                finish[i] = times[i]
                continue
            best_p = preds[0]
            best = finish[best_p]
            if len(preds) > 1:  # (most nodes have one input: no slice of the rest to make)
                for p in preds[1:]:  # the first of the latest inputs, in id order
                    if finish[p] > best:
                        best, best_p = finish[p], p
            finish[i] = best + times[i]
            parent[i] = best_p if best > 0 else -1
        if not finish:
            return finish, ()
        top = max(finish)
        end = next(i for i in reversed(self.by_name) if finish[i] == top)  # the largest id among the latest
        path = []
        while end >= 0:
            path.append(self.order[end])
            end = parent[end]
        return finish, tuple(reversed(path))

