"""The chance that independent draws all miss an item: the expected distinct experts' one term.

``untouched(p, T)`` is ``(1 − p)^T``, for numbers (on a 2⁻⁵³ grid) and for symbols (a sympy
function that becomes the same number once ``T`` is bound). :func:`plain` writes a closed form
with sympy's own ``(1 - p)**T`` instead, for readers without v41graph. It sits beside
:mod:`.algebra`, whose helpers it uses, beneath every layer.
"""

from __future__ import annotations

from fractions import Fraction

from .algebra import Value, _sym, is_symbolic, sympy
from .reuse import cached


def untouched(p: Fraction, draws: Value) -> Value:
    """``(1 − p)^draws``: the chance that ``draws`` independent draws all miss an item each draw
    hits with probability ``p`` (the expected distinct experts, costs/routing.py).

    For numbers: the float ``(1 − p) ** draws`` on a grid of 2⁻⁵³ (so tiny chances are 0, not a
    fraction of 300 digits) — the exact rational of (125/128)^8192 runs to 57,000 bits, and every
    sum it entered would carry them. For a symbol: ``untouched(p, N)``, a function that becomes
    that same number once ``N`` is bound, so a closed form equals the numbers exactly
    (docs/architecture.md, decision 2).

    >>> untouched(Fraction(3, 128), 2) == Fraction(round((1 - 3 / 128) ** 2 * 2**53), 2**53)
    True
    >>> untouched(Fraction(3, 128), 8192)
    Fraction(0, 1)
    >>> from v41graph.symbols import N
    >>> e = 256 - 256 * untouched(Fraction(3, 128), N)
    >>> e, e.subs(N, 2) == 256 - 256 * untouched(Fraction(3, 128), 2)
    (256 - 256*untouched(3/128, N), True)
    """
    if is_symbolic(draws):
        return untouched_function()(_sym(Fraction(p)), draws)
    return _on_grid((1 - float(p)) ** float(draws))


def plain(expr):
    """``expr`` with every ``untouched(p, T)`` written ``(1 - p)**T``: sympy's own functions, which
    plain ``sympy.sympify`` reads back without v41graph (``formula --json``'s ``expr``).

    The exact power, not its value on the 2⁻⁵³ grid: a term differs from the tool's by under
    2⁻⁵⁴ (below a double's rounding of a cost of the same size), and by (1 − p)^T itself where
    the grid holds 0 (under 2⁻⁵⁴ again). Lambdified, both print the same float power.

    >>> from v41graph.symbols import N
    >>> e = plain(256 - 256 * untouched(Fraction(3, 128), N))
    >>> e, abs(e.subs(N, 2) - (256 - 256 * untouched(Fraction(3, 128), 2))) < 2**-45
    (256 - 256*(125/128)**N, True)
    """
    expr = sympy.sympify(expr)
    f = untouched_function()
    return expr.replace(f, lambda p, draws: (1 - p) ** draws) if expr.has(f) else expr


def _on_grid(x: float) -> Fraction:
    return Fraction(round(x * (1 << 53)), 1 << 53)


@cached(maxsize=1, resource=True)  # one sympy class for every closed form (a new one would not compare equal)
def untouched_function():
    class untouched(sympy.Function):  # noqa: N801 (printed in closed forms as untouched(p, N))
        """:func:`v41graph.chance.untouched` of a symbol: a number once both arguments are."""

        is_nonnegative = True
        is_real = True

        @classmethod
        def eval(cls, p, draws):
            if p.is_Number and draws.is_Number:
                v = _on_grid((1 - float(p)) ** float(draws))
                return sympy.Rational(v.numerator, v.denominator)
            return None

        def fdiff(self, argindex=2):  # d/dN (1 − p)^N = ln(1 − p) · (1 − p)^N
            if argindex != 2:
                raise sympy.ArgumentIndexError(self, argindex)
            return sympy.log(1 - self.args[0]) * self

        def _numpycode(self, printer):  # lambdify: the float power the numeric path takes
            p, draws = (printer._print(a) for a in self.args)
            return f"(1 - ({p}))**({draws})"

        _pythoncode = _lambdacode = _numpycode

        def _javascript(self, printer):  # the report page's calculators (render/html/html_report.py)
            p, draws = (printer._print(a) for a in self.args)
            return f"Math.pow(1 - ({p}), {draws})"

    return untouched
