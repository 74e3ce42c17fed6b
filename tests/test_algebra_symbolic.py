"""The symbolic branches of ``algebra``: memoised ``smin`` / ``smax`` and the dominance test.

Both are speed-ups that must not change one expression: ``smin`` / ``smax`` return what sympy
builds for the same arguments, and ``_dominates`` decides every pair as the plain rule does
(expand a − b, all coefficients ≥ 0), only sooner where no expansion is needed.
"""

from __future__ import annotations

import random

import pytest
import sympy

from v41graph.algebra import _dominates, smax, smin
from v41graph.symbols import N


def _cost_like(rng: random.Random, depth: int) -> sympy.Expr:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([N, N - rng.randint(0, 200), sympy.Min(128, N), sympy.floor(N / 2),
                           sympy.Max(0, N - 511, evaluate=False), sympy.Integer(rng.randint(0, 9))])
    a, b = _cost_like(rng, depth - 1), _cost_like(rng, depth - 1)
    return rng.choice([a + b, a * b, a * rng.randint(1, 5), a - b, (a + 1) ** 2, a * (b - 1)])


@pytest.mark.parametrize("seed", range(20))
def test_dominates_decides_as_the_expanding_rule(seed):
    rng = random.Random(seed)
    for _ in range(15):
        a, b = _cost_like(rng, 3), _cost_like(rng, 3)
        assert _dominates(a, b) == _dominates(a, b, shortcut=False), (a, b)
        assert _dominates(a, 0) == _dominates(a, sympy.Integer(0), shortcut=False), a


def test_memoised_min_max_are_what_sympy_builds():
    assert smin(N, 128) == sympy.Min(N, 128) and smin(N, 128) is smin(N, 128)
    assert smax(384, 6 * N) == sympy.Max(384, 6 * N)
    assert smin(N, 128.0) == sympy.Min(N, sympy.Float(128.0))  # not the memo of smin(N, 128)
    assert str(smin(N, 128.0)) != str(smin(N, 128))
    assert smax(2 * N, N, evaluate=False) == 2 * N
    outside = smin(N + 1, N)
    with sympy.evaluate(False):  # sympy's own switch is part of the memo's key
        inside = smin(N + 1, N)
        assert inside == sympy.Min(N + 1, N)
    assert outside == sympy.Min(N + 1, N) == N and inside != outside
