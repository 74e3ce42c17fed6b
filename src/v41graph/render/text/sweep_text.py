"""``sweep``'s terminal text: the rows as an aligned table under their basis and deployments, or the line saying
which file was written; the page of ``sweep --html`` takes its columns, cells and notes from here too.

>>> from v41graph.analysis.sweep.sweep_result import SweepResult
>>> rows = [{"model": "m", "hardware": "h200_sxm", "tp": 8, "ep": 8, "dp": 1, "gpus": 8, "batch": 1, "prompt": 1024,
...          "ttft_s": 0.12345, "itl_s": 0.0101, "tok_s_per_user": 99.0, "tok_s_per_gpu": 12.375, "fits": True,
...          "valid": False, "reason": "too big"}]
>>> print(sweep_text(SweepResult(tuple(rows))))
model  hardware  tp  ep  dp  gpus  batch  prompt  ttft_s  itl_s   tok_s_per_user  tok_s_per_gpu  fits  valid
m      h200_sxm  8   8   1   8     1      1024    0.1235  0.0101  99              12.38          yes   False
1 rows, 1 invalid (first: too big)
"""

from __future__ import annotations

from typing import Any, Sequence

from ...analysis.basis import basis_line
from ...analysis.sweep.sweep_answer import times_note
from ...analysis.sweep.sweep_grid import AXES
from ...analysis.sweep.sweep_result import SweepResult

#: columns the table always shows: the mapping with its GPU count, the batch and prompt; other axes
#: show when given or when they vary; then the figures, the fit (prefill / decode) and validity
_ALWAYS = ("model", "hardware", "tp", "ep", "dp", "gpus", "batch", "prompt")
_FIGURES = ("ttft_s", "itl_s", "tok_s_per_user", "tok_s_per_gpu", "fits", "valid")
#: shown after the figures when some row is a forecast: its ITL over the SOL ceiling
_CEILING = ("itl_over_sol",)
#: the line under the table saying what ``fits`` and ``ttft_s`` mean
FITS_NOTE = ("fits: weights + the decode batch's caches within 90 % of HBM (the rule deploy and cost use); "
             "ttft_s: one request's prompt prefilled in chunks of --chunk tokens; ")


def shown_columns(result: SweepResult, given: Sequence[str] = ()) -> tuple[str, ...]:
    """The table's columns: :data:`_ALWAYS`, every other axis given or varying, the figures, and
    ``pareto`` once the frontier was asked for."""
    axes = [a for a in AXES if a not in _ALWAYS and (a in given or len({r.get(a) for r in result.rows}) > 1)]
    pareto = ("pareto",) if any(r.get("pareto") is not None for r in result.rows) else ()
    ceiling = _CEILING if any(r.get("itl_over_sol") is not None for r in result.rows) else ()
    return (*_ALWAYS, *axes, *_FIGURES, *ceiling, *pareto)


def _fit(r) -> str:
    return "-" if r.get("fits") is None else "yes" if r["fits"] else "no"


def sweep_cell(r: dict[str, Any], c: str) -> str:
    """One cell of the table (and of the page): the fit in words, any other value formatted.

    >>> sweep_cell({"fits": False}, "fits"), sweep_cell({"itl_s": 0.012345}, "itl_s"), sweep_cell({}, "tp")
    ('no', '0.01235', '-')
    """
    return _fit(r) if c == "fits" else _fmt(r.get(c))


def sweep_text(result: SweepResult, given: Sequence[str] = ()) -> str:
    """The rows as an aligned table (``given``: the axes the user named, shown even when constant)."""
    shown = shown_columns(result, given)
    rows = [[sweep_cell(r, c) for c in shown] for r in result.rows]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(shown)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(shown, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in rows]
    invalid = [r for r in result.rows if not r.get("valid")]
    lines.append(f"{len(result.rows)} rows, {len(invalid)} invalid" + (f" (first: {invalid[0]['reason']})"
                                                                        if invalid else ""))
    notes = {r.get("fit_note") for r in result.rows if r.get("fit_note")}
    lines += [f"note: {n}" for n in sorted(notes)] + ([f"note: {result.note}"] if result.note else [])
    return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def page_notes(result: SweepResult, bases: Sequence[dict[str, Any]]) -> list[str]:
    """The notes of the sweep's page: the basis of each cost mode, then each deployment the auto mapping picked."""
    return [basis_line(b) for b in bases] + [f"deployment: {d['line']}" for d in result.deployments]


def sweep_screen(result: SweepResult, bases: Sequence[dict[str, Any]], given: Sequence[str] = (),
                 written: str | None = None) -> str:
    """``sweep``'s whole text: the basis lines (not when the rows went to a file, which carries ``cost_mode`` per
    row), the deployments as every command prints them, then the table with :data:`FITS_NOTE` and what its times
    are, or ``written`` (what writing the file said) with the count of valid rows."""
    out = "" if written else "\n".join(basis_line(b) for b in bases) + "\n"
    out += "".join(f"deployment: {d['line']}\n" for d in result.deployments)
    if written:
        valid = sum(1 for r in result.rows if r.get("valid"))
        return out + f"{written} ({valid} valid, {len(result.rows) - valid} invalid)\n"
    return out + sweep_text(result, given) + "\n" + FITS_NOTE + times_note(result) + "\n"


__all__ = ["FITS_NOTE", "page_notes", "shown_columns", "sweep_cell", "sweep_screen", "sweep_text"]
