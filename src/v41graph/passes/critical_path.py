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
    def steps(self) -> list[tuple]:
        """:meth:`run`'s steps in order: ``(i, end, p)`` for a chain — node ``i`` with one input ``p``,
        then nodes ``i + 1 .. end - 1`` each with the node before it as its one input (a sublayer's
        run of single-input ops, summed in one numpy call) — and ``(i, 0, inputs)`` for any other node."""
        out, i, n = [], 0, len(self.inputs)
        while i < n:
            if len(self.inputs[i]) == 1:
                end = i + 1
                while end < n and self.inputs[end] == (end - 1,):
                    end += 1
                out.append((i, end, self.inputs[i][0]))
                i = end
            else:
                out.append((i, 0, self.preds[i]))
                i += 1
        return out

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
        for i, end, preds in self.steps:  # times are >= 0, so every finish is too
            if end:  # a chain: i's one input, then each node's input the node before it
                p = preds
                if end == i + 1:
                    finish[i] = finish[p] + t[i]
                    parent[i] = np.where(finish[p] > 0, p, -1)
                    continue
                block = np.empty((end - i + 1, t.shape[1]))
                block[0], block[1:] = finish[p], t[i:end]
                # one addition after another down the chain (accumulate does not reassociate): the same bits
                block = np.add.accumulate(block, axis=0)
                finish[i:end] = block[1:]
                parent[i] = np.where(block[0] > 0, p, -1)
                parent[i + 1:end] = np.where(block[1:-1] > 0, np.arange(i, end - 1)[:, None], -1)
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
        paths, walked = [], {}
        by_point = np.ascontiguousarray(parent.T)
        for k, end in enumerate(ends.tolist()):
            # a path is a function of its end and its point's parents: points in one regime share both,
            # so each distinct path is walked once (a closed form asks at hundreds of points)
            key = (end, by_point[k].tobytes())
            found = walked.get(key)
            if found is None:
                up, path = by_point[k].tolist(), []
                while end >= 0:
                    path.append(self.order[end])
                    end = up[end]
                found = walked[key] = tuple(reversed(path))
            paths.append(found)
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

