"""Regime search (:func:`v41graph.analysis.symbolic.regimes.runs`) against a scan of every integer.

The search narrows all changes of key at once (one ``keys_of`` call per round); whatever the
order in which it asks, its runs must be the scan's, with several changes between two grid
neighbours, changes next to each other and changes at the ends of the domain.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from v41graph.analysis.symbolic.regimes import grid, runs


def _scan(keys_of, lo: int, hi: int) -> list[tuple[int, int, object]]:
    xs = np.arange(lo, hi + 1)
    keys = list(keys_of(xs))
    out, start = [], lo
    for i in range(1, len(xs)):
        if keys[i] != keys[i - 1]:
            out.append((start, int(xs[i - 1]), keys[i - 1]))
            start = int(xs[i])
    out.append((start, hi, keys[-1]))
    return out


def _steps(breaks: list[int]):
    """A key that only grows (no change and change back): how many breaks are ≤ x."""
    b = np.array(sorted(breaks), dtype=np.int64)
    return lambda xs: [int(k) for k in np.searchsorted(b, np.asarray(xs), side="right")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(2, 300_000), max_size=12), st.integers(1, 3))
def test_runs_equal_a_scan_of_every_integer(breaks, lo):
    hi = 300_000
    keys_of = _steps(breaks)
    assert runs(keys_of, lo, hi) == _scan(keys_of, lo, hi)


def test_several_changes_between_grid_neighbours_are_all_found():
    points = grid(1, 1 << 20)
    a, b = int(points[-2]), int(points[-1])  # the widest gap: tens of thousands of integers
    breaks = [a + 1, a + 2, a + 500, b - 1, b]
    asked: list[int] = []

    def keys_of(xs):
        asked.append(len(xs))
        return _steps(breaks)(xs)
    found = runs(keys_of, 1, 1 << 20)
    assert [r[0] for r in found] == [1, a + 1, a + 2, a + 500, b - 1, b]
    assert [r[1] for r in found] == [a, a + 1, a + 499, b - 2, b - 1, 1 << 20]
    assert len(asked) < 12  # the grid, then a few rounds: not one call per probe


def test_changes_in_many_gaps_are_searched_in_the_same_rounds():
    breaks = [1000 * k + 7 for k in range(1, 200)]  # about 30 grid gaps, each with changes
    calls: list[int] = []

    def keys_of(xs):
        calls.append(len(xs))
        return _steps(breaks)(xs)
    assert runs(keys_of, 1, 250_000) == _scan(_steps(breaks), 1, 250_000)
    assert len(calls) < 30
