"""FPM tables: whole-forward measured times under one :class:`~v41graph.ir.identity.Identity`.

A table is an identity plus points at shape coordinates (phase, batch size, prefill tokens
summed over requests, past KV summed over requests — the current decode query excluded). A
decode step is one token per request, so a decode point's ``total_prefill_tokens`` is its batch.
A point either has a positive ``observed_ms`` or names the failure class that kept it from one.

Two layouts load here (:func:`load_table`): the project's own plain layout — a folder with
``identity.json`` and ``points.csv`` — and, via :mod:`.fpm_aisimulate`, AISimulate's folders.
Built-in names select the vendored AISimulate data (``data/fpm/aisimulate-v41``).

>>> t = load_table("aisimulate-gb200-calibration-v1")
>>> len(t.points), t.identity.gpu, t.identity.admission
(126, 'gb200', 'not admitted')
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

from ...errors import CostError, V41Error
from ...ir.identity import Identity

PHASES = ("prefill", "decode")
FAILURE_CLASSES = ("unsupported", "init failure", "OOM", "execution failure", "invalid output", "missing sample")
POINT_COLUMNS = ("phase", "batch_size", "total_prefill_tokens", "total_kv_read_tokens", "observed_ms")
_AISIMULATE = ("data", "fpm", "aisimulate-v41")
BUILTIN = {  # name -> folder under data/fpm/aisimulate-v41
    "aisimulate-gb200-calibration-v1": "gb200-fpm/calibration-v1",
    "aisimulate-gb300-off-v1": "gb300-fpm/off-v1",
    "aisimulate-gb300-on-v1": "gb300-fpm/on-v1",
}


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


def _int(row: dict, col: str, where: str) -> int:
    text = (row.get(col) or "").strip()
    if not text:
        raise TableError(f"{where}: missing field {col!r}")
    try:
        return int(text)
    except ValueError:
        raise TableError(f"{where}: {col} must be an integer, got {text!r}") from None


def read_points_csv(text: str, origin: str, *, identity: Identity | None = None) -> tuple[list[Point], list[str]]:
    """Points of a CSV (the plain layout's ``points.csv`` or a holdout file); returns (points, labels).

    Required columns: phase, batch_size, total_prefill_tokens, total_kv_read_tokens, observed_ms;
    a ``failure`` column may name a failure class instead of a time. Other columns are ignored,
    except columns named like identity fields: with ``identity`` their values must equal it
    (a table holds one identity). A decode row may leave total_prefill_tokens empty or 0: a
    decode step is one token per request, so it is the batch size.
    """
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    for col in POINT_COLUMNS:
        if col not in header:
            raise TableError(f"{origin}: missing column {col!r}")
    id_cols = [c for c in header if identity is not None and c in identity.to_dict() and c != "coordinates"]
    points, labels = [], []
    for n, row in enumerate(reader, start=2):
        where = f"{origin} line {n}"
        for col in id_cols:
            want = getattr(identity, col)
            if (row.get(col) or "").strip() != str(want):
                raise TableError(f"{where}: mixed identities: {col}={row.get(col)!r} but identity.json says {want!r}")
        phase = (row.get("phase") or "").strip()
        if not phase:
            raise TableError(f"{where}: missing field 'phase'")
        batch = _int(row, "batch_size", where)
        if phase == "decode" and (row.get("total_prefill_tokens") or "").strip() in ("", "0"):
            new = batch
        else:
            new = _int(row, "total_prefill_tokens", where)
        failure = (row.get("failure") or "").strip() or None
        ms_text = (row.get("observed_ms") or "").strip()
        try:
            ms = float(ms_text) if ms_text else None
        except ValueError:
            raise TableError(f"{where}: observed_ms must be a number, got {ms_text!r}") from None
        points.append(check_point(Point(phase, batch, new, _int(row, "total_kv_read_tokens", where), ms, failure),
                                  where))
        labels.append(where)
    return points, labels


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TableError(f"fpm table: missing file {str(path)!r}") from None


def load_plain(folder: Path, name: str | None = None) -> FpmTable:
    """The plain layout: ``identity.json`` (an :class:`Identity`) and ``points.csv``."""
    try:
        identity = Identity.from_json(_read(folder / "identity.json"), origin=f"{folder / 'identity.json'}")
    except V41Error as exc:
        raise TableError(str(exc)) from None
    points, labels = read_points_csv(_read(folder / "points.csv"), str(folder / "points.csv"), identity=identity)
    note = "" if identity.admission == "admitted" else f"identity.json declares admission {identity.admission!r}"
    return make_table(name or folder.name, identity, points, str(folder), note, tuple(labels))


def builtin_folder(name: str) -> Path:
    """Folder of a built-in table (vendored AISimulate data)."""
    return Path(str(resources.files("v41graph").joinpath(*_AISIMULATE))) / BUILTIN[name]


def load_table(name_or_path: str | Path) -> FpmTable:
    """Load a table by built-in name or folder path, whichever layout the folder holds."""
    from .fpm_aisimulate import load_gb200_calibration, load_gb300_identity
    name = str(name_or_path)
    folder = builtin_folder(name) if name in BUILTIN else Path(name)
    label = name if name in BUILTIN else folder.name
    if not folder.is_dir():
        raise TableError(f"fpm table: {name!r} is neither a built-in table ({', '.join(BUILTIN)}) nor a folder")
    if (folder / "consumer-verification.json").is_file():
        return load_gb200_calibration(folder, label)
    if (folder / "calibration" / "identity.json").is_file():
        return load_gb300_identity(folder, label)
    if (folder / "identity.json").is_file() or (folder / "points.csv").is_file():
        return load_plain(folder, label)
    raise TableError(f"fpm table {str(folder)!r}: no identity.json + points.csv, and not an AISimulate FPM folder")


__all__ = ["BUILTIN", "FAILURE_CLASSES", "FpmTable", "PHASES", "Point", "TableError", "load_table",
           "make_table", "read_points_csv"]
