"""FPM tables: whole-forward measured times under one :class:`~v41graph.ir.identity.Identity`.

A table is an identity plus points at shape coordinates (phase, batch size, prefill tokens
summed over requests, past KV summed over requests — the current decode query excluded). A
decode step is one token per request, so a decode point's ``total_prefill_tokens`` is its batch.
A point either has a positive ``observed_ms`` or names the failure class that kept it from one.

Tables load through :func:`.load.load_table` (the plain layout and AISimulate's folders);
every loader ends in :func:`make_table`, which validates.

>>> t = make_table("t", None, [Point("decode", 1, 1, 8, 40.0), Point("decode", 1, 1, 0, 30.0)], "hand")
>>> [p.total_kv_read_tokens for p in t.points]
[0, 8]
>>> make_table("t", None, [Point("decode", 1, 1, 8, 40.0), Point("decode", 1, 1, 8, 41.0)], "hand")
Traceback (most recent call last):
...
v41graph.costs.fpm.table.TableError: hand point 2: duplicate coordinates (decode batch 1, ...
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ...errors import CostError
from ...ir.identity import Identity

PHASES = ("prefill", "decode")
FAILURE_CLASSES = ("unsupported", "init failure", "OOM", "execution failure", "invalid output", "missing sample")
POINT_COLUMNS = ("phase", "batch_size", "total_prefill_tokens", "total_kv_read_tokens", "observed_ms")


class TableError(CostError):
    """A measured table is malformed: a missing field, a duplicate, a bad value, mixed identities."""


@dataclass(frozen=True, order=True)
class Point:
    """One measured whole forward (or the failure that replaced it)."""

    phase: str
    batch_size: int
    total_prefill_tokens: int
    total_kv_read_tokens: int
    observed_ms: float | None = None
    failure: str | None = None

    @property
    def key(self) -> tuple[str, int, int, int]:
        """The shape coordinates (what must be unique within a table)."""
        return (self.phase, self.batch_size, self.total_prefill_tokens, self.total_kv_read_tokens)

    def describe(self) -> str:
        return (f"{self.phase} batch {self.batch_size}, new tokens {self.total_prefill_tokens}, "
                f"past KV {self.total_kv_read_tokens}")

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class FpmTable:
    """Points of one identity; ``note`` says why a table is (not) admitted, ``source`` where it came from."""

    name: str
    identity: Identity
    points: tuple[Point, ...]
    source: str
    note: str = ""

    @property
    def admitted(self) -> bool:
        return self.identity.admission == "admitted"


def check_point(p: Point, where: str) -> Point:
    """Validate one point's values; ``where`` names it in the error (file and line)."""
    if p.phase not in PHASES:
        raise TableError(f"{where}: phase must be one of {', '.join(PHASES)}, got {p.phase!r}")
    for name, minimum in (("batch_size", 1), ("total_prefill_tokens", 1), ("total_kv_read_tokens", 0)):
        v = getattr(p, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise TableError(f"{where}: {name} must be an integer >= {minimum}, got {v!r}")
    if p.phase == "decode" and p.total_prefill_tokens != p.batch_size:
        raise TableError(f"{where}: a decode step is one token per request, so total_prefill_tokens must "
                         f"equal batch_size {p.batch_size}, got {p.total_prefill_tokens}")
    if p.failure is not None and p.failure not in FAILURE_CLASSES:
        raise TableError(f"{where}: failure must be one of {', '.join(FAILURE_CLASSES)}, got {p.failure!r}")
    if p.failure is None:
        if p.observed_ms is None:
            raise TableError(f"{where}: missing field 'observed_ms' (and no failure class)")
        if not p.observed_ms > 0:
            raise TableError(f"{where}: observed_ms must be > 0, got {p.observed_ms!r}")
    return p


def make_table(name: str, identity: Identity, points, source: str, note: str = "",
               where: tuple[str, ...] | None = None) -> FpmTable:
    """Validate points (each, then duplicate coordinates) and build a table sorted by coordinates."""
    labels = where or tuple(f"{source} point {i + 1}" for i in range(len(points)))
    seen: dict[tuple, str] = {}
    for p, label in zip(points, labels):
        check_point(p, label)
        if p.key in seen:
            raise TableError(f"{label}: duplicate coordinates ({p.describe()}), already at {seen[p.key]}")
        seen[p.key] = label
    return FpmTable(name, identity, tuple(sorted(points)), source, note)


__all__ = ["FAILURE_CLASSES", "FpmTable", "PHASES", "POINT_COLUMNS", "Point", "TableError", "check_point",
           "make_table"]
