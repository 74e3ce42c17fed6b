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
import numbers
import sys
from typing import Iterable, Union

from .reuse import cached


class _Sympy:
    """sympy, imported the first time a helper needs it: the import takes ~0.2 s and numeric plans
    never need it (issue 14). The first attribute read puts the real module in its place."""

    def __getattr__(self, name: str):
        global sympy
        import sympy as module
        sympy = module
        return getattr(module, name)


sympy = _Sympy()

Number = Union[int, Fraction]
_EXACT = (int, Fraction)  # exact numbers by type (bool is not one: a flag is never a figure)
Value = Union[int, Fraction, "sympy.Expr"]


def as_int(value: object) -> int | None:
    """``value`` as a Python int when it is an integer of any kind (int, a numpy integer, any
    ``numbers.Integral``) other than a bool, else None; callers refuse None in their own words.

    Converting here keeps numpy scalars out of plans and outputs (JSON cannot write them).

    >>> import numpy as np
    >>> as_int(np.int64(8192)), as_int(True), as_int(1.5), as_int("8")
    (8192, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def is_symbolic(*values: object) -> bool:
    """True when any value is a sympy object (then results are sympy expressions).

    No sympy object can exist before sympy is imported, so until then the answer is False and
    sympy is not imported to find that out.
    """
    module = sys.modules.get("sympy")
    if module is None:
        return False
    basic = module.Basic
    for v in values:  # a plain loop: this runs for every term of every cost rule
        if isinstance(v, basic):
            return True
    return False


def _sym(v: Value) -> sympy.Expr:
    if isinstance(v, Fraction):
        return sympy.Rational(v.numerator, v.denominator)
    return sympy.sympify(v)


def smin(*values: Value, evaluate: bool = True) -> Value:
    """Minimum of numbers or expressions; ``evaluate=False`` as for :func:`smax`.

    >>> from v41graph.symbols import N
    >>> smin(N + 1, N, 511, evaluate=False)
    Min(511, N)
    """
    if all(type(v) in _EXACT for v in values):  # the common case first: ints and Fractions
        return min(values)
    if is_symbolic(*values):
        return _extremum(sympy.Min, _typed(values), evaluate, _global_evaluate())
    if _arrays(values):  # a table's columns (ir/rows.py): elementwise
        return _reduce(_np().minimum, values)
    return min(values)


def smax(*values: Value, evaluate: bool = True) -> Value:
    """Maximum of numbers or expressions. ``evaluate=False`` skips sympy's pairwise comparison of
    the arguments (seconds on large expressions that cannot be ordered anyway); an argument that
    another one dominates term by term (:func:`_dominates`) is dropped.

    >>> from v41graph.symbols import N
    >>> smax(N ** 2, 3 * N, 0, evaluate=False), smax(2 * N, N, evaluate=False)
    (Max(3*N, N**2), 2*N)
    """
    if all(type(v) in _EXACT for v in values):  # the common case first: ints and Fractions
        return max(values)
    if is_symbolic(*values):
        return _extremum(sympy.Max, _typed(values), evaluate, _global_evaluate())
    if _arrays(values):
        return _reduce(_np().maximum, values)
    return max(values)


def _global_evaluate() -> bool:
    from sympy.core.parameters import global_parameters  # loaded already: the values are symbolic
    return global_parameters.evaluate


def _np():
    import numpy
    return numpy


def _arrays(values: tuple) -> bool:
    """True when a value is a numpy array (only possible once numpy is imported)."""
    np = sys.modules.get("numpy")
    return np is not None and any(isinstance(v, np.ndarray) for v in values)


def _reduce(op, values: tuple):
    out = values[0]
    for v in values[1:]:
        out = op(out, v)
    return out

def _typed(values: tuple) -> tuple:
    # the type keeps 128 and 128.0 (equal, with one hash) apart in the memo below
    return tuple((type(v), v) for v in values)


@cached(1 << 14)
def _extremum(cls: type, typed: tuple, evaluate: bool, _global_evaluate: bool) -> sympy.Expr:
    """sympy's Min or Max of the values in ``typed``, built once per distinct argument list.

    The cost rules take the same minima over and over (min(384, 6·N) in every MoE layer, the
    replay tail's min(N, 128) in every request's ledger), and sympy's ``Min``/``Max`` compare
    their arguments pairwise through the assumptions system each time: that was the largest
    single cost of a closed form's build. Expressions are immutable, so the memo returns the
    very object a fresh call would build. (``_global_evaluate``: sympy's ``evaluate(False)``
    context changes what a fresh call builds, so it is part of the key.)
    """
    args = [_sym(v) for _, v in typed]
    if evaluate:
        return cls(*args)
    beats = _dominates if cls is sympy.Max else (lambda u, t: _dominates(t, u))
    terms = _prune(args, beats)
    return terms[0] if len(terms) == 1 else cls(*terms, evaluate=False)


def _prune(values: list[sympy.Expr], beats) -> list[sympy.Expr]:
    """``values`` without duplicates and without any that another one ``beats`` (ties: the first stays)."""
    terms = list(dict.fromkeys(values))
    return [t for i, t in enumerate(terms)
            if not any(beats(u, t) and (j < i or not beats(t, u)) for j, u in enumerate(terms) if j != i)]


def _dominates(a: sympy.Expr, b: sympy.Expr, shortcut: bool = True) -> bool:
    """a ≥ b for sure, by a cheap test: a − b expands to terms with non-negative coefficients.
    Every atom of a cost (lengths, their floors, Min and Max of counts) is a count ≥ 0.
    ``shortcut=False`` always expands where the terms do not decide (the plain rule, which the
    shortcut must agree with: tests/test_algebra_symbolic.py)."""
    d = a - b
    if d.is_number:
        return bool(d >= 0)
    terms = d.as_coefficients_dict()
    if any(c < 0 for c in terms.values()):
        return False
    if all(not t.has(sympy.Add) for t in terms):  # already monomials of atoms: decided
        return True
    if len(terms) > 24:  # expanding large products costs more than an unpruned Max
        return False
    if shortcut and all(_plainly_nonnegative(t) for t in terms):  # what the expansion would find, without it
        return True
    return all(c >= 0 for c in sympy.expand(d).as_coefficients_dict().values())


def _plainly_nonnegative(e: sympy.Expr) -> bool:
    """True only if ``e`` expands to terms with non-negative coefficients, seen without expanding:
    a non-negative number or a cost atom, or sums, products and positive integer powers of those
    (no cancellation can occur among them). False: undecided, :func:`_dominates` expands."""
    if e.is_Number:
        return bool(e >= 0)
    if isinstance(e, (sympy.Symbol, sympy.Min, sympy.Max, sympy.floor, sympy.ceiling)):  # cost atoms
        return True
    if e.is_Add or e.is_Mul:
        return all(_plainly_nonnegative(a) for a in e.args)
    if e.is_Pow:
        return bool(e.exp.is_Integer and e.exp > 0) and _plainly_nonnegative(e.base)
    return False


def select(condition, then: Value, otherwise: Value) -> Value:
    """``then`` where ``condition`` holds, else ``otherwise``: a plain ``if`` for numbers and
    expressions (whose ``==`` is exact, or structural), elementwise for a table's columns
    (``ir/rows.py``), so a formula that branches on a row's values is written once for both.

    >>> select(3 == 3, 1, 2), select(True | False, "a", "b")
    (1, 'a')
    """
    if _arrays((condition,)):
        return _np().where(condition, then, otherwise)
    return then if condition else otherwise


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


def fsum_in_order(values: Iterable[float]) -> float:
    """Σ of floats added one after another from 0.0, in order: the same bits on every Python
    (from 3.12 the built-in ``sum`` of floats compensates the rounding, other last bits).

    >>> fsum_in_order([1e16, 1.0, 1.0]), fsum_in_order([])
    (1e+16, 0.0)
    """
    total = 0.0
    for v in values:
        total += v
    return total


def to_sympy(v: Value) -> sympy.Expr:
    """Lift a number (Fraction included) or expression to sympy."""
    return _sym(v)


def exact(v: Value) -> Value:
    """Normalise an exact number: a whole Fraction becomes an int; expressions pass through."""
    if isinstance(v, Fraction) and v.denominator == 1:
        return int(v)
    if is_symbolic(v) and v.is_Integer:
        return int(v)
    return v
