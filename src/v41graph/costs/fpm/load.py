"""Loading FPM tables: built-in names, the plain layout, AISimulate folders.

The plain layout is the project's own, for users' measurements: a folder with
``identity.json`` (an :class:`~v41graph.ir.identity.Identity`) and ``points.csv``. AISimulate
folders are read by :mod:`.aisimulate`. Built-in names select the vendored AISimulate data
(``data/fpm/aisimulate-v41``, with its PROVENANCE.md and Apache-2.0 notices).

>>> t = load_table("aisimulate-gb200-calibration-v1")
>>> len(t.points), t.identity.gpu, t.identity.admission
(126, 'gb200', 'not admitted')
"""

from __future__ import annotations

import csv
import io
from importlib import resources
from pathlib import Path

from ...errors import V41Error
from ...ir.identity import Identity
from .aisimulate import load_gb200_calibration, load_gb300_identity
from .table import POINT_COLUMNS, FpmTable, Point, TableError, check_point, make_table

_AISIMULATE = ("data", "fpm", "aisimulate-v41")
BUILTIN = {  # name -> folder under data/fpm/aisimulate-v41
    "aisimulate-gb200-calibration-v1": "gb200-fpm/calibration-v1",
    "aisimulate-gb300-off-v1": "gb300-fpm/off-v1",
    "aisimulate-gb300-on-v1": "gb300-fpm/on-v1",
}


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


__all__ = ["BUILTIN", "builtin_folder", "load_plain", "load_table", "read_points_csv"]
