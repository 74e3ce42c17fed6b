"""Where measured kernel tables live and how they are read (the aiconfigurator-core layout).

A *systems root* holds ``<system>.yaml`` (its ``data_dir``) and
``data/<system>/<family>/<backend>/<version>/<table>.{csv.gz,csv,parquet}``. Three roots, first
found wins:

1. ``--measured-root DIR`` — a team's own measurements in the same layout;
2. the ``measured`` extra (``aiconfigurator-core==0.12.0``): located with
   :func:`importlib.util.find_spec` and never imported (importing it loads a native extension);
3. the slice vendored in ``v41graph/data/measured`` (SGLang 0.5.14 on h200_sxm, gb200, gb300).

CSV is read with the standard library into numpy arrays; parquet (the extra's format) needs
pyarrow, which aiconfigurator-core itself requires. Every table read records its SHA-256.

>>> find_source().kind in ("extra", "vendored")   # the extra when it is installed, else the slice
True
>>> src = find_source(VENDORED)                   # the vendored slice, whatever is installed
>>> src.kind, src.version_of("h200_sxm", "gemm", "sglang")
('root', '0.5.14')
>>> t = src.table("h200_sxm", "gemm", "sglang", "gemm_perf")
>>> int(t.columns["m"].min()), sorted(set(t.columns["gemm_dtype"]))
(1, ['bfloat16', 'fp8_block'])
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import importlib.util
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import CostError
from ...reuse import cached
from ...session import kept

VENDORED = Path(__file__).resolve().parents[2] / "data" / "measured" / "systems"
EXTRA = "aiconfigurator_core"
SUFFIXES = (".csv.gz", ".csv", ".parquet")


@dataclass(frozen=True)
class MeasuredTable:
    """One table: its columns as numpy arrays (numbers as float64, text as Python str objects) and its identity."""

    path: str
    sha256: str
    columns: dict[str, np.ndarray] = field(compare=False)

    @property
    def rows(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0


def _column(values: list[str]) -> np.ndarray:
    try:
        return np.array([float(v) for v in values], dtype=np.float64)
    except ValueError:
        return np.array(values, dtype=object)


def _read_csv(raw: bytes, gz: bool) -> dict[str, np.ndarray]:
    text = (gzip.decompress(raw) if gz else raw).decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    return {name: _column([r[i] for r in body]) for i, name in enumerate(header)}


def _read_parquet(path: Path) -> dict[str, np.ndarray]:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # only the extra's tables are parquet, and the extra requires pyarrow
        raise CostError(f"measured table {path}: reading parquet needs pyarrow "
                        "(pip install 'v41graph[measured]' brings it)") from None
    import pyarrow as pa
    with pq.ParquetFile(path) as f:  # one file: ``read_table`` would import pyarrow.dataset (0.2 s) for nothing
        table = f.read()
    out = {}
    for name in table.column_names:
        column = table.column(name)
        numeric = pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
        if numeric and column.null_count == 0:  # the same float64 array as below, without a Python loop
            out[name] = np.asarray(column.to_numpy(), dtype=np.float64)
            continue
        if (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)) and column.null_count == 0:
            out[name] = np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)  # Python str, as below
            continue
        values = column.to_pylist()
        out[name] = (np.array(values, dtype=np.float64) if all(isinstance(v, (int, float)) for v in values)
                     else np.array([str(v) for v in values], dtype=object))
    return out


@cached(256, resource=True)  # a file read, once per process (the tables: once per session, ``_load``)
def yaml_value(root: Path, system: str, name: str) -> str | None:
    """A top-level or nested ``name: value`` line of ``<system>.yaml`` (no YAML library needed)."""
    yaml = root / f"{system}.yaml"
    if yaml.is_file():
        for line in yaml.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == name:
                return value.split("#", 1)[0].strip().strip("'\"") or None
    return None


def _data_dir(root: Path, system: str) -> Path:
    data_dir = yaml_value(root, system, "data_dir")
    return root / data_dir if data_dir else root / "data" / system


@dataclass(frozen=True)
class MeasuredSource:
    """A systems root and where it came from: ``root`` (--measured-root), ``extra`` or ``vendored``."""

    kind: str
    root: Path

    def family_dir(self, system: str, family: str, backend: str) -> Path:
        return _data_dir(self.root, system) / family / backend

    def versions(self, system: str, family: str, backend: str) -> tuple[str, ...]:
        d = self.family_dir(system, family, backend)
        return tuple(sorted((p.name for p in d.iterdir() if p.is_dir()), key=_version_key)) if d.is_dir() else ()

    def version_of(self, system: str, family: str, backend: str, prefer: str | None = None) -> str | None:
        """``prefer`` when present, else the newest version that holds the family."""
        found = self.versions(system, family, backend)
        if prefer in found:
            return prefer
        return found[-1] if found else None

    def path(self, system: str, family: str, backend: str, name: str, version: str | None = None) -> Path | None:
        return _path(self, system, family, backend, name, version)

    def _path(self, system: str, family: str, backend: str, name: str, version: str | None) -> Path | None:
        version = self.version_of(system, family, backend, version)
        if version is None:
            return None
        base = self.family_dir(system, family, backend) / version / name
        for suffix in SUFFIXES:
            if Path(str(base) + suffix).is_file():
                return Path(str(base) + suffix)
        return None

    def table(self, system: str, family: str, backend: str, name: str, version: str | None = None
              ) -> MeasuredTable | None:
        """The table, or None when this root has no such file (a miss the caller reports)."""
        p = self.path(system, family, backend, name, version)
        return None if p is None else _load(str(p))


@cached(1024, resource=True)  # where a table's file is: looked up once per process, as it is read once
def _path(source: MeasuredSource, system: str, family: str, backend: str, name: str, version: str | None
          ) -> Path | None:
    return source._path(system, family, backend, name, version)


def _version_key(v: str) -> tuple:
    return tuple((0, int(x)) if x.isdigit() else (1, x) for x in v.replace("-", ".").split("."))





def _load(path: str) -> MeasuredTable:
    read = kept(_load)  # files read in this session, by path (a resource: kept when caching is off)
    if path not in read:
        raw = Path(path).read_bytes()
        sha = hashlib.sha256(raw).hexdigest()
        cols = _read_parquet(Path(path)) if path.endswith(".parquet") else _read_csv(raw, path.endswith(".gz"))
        read[path] = MeasuredTable(path, sha, cols)
    return read[path]


def extra_root() -> Path | None:
    """The ``systems`` folder of an installed aiconfigurator-core, found without importing it."""
    spec = importlib.util.find_spec(EXTRA)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        systems = Path(location) / "systems"
        if (systems / "data").is_dir():
            return systems
    return None


def find_source(measured_root: str | Path | None = None) -> MeasuredSource:
    """The systems root OP mode reads: ``measured_root``, else the extra, else the vendored slice."""
    if measured_root is not None:
        root = Path(measured_root)
        if (root / "systems" / "data").is_dir():
            root = root / "systems"
        if not (root / "data").is_dir():
            raise CostError(f"--measured-root {str(measured_root)!r}: expected the aiconfigurator layout "
                            "(<root>/data/<system>/<family>/<backend>/<version>/<table>.csv|parquet)")
        return MeasuredSource("root", root)
    extra = extra_root()
    if extra is not None:
        return MeasuredSource("extra", extra)
    return MeasuredSource("vendored", VENDORED)
