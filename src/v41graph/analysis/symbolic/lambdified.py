"""Closed forms as numpy functions: the regime search's table of node times, and sweeps.

:class:`Rows` holds the expressions the regime search (:mod:`v41graph.analysis.symbolic.regimes`)
evaluates at many points, each lambdified once for all the timelines of one plan: the graphs
of two regimes differ in a few fused nodes, so they share almost every node cost.

:func:`piecewise_function` is a one-symbol ``Piecewise`` for sweeps. Each piece holds on an
integer range, so before it is lambdified every ``Min`` / ``Max`` that one argument wins over
the whole range becomes that argument (:func:`settle`: min(128, N) is 128 for N ≥ 128, and
max(0, N − 639) is N − 639); what remains is exactly equal there, with far fewer array
operations. The ``Min``, ``Max``, ``floor`` and ``ceiling`` left are computed once each
(:func:`hoist`), and a sorted input is cut into one slice per piece instead of masks.

>>> from v41graph.symbols import N
>>> settle(sympy.Min(128, N) + sympy.Max(0, N - 511, evaluate=False), N, 600, 1000)
N - 383
>>> f = piecewise_function([(1, 128, 2 * N), (129, 1000, sympy.Min(N, 500) + 128)], N)
>>> f(np.array([1, 128, 129, 700, 1001])).tolist()
[2.0, 256.0, 257.0, 628.0, nan]
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

from ...chance import untouched_function


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


_HOISTED = (sympy.Min, sympy.Max, sympy.floor, sympy.ceiling)


def settle(expr: sympy.Expr, sym: sympy.Symbol, lo: int, hi: int) -> sympy.Expr:
    """``expr`` for ``lo ≤ sym ≤ hi``: each ``Min`` (``Max``) with an argument that is at most
    (at least) every other one over the whole range is that argument, inner ones first; each
    ``untouched(p, u)`` (u linear in ``sym``) that has one value at both ends is that value.

    Exact wherever it is used: only differences that are numbers or linear in ``sym`` are
    compared (at both ends of the range); any other ``Min`` / ``Max`` stays as it is.
    """

    def below(a: sympy.Expr, b: sympy.Expr) -> bool:  # a ≤ b on [lo, hi], surely
        d = b - a
        if d.is_number:
            return bool(d >= 0)
        terms = d.as_coefficients_dict()
        if not set(terms) <= {sympy.S.One, sym}:
            return False
        c0, c1 = terms.get(sympy.S.One, 0), terms.get(sym, 0)
        return bool(c0 + c1 * lo >= 0) and bool(c0 + c1 * hi >= 0)

    def linear(d: sympy.Expr) -> bool:
        return d.is_number or set(d.as_coefficients_dict()) <= {sympy.S.One, sym}

    def node(e: sympy.Expr, args: list[sympy.Expr]) -> sympy.Expr:
        if isinstance(e, (sympy.Min, sympy.Max)):
            wins = (lambda a, b: below(a, b)) if isinstance(e, sympy.Min) else (lambda a, b: below(b, a))
            out = next((a for a in args if all(wins(a, b) for b in args if b is not a)), None)
            if out is not None:
                return out
        elif isinstance(e, untouched_function()) and args[0].is_number and linear(args[1]):
            # (1 − p)^u on chance.untouched's grid is monotone in u, so equal at both ends it is
            # that number throughout (0 once the chance is below 2⁻⁵⁴: most of a long range)
            ends = [e.func(args[0], args[1].subs(sym, x)) for x in (lo, hi)]
            if ends[0] == ends[1]:
                return ends[0]
        return _rebuilt(e, args)
    return _bottom_up(expr, node)


def hoist(expr: sympy.Expr) -> tuple[list[tuple[sympy.Symbol, sympy.Expr]], sympy.Expr]:
    """Each distinct ``Min``, ``Max``, ``floor`` and ``ceiling`` of ``expr`` as one assignment,
    inner ones first, and ``expr`` in terms of them: the ``cse`` that :func:`sympy.lambdify`
    takes, deterministic and without sympy's full (and, on these forms, slow) search."""
    names = (f"_x{i}" for i in range(1 << 30))
    cses: list[tuple[sympy.Symbol, sympy.Expr]] = []

    def node(e: sympy.Expr, args: list[sympy.Expr]) -> sympy.Expr:
        out = _rebuilt(e, args)
        if isinstance(e, _HOISTED):
            known = {k: True for k in ("integer", "nonnegative") if getattr(e, f"is_{k}")}  # unknown: unsaid
            name = sympy.Symbol(next(names), **known)
            cses.append((name, out))
            out = name
        return out
    body = _bottom_up(expr, node)
    return cses, body


def _bottom_up(expr: sympy.Expr, node: Callable) -> sympy.Expr:
    """``expr`` rewritten leaves first: each distinct subexpression with arguments becomes
    ``node(it, its rewritten arguments)``, once (a closed form repeats its subterms many times)."""
    memo: dict[sympy.Expr, sympy.Expr] = {}

    def walk(e: sympy.Expr) -> sympy.Expr:
        if not e.args:
            return e
        if e not in memo:
            memo[e] = node(e, [walk(a) for a in e.args])
        return memo[e]
    return walk(sympy.sympify(expr))


def _rebuilt(e: sympy.Expr, args: list[sympy.Expr]) -> sympy.Expr:
    """``e`` over ``args``: itself where they are its own; a ``Min`` / ``Max`` unevaluated
    (sympy's ordering of their arguments is slow, and settle has already decided them)."""
    if all(a is b for a, b in zip(args, e.args)):
        return e
    return e.func(*args, evaluate=False) if isinstance(e, (sympy.Min, sympy.Max)) else e.func(*args)


def piecewise_function(pieces: Sequence[tuple[int, int, sympy.Expr]], sym: sympy.Symbol) -> Callable:
    """A numpy function of ``sym`` that is ``expr`` on each piece ``(first, last, expr)`` and
    not a number outside every piece; each piece is evaluated only at its own points."""
    fs = []
    for lo, hi, e in pieces:
        cses, body = hoist(settle(e, sym, lo, hi))
        fs.append((lo, hi, sympy.lambdify([sym], body, modules="numpy", cse=lambda _, c=cses, b=body: (c, b))))
    firsts = np.array([lo for lo, _, _ in fs], dtype=float)
    lasts = np.array([hi for _, hi, _ in fs], dtype=float)

    def f(x):
        x = np.asarray(x, dtype=float)
        out = np.full(x.shape, np.nan)  # outside every piece: not a number, never a guess
        if x.ndim == 1 and bool(np.all(x[1:] >= x[:-1])):  # sorted (no NaN): one slice per piece
            for (_, _, g), a, b in zip(fs, np.searchsorted(x, firsts, "left"), np.searchsorted(x, lasts, "right")):
                if b > a:
                    out[a:b] = g(x[a:b])
            return out
        for lo, hi, g in fs:
            mask = (x >= lo) & (x <= hi)
            if mask.any():
                out[mask] = np.broadcast_to(np.asarray(g(x[mask]), dtype=float), x[mask].shape)
        return out
    return f
