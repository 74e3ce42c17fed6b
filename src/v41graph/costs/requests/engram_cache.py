"""Engram row locality: distinct rows, reuse (LRU stack) distance and LRU hit rates.

A request's Engram lookups at one layer form an access stream: position by position, the
(max_ngram − 1) × heads columns in order, all into the layer's one table. For each access the
**stack distance** is the number of *other* distinct rows touched since the same row was last
touched (−1 on a first touch). An LRU cache of C rows hits exactly the accesses with
0 ≤ distance < C, so one pass gives the hit rate at every cache size (Mattson et al., 1970).

Synthetic input flatters a cache: 8,192 pad tokens touch 24 rows per layer, all of them hot after
the first position; real text touches a new row on most lookups.

>>> import numpy as np
>>> stack_distances(np.array([7, 8, 7, 7, 9, 8])).tolist()
[-1, -1, 1, 0, -1, 2]
>>> lru_hits(np.array([7, 8, 7, 7, 9, 8]), 2)      # the 2nd 7 (distance 1) and the 3rd (0)
2
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import CostError


def stack_distances(stream: np.ndarray) -> np.ndarray:
    """LRU stack distance of each access in ``stream`` (−1 on a first touch).

    A Fenwick tree over access times marks, for every row, the time of its latest access; the
    distance of a re-access is the number of marks strictly between the two accesses.
    """
    stream = np.asarray(stream).ravel()
    _, dense = np.unique(stream, return_inverse=True)
    n = len(stream)
    tree = [0] * (n + 1)
    last = [-1] * (int(dense.max()) + 1 if n else 0)
    out = [-1] * n
    marked = 0
    for t, row in enumerate(dense.tolist()):
        p = last[row]
        if p >= 0:
            # marks at times <= p (prefix sum), subtracted from all marks: those after p
            i, before = p + 1, 0
            while i > 0:
                before += tree[i]
                i -= i & -i
            out[t] = marked - before
            i = p + 1
            while i <= n:
                tree[i] -= 1
                i += i & -i
            marked -= 1
        i = t + 1
        while i <= n:
            tree[i] += 1
            i += i & -i
        marked += 1
        last[row] = t
    return np.asarray(out, dtype=np.int64)


def lru_hits(stream: np.ndarray, capacity: int, distances: np.ndarray | None = None) -> int:
    """Hits of an LRU cache of ``capacity`` rows, started cold, over ``stream``."""
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 0:
        raise CostError(f"engram cache capacity: must be a non-negative number of rows, got {capacity!r}")
    d = stack_distances(stream) if distances is None else distances
    return int(((d >= 0) & (d < capacity)).sum())


@dataclass(frozen=True)
class LayerLocality:
    """Locality of one request's lookups at one Engram layer."""

    layer: int
    positions: int
    lookups: int
    distinct: int
    distinct_per_column: tuple[int, ...]
    reuses: int  # accesses to a row touched before (lookups − distinct)
    median_reuse_distance: float | None  # over re-accesses, in distinct rows; None when none
    hits: tuple[tuple[int, int], ...]  # (cache rows, LRU hits)

    @property
    def distinct_fraction(self) -> float:
        return self.distinct / self.lookups if self.lookups else 0.0

    def hit_rate(self, capacity: int) -> float:
        for c, h in self.hits:
            if c == capacity:
                return h / self.lookups if self.lookups else 0.0
        raise CostError(f"engram cache: no hit count for {capacity} rows (have {[c for c, _ in self.hits]})")


def layer_locality(layer: int, rows: np.ndarray, capacities=()) -> LayerLocality:
    """Locality of an access matrix ``rows`` [positions, columns] under LRU caches of ``capacities`` rows."""
    rows = np.asarray(rows)
    d = stack_distances(rows)
    again = d[d >= 0]
    return LayerLocality(
        layer=layer, positions=int(rows.shape[0]), lookups=int(rows.size), distinct=int(len(np.unique(rows))),
        distinct_per_column=tuple(int(len(np.unique(rows[:, j]))) for j in range(rows.shape[1])),
        reuses=int(len(again)), median_reuse_distance=float(np.median(again)) if len(again) else None,
        hits=tuple((int(c), lru_hits(rows, int(c), d)) for c in sorted(set(capacities))))


__all__ = ["LayerLocality", "layer_locality", "lru_hits", "stack_distances"]
