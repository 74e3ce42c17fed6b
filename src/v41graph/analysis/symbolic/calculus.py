"""Derivatives of closed forms that hold ``Min`` / ``Max``: right derivatives as a ``Piecewise``.

A cost closed form is a sum of terms with ``Min``, ``Max`` (and ``Piecewise``) of polynomials in
one length. Its derivative is piecewise: :func:`right_derivative` finds the breakpoints of every
term (where a ``Min`` / ``Max`` switches), and on each interval between them the branch each
term takes. The result is ``Piecewise((d0, x < b1), (d1, x < b2), …, (dk, True))``: at a
breakpoint the derivative of the interval to its right (for integer lengths, the forward
difference of a piecewise-linear form). ``floor(u)`` counts at its mean rate, that of ``u``.
Terms are differentiated one at a time, so nothing multiplies the branches of many terms together.

>>> from v41graph.symbols import N
>>> import sympy
>>> right_derivative(21 * N + 19 * sympy.Min(128, N), N)
Piecewise((40, N < 128), (21, True))
"""

from __future__ import annotations

import sympy

from ...chance import untouched_function

__all__ = ["branch_at", "breakpoints", "right_derivative"]


def real_roots(expr: sympy.Expr, x: sympy.Symbol) -> set[sympy.Expr]:
    """Real roots of ``expr`` in ``x`` (solved over a plain real symbol: ``x`` may be declared an
    integer, and the crossing of two branches rarely falls on one); none where an expected-experts
    term ``untouched(p, x)`` is left (not algebraic: :func:`freeze_untouched` first), or where sympy has no
    algorithm for the branch (``x`` beside ``floor(x/2)``)."""
    if x not in expr.free_symbols or expr.has(untouched_function()):
        return set()
    r = sympy.Dummy("r", real=True)
    try:
        return {v for v in sympy.solve(expr.subs(x, r), r) if v.is_real}
    except NotImplementedError:  # a branch sympy cannot solve (x beside floor(x/2)): no exact root, the caller
        return set()             # keeps its numeric bracket


def freeze_untouched(expr: sympy.Expr, x: sympy.Symbol, lo, hi) -> tuple[sympy.Expr, bool]:
    """Each ``untouched(p, u(x))`` as its value at ``x = hi``, and whether any of them differs at
    ``x = lo``. Equal at both ends, it holds that value between them (monotone, on a grid:
    chance.untouched); unequal, the held value is the branch taken, as :func:`branch_at` does."""
    held = []

    def frozen(e):
        a, b = e.subs(x, lo), e.subs(x, hi)
        held.append(a != b)
        return b
    out = sympy.sympify(expr).replace(lambda e: isinstance(e, untouched_function()), frozen)
    return out, any(held)


def _mean_rate(expr: sympy.Expr) -> sympy.Expr:
    """``floor(u)`` and ``ceiling(u)`` as ``u``: their rate on average (a step function's derivative is 0
    between steps, its mean slope that of ``u``)."""
    return sympy.sympify(expr).replace(lambda e: isinstance(e, (sympy.floor, sympy.ceiling)), lambda e: e.args[0])


def _probes(points: list) -> list[tuple]:
    """(low, high, a point inside) of each interval between sorted ``points``."""
    if not points:
        return [(-sympy.oo, sympy.oo, sympy.Integer(1))]
    edges = [-sympy.oo, *points, sympy.oo]
    inside = [points[0] - 1] + [(a + b) / 2 for a, b in zip(points, points[1:])] + [points[-1] + 1]
    return list(zip(edges, edges[1:], inside))


def breakpoints(expr: sympy.Expr, x: sympy.Symbol) -> set[sympy.Expr]:
    """The real ``x`` at which a ``Min`` / ``Max`` of ``expr`` switches (nested ones within the
    intervals their inner ones leave) or a ``Piecewise`` condition flips."""
    expr = _mean_rate(expr)
    points: set[sympy.Expr] = set()
    for pw in expr.atoms(sympy.Piecewise):
        for _, cond in pw.args:
            for rel in cond.atoms(sympy.core.relational.Relational):
                points |= real_roots(rel.lhs - rel.rhs, x)
    atoms = expr.atoms(sympy.Min, sympy.Max)
    for _ in range(8):  # one more level of nesting each round
        new = set()
        for lo, hi, p in _probes(sorted(points, key=float)):
            for mm in atoms:
                args = [branch_at(a, x, p) for a in mm.args]
                for i, a in enumerate(args):
                    for b in args[i + 1:]:
                        new |= {r for r in real_roots(a - b, x) if lo < r < hi}
        if new <= points:
            break
        points |= new
    return points


def branch_at(expr: sympy.Expr, x: sympy.Symbol, at: sympy.Expr) -> sympy.Expr:
    """``expr`` with each ``Min`` / ``Max`` / ``Piecewise`` replaced by the branch it takes at ``x = at``."""
    expr = sympy.sympify(expr)
    if not expr.args or not expr.has(sympy.Min, sympy.Max, sympy.Piecewise):
        return expr
    if isinstance(expr, sympy.Piecewise):
        for branch, cond in expr.args:
            if bool(cond.subs(x, at)):
                return branch_at(branch, x, at)
        raise ValueError(f"no branch of {expr} holds at {x} = {at}")
    if isinstance(expr, (sympy.Min, sympy.Max)):
        args = [branch_at(a, x, at) for a in expr.args]
        values = [a.subs(x, at) for a in args]
        best = (min if isinstance(expr, sympy.Min) else max)(range(len(args)), key=lambda i: values[i])
        return args[best]
    return expr.func(*[branch_at(a, x, at) for a in expr.args])


def right_derivative(expr: sympy.Expr, x: sympy.Symbol) -> sympy.Expr:
    """d expr / dx as a ``Piecewise`` over the breakpoints (right derivative at each one)."""
    expr = _mean_rate(expr)
    terms = sympy.Add.make_args(expr)
    points = sorted(set().union(*(breakpoints(t, x) for t in terms)), key=float)
    if not points:
        return sympy.simplify(sympy.diff(expr, x))
    # a point strictly inside each interval: left of the first breakpoint, between, right of the last
    probes = [points[0] - 1] + [(a + b) / 2 for a, b in zip(points, points[1:])] + [points[-1] + 1]
    pieces = [sympy.simplify(sum((sympy.diff(branch_at(t, x, p), x) for t in terms), sympy.Integer(0)))
              for p in probes]
    out: list[tuple[sympy.Expr, object]] = []
    for i, d in enumerate(pieces):
        cond = x < points[i] if i < len(points) else True
        if out and out[-1][0] == d:
            out[-1] = (d, cond)  # the same derivative on both sides: one interval
        else:
            out.append((d, cond))
    return out[0][0] if len(out) == 1 else sympy.Piecewise(*out)
