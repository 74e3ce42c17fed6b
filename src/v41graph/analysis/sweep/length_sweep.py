"""The closed-form fast path of a sweep: one plan shape, many lengths, no compile per point.

A plan whose only free symbol is one length (``N``) is compiled once symbolically. Each node's
SOL resources (compute, memory, comm seconds) come from the same cost functions as the
numeric schedule (``node_cost`` → ``sol_time``; docs/architecture.md, decision 2) and are
lambdified once.
At many points the sweep then needs only numpy:

- a node's time is max(compute, memory, comm), its bound the argmax (ties go to compute, as in
  ``sol_time``);
- the critical path is the longest path, i.e. the max over paths of the summed node times. The
  candidate paths are the critical paths the scheduling pass's own :class:`PathFinder` picks on
  a geometric grid over the requested range (8 points per octave), refined once between grid
  neighbours whose paths differ. Taking the max over candidates is exact wherever the true path
  is a candidate and a lower bound otherwise; tests compare against compiled points;
- the forward time is max(critical path, busiest resource summed over all nodes), as in the
  schedule.

>>> from v41graph import load_model, Plan, Request, compile
>>> from v41graph.symbols import N
>>> ls = LengthSweep(load_model(), Plan([Request.prefill(N)]), "h200_sxm")
>>> out = ls.evaluate([1000, 50000])
>>> exact = compile(load_model(), Plan([Request.prefill(50000)])).report("schedule").total_time_s
>>> bool(abs(out["forward_s"][1] - exact) <= 1e-12 * exact)
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...algebra import is_symbolic
from ...costs.counts import CostContext
from ...costs.hardware import Hardware, load_hardware
from ...costs.node import node_cost
from ...costs.value import Cost, sol_time
from ...errors import CostError
from ...ir.plan import Plan
from ...model.config import ModelSpec
from ...passes import compile_graph
from ...passes.scheduling import PathFinder

if TYPE_CHECKING:
    import sympy

RESOURCES = ("compute", "memory", "comm")
_PER_OCTAVE, _REFINE, _CHUNK = 8, 16, 1 << 14


def _free_symbol(plan: Plan) -> sympy.Symbol:
    free: set[sympy.Symbol] = set()
    for r in plan.requests:
        for v in (r.cached, r.new, r.copies, r.prompt):
            if is_symbolic(v):
                free |= v.free_symbols
    if len(free) != 1:
        raise CostError(f"length sweep: the plan must have exactly one free length symbol, has "
                        f"{sorted(s.name for s in free) or 'none'}")
    return free.pop()


class LengthSweep:
    """Forward time, critical path and its bound of one symbolic plan at many lengths."""

    def __init__(self, model: ModelSpec, plan: Plan, hardware: str | Hardware):
        import sympy  # here, not at the top: numeric sweeps import this module too (RESOURCES)
        hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
        self.symbol = _free_symbol(plan)
        graph = compile_graph(model, plan, check=False).graph
        ctx = CostContext(model, plan)
        self.finder = PathFinder(graph)
        slot: dict[Cost, int] = {}
        which = []
        for n in self.finder.order:  # equal work in another layer is one slot (as the schedule memoises)
            which.append(slot.setdefault(node_cost(graph, n, ctx), len(slot)))
        self.which = np.array(which, dtype=np.intp)
        parts = [sol_time(c, hw) for c in slot]
        # the largest node's live bytes (activations in and out, workspace), as gpu_summary counts it
        live = [sympy.sympify(c.byte("act_in") + c.byte("act_out") + c.byte("workspace")) for c in slot]
        self._live = _Parts([live], self.symbol)
        self._exprs = [[sympy.sympify(getattr(p, r)) for p in parts] for r in RESOURCES]
        self.slots = len(slot)
        self._fns: dict[tuple[int, ...], _Parts] = {}
        # The resources summed over all nodes are Max-free sums: one expression each.
        counts = np.bincount(self.which, minlength=len(slot)).tolist()
        self._resources = _Parts([[sympy.Add(*[c * e for c, e in zip(counts, row)])] for row in self._exprs],
                                 self.symbol)

    def _parts(self, slots: tuple[int, ...], x: np.ndarray) -> np.ndarray:
        """Seconds per (resource, slot, point) for the given slots (lambdified once per set)."""
        if slots not in self._fns:
            self._fns[slots] = _Parts([[row[k] for k in slots] for row in self._exprs], self.symbol)
        return self._fns[slots](x)

    def workspace(self, lengths) -> np.ndarray:
        """Bytes live at once in the largest node at each length (rounded up to whole bytes)."""
        x = np.asarray(lengths)
        return np.ceil(self._live(x.astype(float))[0].max(axis=0) - 1e-6).astype(np.int64)

    def _candidates(self, lo: int, hi: int) -> np.ndarray:
        """Path × slot counts of every critical path seen on a grid over [lo, hi]."""
        octaves = max(np.log2(hi / lo), 0.0)
        grid = np.unique(np.rint(lo * 2 ** np.linspace(0, octaves, int(octaves * _PER_OCTAVE) + 2)))
        grid = np.unique(np.concatenate([grid, [lo, hi]])).astype(np.int64)
        paths = self._paths(grid)
        extra = []
        for a, b, pa, pb in zip(grid, grid[1:], paths, paths[1:]):
            if pa != pb and b - a > 1:
                extra.append(np.unique(np.linspace(a + 1, b - 1, min(_REFINE, b - a - 1)).astype(np.int64)))
        if extra:
            paths += self._paths(np.concatenate(extra))
        index = {n: i for i, n in enumerate(self.finder.order)}
        unique = sorted(set(paths))
        counts = np.zeros((len(unique), self.slots))
        for k, path in enumerate(unique):
            np.add.at(counts[k], self.which[[index[n] for n in path]], 1.0)
        return counts

    def _paths(self, points: np.ndarray) -> list[tuple[str, ...]]:
        every = tuple(range(self.slots))
        return self.finder.run(_time_and_bound(self._parts(every, points.astype(float)))[0][self.which])[1]

    def evaluate(self, lengths, *, bound: bool = True) -> dict[str, np.ndarray]:
        """``forward_s``, ``critical_path_s``, ``resource_bound_s`` and ``bound`` at each length.

        ``bound`` is the resource holding most of the critical path's time (an index into
        :data:`RESOURCES`; -1 for a path of zero time); ``bound=False`` leaves it out, which
        saves three passes over the (slot × point) times.
        """
        x = np.asarray(lengths)
        if x.ndim != 1 or not len(x) or not np.issubdtype(x.dtype, np.integer) or x.min() < 1:
            raise CostError("length sweep: lengths must be a non-empty 1-D array of integers >= 1")
        paths = self._candidates(int(x.min()), int(x.max()))
        used = tuple(int(k) for k in np.flatnonzero(paths.any(axis=0)))  # slots on some candidate path
        paths = paths[:, used]
        out = {k: np.empty(len(x)) for k in ("forward_s", "critical_path_s", "resource_bound_s")}
        if bound:
            out["bound"] = np.empty(len(x), dtype=np.int64)
        for start in range(0, len(x), _CHUNK):  # chunks keep the (resource, slot, point) array small
            part = slice(start, start + _CHUNK)
            xs = x[part].astype(float)
            parts = self._parts(used, xs)
            cols = np.arange(len(xs))
            if bound:
                time, masks = _time_and_bound(parts)
                # einsum, not BLAS matmul: a few paths × a few dozen slots, where BLAS threads only contend
                by_path = np.stack([np.einsum("pk,kn->pn", paths, time * m) for m in masks])
                per_path = by_path.sum(axis=0)
            else:
                per_path = np.einsum("pk,kn->pn", paths, np.maximum(np.maximum(parts[0], parts[1]), parts[2]))
            best = per_path.argmax(axis=0)
            cp = per_path[best, cols]
            if bound:
                out["bound"][part] = np.where(cp > 0, by_path[:, best, cols].argmax(axis=0), -1)
            busiest = self._resources(xs).max(axis=(0, 1))
            out["critical_path_s"][part] = cp
            out["resource_bound_s"][part] = busiest
            out["forward_s"][part] = np.maximum(cp, busiest)
        return out


def _time_and_bound(parts: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Node time = max of its resources, and one mask per resource saying which bounds it
    (compute wins a tie, then memory: the order ``sol_time`` uses)."""
    compute, memory, comm = parts
    rest = np.maximum(memory, comm)
    is_compute = compute >= rest
    is_memory = ~is_compute & (memory >= comm)
    return np.maximum(compute, rest), (is_compute, is_memory, ~(is_compute | is_memory))


class _Parts:
    """A (resource × slot) table of expressions of one symbol, evaluated over numpy points.

    Constants (most comm terms, weight-only reads) are filled in once per call; the rest share
    subexpressions such as min(128, N) through ``cse``.
    """

    def __init__(self, table: list[list[sympy.Expr]], symbol: sympy.Symbol):
        import sympy
        self.shape = (len(table), len(table[0]) if table else 0)
        flat = [e for row in table for e in row]
        self.const = [(i, float(e)) for i, e in enumerate(flat) if e.is_number]
        self.varying = [i for i, e in enumerate(flat) if not e.is_number]
        self.f = sympy.lambdify(symbol, [flat[i] for i in self.varying], modules="numpy", cse=True)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out = np.empty((self.shape[0] * self.shape[1], len(x)))
        for i, v in self.const:
            out[i] = v
        for i, v in zip(self.varying, self.f(x) if self.varying else ()):
            out[i] = v
        return out.reshape(*self.shape, len(x))
