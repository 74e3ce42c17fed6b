"""Closed forms as numpy functions: the regime search's table of node times, and sweeps.

:class:`Rows` holds the expressions the regime search (:mod:`v41graph.backends.regimes`)
evaluates at many points, each lambdified once for all the timelines of one plan: the graphs
of two regimes differ in a few fused nodes, so they share almost every node cost.

>>> from v41graph.symbols import N
>>> table = Rows([N])
>>> table.rows([N + 1, 2 * N, N + 1]).tolist()
[0, 1, 0]
>>> table(np.array([[1.0, 2.0]]), np.array([1, 0])).tolist()
[[2.0, 4.0], [2.0, 3.0]]
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import sympy


class Rows:
    """A table of expressions of ``syms`` evaluated over numpy points, one row per distinct
    expression; each call of :meth:`rows` lambdifies only the expressions it has not seen."""

    def __init__(self, syms: Sequence[sympy.Symbol]):
        self.syms = tuple(syms)
        self.index: dict[sympy.Expr, int] = {}
        self.chunks: list[tuple[int, int, Callable]] = []  # rows [start, end) and their function

    def rows(self, exprs: Sequence[sympy.Expr]) -> np.ndarray:
        """The row of each of ``exprs`` (equal expressions share one)."""
        new = [e for e in dict.fromkeys(exprs) if e not in self.index]
        if new:
            start = len(self.index)
            self.index.update((e, start + i) for i, e in enumerate(new))
            # each expression prints as it would alone, so its values do not depend on its company
            self.chunks.append((start, len(self.index), sympy.lambdify(self.syms, new, modules="numpy")))
        return np.array([self.index[e] for e in exprs], dtype=np.intp)

    def __call__(self, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Values of ``rows`` at the points ``x`` (symbols × points): shape ``rows.shape + (points,)``."""
        out = np.empty((len(self.index), x.shape[-1]))
        need = np.zeros(len(self.index), dtype=bool)
        need[rows.ravel()] = True
        for start, end, f in self.chunks:
            if need[start:end].any():
                for i, v in enumerate(f(*x)):
                    out[start + i] = v  # constants broadcast
        return out[rows]
