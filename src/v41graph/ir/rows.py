"""Ledger rows in columns: one layer's rows of many requests as numpy arrays (decision 1).

A plan of many numeric requests gives each layer a :class:`RowTable` instead of a tuple of
:class:`~.ledger.Row`: the same sequence to whoever iterates it (the Row objects are made on first
use, once), while the hot paths — token counts, the visibility sums, the replay policies, the keys
under which equal work is costed once — read its :class:`RowColumns` and run one numpy expression
per layer instead of one Python expression per request. Layers whose rows agree share one
``RowColumns``. The expressions are the row formulas themselves (``Row.tokens`` is used as it is,
on arrays); where a formula branches on a row's values, its columns twin says so next to it.

Exact: int64 columns, every sum returned as a Python int, and a table is only built where no sum
can leave int64 (:func:`fits_int64`); otherwise the rows stay a tuple.

>>> from v41graph.ir.ledger import Row
>>> t = RowTable.of(3, [Row(0, 3, 0, 100, 0, 0, 0, 0), Row(1, 3, 50, 80, 0, 0, 0, 50, copies=2)])
>>> len(t), t[1].copies, total(t.cols.tokens), sum(r.tokens for r in t)
(2, 2, 160, 160)
>>> t == (Row(0, 3, 0, 100, 0, 0, 0, 0), Row(1, 3, 50, 80, 0, 0, 0, 50, copies=2))
True
"""

from __future__ import annotations

from array import array
import sys
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from ..algebra import exact, is_symbolic
from .ledger import Row

if TYPE_CHECKING:
    import numpy as np


def _np():
    import numpy  # tables only: a plan of a few requests never imports numpy (issue 14)
    return numpy

FIELDS = ("request", "q_start", "q_end", "swa_start", "kv_start", "kv_end", "cached", "restored", "copies", "seq")
#: what the cost rules read of a row (``costs.node.rows_key``): not its layer, restored count or sequence
COSTED = ("request", "q_start", "q_end", "swa_start", "kv_start", "kv_end", "cached", "copies")
#: the largest magnitude a row's sums may reach: pairs per row are < positions², times copies, summed over rows
_LIMIT = 2 ** 62


#: a plan of at least this many numeric requests gets tables (fewer: tuples, cheaper for one or two)
TABLE_MIN_REQUESTS = [8]


def tabled(model, plan) -> bool:
    """Whether ``plan``'s rows on ``model`` are built as tables: many numeric requests, sums within int64."""
    reqs = plan.requests
    if len(reqs) < TABLE_MIN_REQUESTS[0] or any(is_symbolic(r.cached, r.new, r.copies) for r in reqs):
        return False
    longest = max(r.end for r in reqs) + plan.window(model) + (model.dspark_block_size or 0)
    return fits_int64(longest, max(r.copies for r in reqs), len(reqs))


def fits_int64(positions: int, copies: int, rows: int) -> bool:
    """Whether every sum over ``rows`` rows of positions < ``positions`` and ``copies`` fits int64."""
    return rows * copies * (positions + 1) ** 2 * 4 < _LIMIT


class RowColumns:
    """The rows of one layer for many requests, one int64 array per :class:`Row` field (seq −1: none).

    Duck-types a Row whose fields are arrays: ``Row``'s branch-free formulas apply elementwise.
    """

    __slots__ = FIELDS + ("_keys",)

    def __init__(self, **columns: np.ndarray):
        np = _np()
        for f in FIELDS:
            a = np.asarray(columns[f], dtype=np.int64)
            a.setflags(write=False)
            object.__setattr__(self, f, a)
        object.__setattr__(self, "_keys", {})

    def __setattr__(self, name, value):
        raise AttributeError("RowColumns are immutable")

    def replace(self, **changes: np.ndarray) -> "RowColumns":
        return RowColumns(**{f: changes.get(f, getattr(self, f)) for f in FIELDS})

    def take(self, mask: np.ndarray) -> "RowColumns":
        return RowColumns(**{f: getattr(self, f)[mask] for f in FIELDS})

    def __len__(self) -> int:
        return len(self.request)

    def __reduce__(self):
        return (_columns, (tuple(getattr(self, f) for f in FIELDS),))

    def key(self, fields: tuple[str, ...] = COSTED) -> bytes:
        """The content of ``fields``, as bytes: equal keys, equal rows in those fields."""
        k = self._keys.get(fields)
        if k is None:
            k = self._keys[fields] = b"".join(getattr(self, f).tobytes() for f in fields) + bytes([len(fields)])
        return k

    # the row formulas, elementwise: Row's own (written with algebra.select where they branch)
    tokens = Row.tokens
    kv_tokens = Row.kv_tokens
    in_start = Row.in_start
    in_tokens = Row.in_tokens
    new_entries = Row.new_entries


def _columns(arrays: tuple[np.ndarray, ...]) -> RowColumns:
    return RowColumns(**dict(zip(FIELDS, arrays)))


class RowTable(Sequence[Row]):
    """One layer's rows as columns; a sequence of :class:`Row` to every other reader."""

    __slots__ = ("layer", "cols", "_rows")

    def __init__(self, layer: int, cols: RowColumns):
        self.layer, self.cols, self._rows = layer, cols, None

    @staticmethod
    def of(layer: int, rows: Iterable[Row]) -> "RowTable":
        rows = tuple(rows)
        seq = [-1 if r.seq is None else r.seq for r in rows]
        cols = {f: [getattr(r, f) for r in rows] for f in FIELDS if f != "seq"}
        return RowTable(layer, RowColumns(seq=seq, **cols))

    @property
    def rows(self) -> tuple[Row, ...]:
        """The rows as Row objects (made once; plain Python ints)."""
        if self._rows is None:
            c = self.cols
            lists = [getattr(c, f).tolist() for f in FIELDS]
            self._rows = tuple(Row(request=q, layer=self.layer, q_start=a, q_end=b, swa_start=s, kv_start=k0,
                                   kv_end=k1, cached=h, restored=rs, copies=n, seq=None if sq < 0 else sq)
                               for q, a, b, s, k0, k1, h, rs, n, sq in zip(*lists))
        return self._rows

    def __len__(self) -> int:
        return len(self.cols)

    def __bool__(self) -> bool:
        return len(self.cols) > 0

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, RowTable):
            return self.layer == other.layer and (self.cols is other.cols or all(
                _np().array_equal(getattr(self.cols, f), getattr(other.cols, f)) for f in FIELDS))
        if isinstance(other, tuple):
            return self.rows == other
        return NotImplemented

    def __hash__(self) -> int:
        # by content, not as the equal tuple would hash: tables key caches among themselves
        return hash((self.layer, self.cols.key(FIELDS)))

    def __repr__(self) -> str:
        return f"RowTable(layer={self.layer}, rows={len(self)})"

    def __reduce__(self):
        return (RowTable, (self.layer, self.cols))


def is_table(rows: Any) -> bool:
    return type(rows) is RowTable


def groups(rows: Sequence[Row]) -> Sequence[Any]:
    """What a row formula runs over: each Row of a tuple, or a table's columns once."""
    return (rows.cols,) if type(rows) is RowTable else rows


def per_request(values: Sequence[Any], group: Any) -> Any:
    """``values[request]`` of a Row, or of every row of a table's columns (an array)."""
    if isinstance(group, RowColumns):
        return _np().asarray(values)[group.request]
    return values[group.request]


def total(value: Any) -> Any:
    """A formula's value over a group: an array's sum as a Python number (int, or an exact
    Fraction from an array of them), anything else as it is."""
    np = sys.modules.get("numpy")  # no array exists before numpy is imported
    if np is None or not isinstance(value, np.ndarray):
        return value
    return int(value.sum()) if value.dtype.kind == "i" else exact(value.sum())


def token_key(rows: Sequence[Row]) -> Any:
    """(request, q_start, q_end) of every row, canonical for tuples and tables of numeric rows alike
    (so the fusion pass compares token sets across both); symbolic rows keep their tuple form."""
    if type(rows) is RowTable:
        return rows.cols.key(("request", "q_start", "q_end"))
    spans = tuple((r.request, r.q_start, r.q_end) for r in rows)
    if all(type(x) is int and -2 ** 63 <= x < 2 ** 63 for s in spans for x in s):
        # the bytes RowColumns.key gives: each column's int64 values (native order), then a 3
        return b"".join(array("q", column).tobytes() for column in zip(*spans)) + bytes([3])
    return spans
