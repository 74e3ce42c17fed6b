"""Arithmetic helpers that work on numbers and on sympy expressions alike.

docs/architecture.md, decision 2: a cost formula is written once with these helpers; given ints or
Fractions it returns exact numbers, given sympy expressions it returns a closed form.

>>> from v41graph.algebra import smin, floordiv
>>> from v41graph.symbols import N
>>> smin(N, 128), smin(300, 128)
(Min(128, N), 128)
>>> floordiv(N, 2), floordiv(7, 2)
(floor(N/2), 3)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable, Union

import sympy

Number = Union[int, Fraction]
Value = Union[int, Fraction, sympy.Expr]


def is_symbolic(*values: object) -> bool:
    """True when any value is a sympy object (then results are sympy expressions)."""
    for v in values:  # a plain loop: this runs for every term of every cost rule
        if isinstance(v, sympy.Basic):
            return True
    return False


def _sym(v: Value) -> sympy.Expr:
    if isinstance(v, Fraction):
        return sympy.Rational(v.numerator, v.denominator)
    return sympy.sympify(v)


def smin(*values: Value) -> Value:
    """Minimum of numbers or expressions."""
    if is_symbolic(*values):
        return sympy.Min(*[_sym(v) for v in values])
    return min(values)


def smax(*values: Value) -> Value:
    """Maximum of numbers or expressions."""
    if is_symbolic(*values):
        return sympy.Max(*[_sym(v) for v in values])
    return max(values)


def floordiv(a: Value, b: Value) -> Value:
    """⌊a / b⌋ exactly."""
    if is_symbolic(a, b):
        return sympy.floor(_sym(a) / _sym(b))
    return a // b


def ceildiv(a: Value, b: Value) -> Value:
    """⌈a / b⌉ exactly."""
    if is_symbolic(a, b):
        return sympy.ceiling(_sym(a) / _sym(b))
    return -((-a) // b)


def ssum(values: Iterable[Value]) -> Value:
    """Sum that stays an int for ints and becomes an expression when any term is symbolic."""
    total: Value = 0
    for v in values:
        total = total + v
    return total


def to_sympy(v: Value) -> sympy.Expr:
    """Lift a number (Fraction included) or expression to sympy."""
    return _sym(v)


def exact(v: Value) -> Value:
    """Normalise an exact number: a whole Fraction becomes an int; expressions pass through."""
    if isinstance(v, Fraction) and v.denominator == 1:
        return int(v)
    if isinstance(v, sympy.Basic) and v.is_Integer:
        return int(v)
    return v
