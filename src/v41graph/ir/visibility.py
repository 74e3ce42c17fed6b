"""Closed-form sums of what queries see, exact for ints and symbolic for sympy lengths.

A query at position ``i`` sees ⌊(i+1)/m⌋ complete compressed groups (a group becomes visible
once the query has passed its last token) and min(i + 1 − s, W) SWA keys when SWA starts at
``s``. Summing over a range of query positions uses prefix sums ``S(b) − S(a)``:

* ``floor_sum(n, m)`` = Σ_{j=1..n} ⌊j/m⌋ = m·q(q−1)/2 + q(n − qm + 1), q = ⌊n/m⌋;
* ``capped_floor_sum(n, m, K)`` = Σ_{j=1..n} min(⌊j/m⌋, K) — the sum saturates at j = Km;
* ``window_sum(n, W)`` = Σ_{u=1..n} min(u, W) = T(min(n, W)) + W·max(0, n − W).

>>> floor_sum(3, 2), capped_floor_sum(10, 1, 4), window_sum(5, 3)
(2, 34, 12)
>>> from v41graph.symbols import N
>>> window_sum(N, 128).subs(N, 129)
8384
"""

from __future__ import annotations

from ..algebra import Value, floordiv, is_symbolic, smax, smin


def _half(x: Value) -> Value:
    """x/2 for an x known to be even (exact integer division for ints)."""
    return x / 2 if is_symbolic(x) else x // 2


def triangle(x: Value) -> Value:
    """1 + 2 + … + x."""
    return _half(x * (x + 1))


def floor_sum(n: Value, m: int) -> Value:
    """Σ_{j=1..n} ⌊j/m⌋ for n ≥ 0."""
    q = floordiv(n, m)
    return m * _half(q * (q - 1)) + q * (n - q * m + 1)


def capped_floor_sum(n: Value, m: int, k: int) -> Value:
    """Σ_{j=1..n} min(⌊j/m⌋, k) for n ≥ 0."""
    knee = k * m - 1  # the last j with ⌊j/m⌋ < k
    # unevaluated: sympy's ordering of Min / Max arguments takes seconds over a whole graph
    return floor_sum(smin(n, knee, evaluate=False), m) + k * smax(0, n - knee, evaluate=False)


def window_sum(n: Value, w: int) -> Value:
    """Σ_{u=1..n} min(u, w) for n ≥ 0."""
    return triangle(smin(n, w, evaluate=False)) + w * smax(0, n - w, evaluate=False)


def range_sum(prefix, a: Value, b: Value, *args) -> Value:
    """Σ over query positions i in [a, b) of f(i + 1), given f's prefix sum."""
    return prefix(b, *args) - prefix(a, *args)
