"""Closed forms as numpy functions (:mod:`v41graph.analysis.symbolic.lambdified`).

A piece's Min and Max are decided over its range before it is lambdified, and the rest is
computed with shared subexpressions: the exact value must not move (``settle`` against the form
at every point of random ranges), and the sweep must agree with the exact closed form at random
points and on both sides of every piece boundary, sorted or not.
"""

from __future__ import annotations

import random
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
import sympy

from v41graph import Plan, Request, load_model
from v41graph.analysis.symbolic.lambdified import hoist, piecewise_function, settle
from v41graph.analysis.symbolic.query import closed_form
from v41graph.symbols import N

PREFILL = Plan([Request.prefill(N)], decoder_replay="bounded")


@cache
def _form():
    return closed_form(load_model(), PREFILL, "sol_time")


def _exact(cf, n: int) -> Fraction:
    v = cf(N=n)
    return Fraction(int(v.p), int(v.q)) if isinstance(v, sympy.Rational) else Fraction(v)


def _random_expr(rng: random.Random, depth: int) -> sympy.Expr:
    """A cost-like expression: sums, products, Min / Max and floor of linear terms in N."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.7:
            return rng.randint(-2, 3) * N + rng.randint(-600, 600)
        return sympy.Integer(rng.randint(0, 999))
    a, b = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    kind = rng.randrange(5)
    if kind < 2 and a != b:
        return (sympy.Min, sympy.Max)[kind](a, b, evaluate=False)
    return [a + b, a * b, sympy.floor(a / 2), a + b, a * b][kind]


def _at(e: sympy.Expr, n: int) -> sympy.Expr:
    return e.xreplace({N: n}).doit()  # doit: an unevaluated Min of numbers becomes a number


@pytest.mark.parametrize("seed", range(40))
def test_settle_is_exact_over_its_range(seed):
    rng = random.Random(seed)
    for _ in range(5):
        expr = _random_expr(rng, 4)
        lo = rng.choice([1, 100, 129, 512, 700, 1500])
        hi = lo + rng.choice([0, 1, 27, 300, 5000])
        settled = settle(expr, N, lo, hi)
        for n in sorted({lo, hi, (lo + hi) // 2, min(hi, lo + 1), max(lo, hi - 1), min(max(lo, 128), hi)}):
            assert _at(settled, n) == _at(expr, n), (expr, settled, n)


def test_settle_decides_what_the_range_decides():
    e = sympy.Min(128, N) + sympy.Max(0, N - sympy.Min(128, N) - 511, evaluate=False)
    assert settle(e, N, 1000, 2000) == N - 511
    assert settle(e, N, 1, 100) == N
    assert settle(e, N, 100, 200) == e  # min(128, N) changes inside: left as it is


def test_hoist_computes_each_min_max_and_floor_once():
    m = sympy.Min(1023, N)
    cses, body = hoist(sympy.floor(m / 2) * (sympy.floor(m / 2) - 1) + 3 * m)
    assert [str(e) for _, e in cses] == ["Min(1023, N)", "floor(_x0/2)"]
    assert body.free_symbols == {s for s, _ in cses}


def test_sweep_agrees_with_the_exact_form_near_every_boundary():
    cf = _form()
    ends = [p for lo, hi, _ in cf.pieces for p in (lo - 1, lo, lo + 1, hi - 1, hi, hi + 1)]
    rng = np.random.default_rng(14)
    xs = np.unique(np.clip(np.concatenate([ends, rng.integers(1, 1 << 20, 60)]), 1, 1 << 20))
    ys = cf.lambdify()(xs)
    for x, y in zip(xs.tolist(), ys.tolist()):
        exact = _exact(cf, x)
        assert abs(Fraction(y) - exact) <= exact * Fraction(1, 10 ** 14), x
    shuffled = rng.permutation(len(xs))  # masks instead of slices: the same values
    assert np.array_equal(cf.lambdify()(xs[shuffled]), ys[shuffled])


def test_sweep_is_not_a_number_off_the_pieces():
    f = _form().lambdify()
    assert f is _form().lambdify()  # built once per form
    out = f(np.array([0, 1, 128.5, 1 << 20, (1 << 20) + 1]))
    assert np.isnan(out[[0, 2, 4]]).all() and np.isfinite(out[[1, 3]]).all()
    assert np.isnan(f(np.array([5.0, np.nan, 3.0])))[1] and not np.isnan(f(np.array([5.0, np.nan, 3.0]))[[0, 2]]).any()


@pytest.mark.parametrize("xs", [[], [7], [3, 3, 3], [200, 100, 300]])
def test_piecewise_function_on_small_inputs(xs):
    f = piecewise_function([(1, 150, N * 2), (151, 400, sympy.Min(N, 250) + 150)], N)
    expected = [2 * x if x <= 150 else min(x, 250) + 150 for x in xs]
    assert f(np.array(xs, dtype=np.int64)).tolist() == expected


def test_settle_holds_an_expected_experts_term_that_is_one_number_over_the_range():
    """untouched(p, N) is monotone on its grid: 0 over [3000, 5000] at p = 3/128 (below 2⁻⁵⁴ from
    N = 1,579 on), so it settles to 0 there — exactly what the numbers give — and stays itself
    where its ends differ."""
    from v41graph.chance import untouched
    p = Fraction(3, 128)
    term = untouched(p, N)
    assert untouched(p, 1579) == 0 and untouched(p, 1578) > 0
    assert settle(5 * term + N, N, 3000, 5000) == N
    assert settle(5 * term + N, N, 1, 10) == 5 * term + N
    assert settle(untouched(p, 2 * N + 1), N, 1000, 2000) == 0  # linear draws: still monotone
