"""A sweep's rows and what users do with them: CSV, JSON lines, Parquet, DataFrames, notebook
display and the Pareto frontier. The writers are deterministic: equal rows give equal bytes.

>>> r = SweepResult(({"model": "m", "ttft_s": 0.5, "valid": True, "reason": ""},),
...                 ("model", "ttft_s", "valid", "reason"))
>>> r.to_csv()
'model,ttft_s,valid,reason\\nm,0.5,true,\\n'
>>> len(repr(r)) <= 300
True
"""

from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...errors import V41Error
from ..pareto import pareto_flags

#: columns of a sweep row, in output order
COLUMNS = ("model", "hardware", "checkpoint", "tp", "ep", "dp", "batch", "prompt", "context", "chunk", "replay",
           "restore", "fusion", "engram", "dspark", "cost_mode", "valid", "reason", "ttft_s", "itl_s", "tok_s_per_user",
           "tok_s_per_gpu", "gpus", "per_gpu_memory_gib", "prefill_memory_gib", "decode_memory_gib",
           "static_memory_gib", "budget_gib", "fits", "fit_note", "prefill_bound", "decode_bound", "coverage", "method",
           "sol_ttft_s", "sol_itl_s", "ttft_over_sol", "itl_over_sol", "pareto")
_SUMMARY = ("model", "hardware", "tp", "ep", "batch", "prompt", "replay", "ttft_s", "itl_s", "tok_s_per_user",
            "valid")


#: the columns a CSV sweep file holds as numbers (read back by :func:`read_sweep`)
_NUMERIC = {"tp", "ep", "dp", "batch", "prompt", "context", "gpus", "ttft_s", "itl_s", "tok_s_per_user",
            "tok_s_per_gpu", "per_gpu_memory_gib", "coverage"}


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # shortest round-trip text: the same float always prints the same
    return str(v)


@dataclass(frozen=True)
class SweepResult:
    """Rows of a sweep (dicts over :data:`COLUMNS`), in grid order; ``note`` explains gaps;
    ``deployments`` the auto mappings' records (``sweep(auto_mapping=True)``; empty when the grid named them)."""

    rows: tuple[dict[str, Any], ...]
    columns: tuple[str, ...] = COLUMNS
    note: str = ""
    deployments: tuple[dict[str, Any], ...] = ()

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        valid = sum(1 for r in self.rows if r.get("valid"))
        text = f"SweepResult({len(self.rows)} rows, {valid} valid, {len(self.columns)} columns"
        if any(r.get("pareto") for r in self.rows):
            text += f", {sum(1 for r in self.rows if r.get('pareto'))} on the Pareto frontier"
        return (text + ")")[:300]

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per row, every column present (``None`` where a figure is absent)."""
        return [{c: r.get(c) for c in self.columns} for r in self.rows]

    def to_pandas(self):
        """A ``pandas.DataFrame`` of :meth:`to_records` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise V41Error("to_pandas: needs pandas (pip install pandas); to_records() works without it") from None
        return pd.DataFrame(self.to_records(), columns=list(self.columns))

    def to_csv(self, path: str | Path | None = None) -> str:
        """CSV text (written to ``path`` when given): a header, then one line per row."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(self.columns)
        for r in self.rows:
            w.writerow([_cell(r.get(c)) for c in self.columns])
        return _written(buf.getvalue(), path)

    def to_jsonl(self, path: str | Path | None = None) -> str:
        """JSON lines: one object per row, keys in column order."""
        text = "".join(json.dumps(r) + "\n" for r in self.to_records())
        return _written(text, path)

    def to_parquet(self, path: str | Path) -> str:
        """Write a Parquet file (needs pyarrow, e.g. ``pip install pyarrow``)."""
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise V41Error("sweep parquet: needs pyarrow (pip install pyarrow); use .csv or .jsonl") from None
        records = self.to_records()
        table = pa.table({c: [r[c] for r in records] for c in self.columns})
        pq.write_table(table, str(path))
        return f"wrote {len(records)} rows to {path}"

    def write(self, path: str | Path) -> str:
        """Write by suffix: ``.csv``, ``.jsonl`` or ``.parquet``; returns a one-line message."""
        suffix = Path(path).suffix.lower()
        if suffix == ".csv":
            self.to_csv(path)
        elif suffix in (".jsonl", ".ndjson"):
            self.to_jsonl(path)
        elif suffix == ".parquet":
            return self.to_parquet(path)
        else:
            raise V41Error(f"sweep output: unsupported suffix {suffix or '(none)'!r} in {str(path)!r} "
                           "(use .csv, .jsonl or .parquet)")
        return f"wrote {len(self.rows)} rows to {path}"

    def with_pareto(self, *, ttft_max: float | None = None, itl_max: float | None = None,
                    require_fit: bool = True, x: str = "tok_s_per_gpu", y: str = "tok_s_per_user") -> "SweepResult":
        """The rows with ``pareto`` set: on the (``x``, ``y``) frontier under the constraints."""
        flags, note = pareto_flags(self.rows, x=x, y=y, ttft_max=ttft_max, itl_max=itl_max, require_fit=require_fit)
        rows = tuple({**r, "pareto": f} for r, f in zip(self.rows, flags))
        return replace(self, rows=rows, note="; ".join(n for n in (self.note, note) if n))

    def _repr_html_(self) -> str:
        """A compact table: the first 20 rows of the main columns."""
        head = "".join(f"<th>{c}</th>" for c in _SUMMARY)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_short(r.get(c)))}</td>" for c in _SUMMARY) + "</tr>"
                       for r in self.rows[:20])
        more = f"<p>… {len(self.rows) - 20} more rows</p>" if len(self.rows) > 20 else ""
        return f"<p>{html.escape(repr(self))}</p><table><tr>{head}</tr>{body}</table>{more}"

    def plot_pareto(self, path: str | Path, **kwargs) -> str:
        """Moved: ``v41graph.render.plots.plot_pareto(result, path)`` draws a result (a renderer
        takes the analysis' result; analysis never imports render)."""
        raise AttributeError("SweepResult.plot_pareto moved: use v41graph.render.plots.plot_pareto(result, path)")


def _short(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else _cell(v)


def _written(text: str, path: str | Path | None) -> str:
    if path is not None:
        Path(path).write_bytes(text.encode("utf-8"))
    return text


def read_sweep(path: str) -> SweepResult:
    """A sweep written as JSON lines or CSV (``sweep -o``), read back with numbers and flags typed
    (``plot pareto --input``).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "s.csv")
    >>> _ = SweepResult(({"model": "m", "tp": 8, "ttft_s": 0.5, "valid": True, "reason": ""},),
    ...                 ("model", "tp", "ttft_s", "valid", "reason")).write(path)
    >>> read_sweep(path).rows
    ({'model': 'm', 'tp': 8.0, 'ttft_s': 0.5, 'valid': True, 'reason': None},)
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:  # a folder or a missing file, named as the option that gave it
        raise V41Error(f"plot pareto --input: cannot read {path!r}: {exc.strerror or exc}") from None
    if path.endswith((".jsonl", ".ndjson")):
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    elif path.endswith(".csv"):
        rows = []
        for raw in csv.DictReader(text.splitlines()):
            row: dict = {}
            for k, v in raw.items():
                row[k] = None if v == "" else v == "true" if v in ("true", "false") else \
                    float(v) if k in _NUMERIC else v
            rows.append(row)
    else:
        raise V41Error(f"plot pareto --input: expected a .csv or .jsonl sweep file, got {path!r}")
    return SweepResult(tuple(rows), COLUMNS)
