"""``sweep``'s answer, typed: the rows with the basis of each cost mode they were priced under, what was
written, and the deployments the auto mapping picked; ``to_json()`` is ``sweep --json``.

>>> from v41graph.analysis.sweep.sweep_result import SweepResult
>>> rows = [{"hardware": "h200_sxm", "cost_mode": "hybrid", "itl_s": 0.01}, {"hardware": "my_gpu", "itl_s": 0.02}]
>>> [(b["mode"], b["why"]) for b in sweep_bases(SweepResult(rows), default=True)]
[('hybrid', 'measured kernel tables cover h200_sxm'), ('sol', 'no measured kernel tables for my_gpu')]
>>> times_note(SweepResult(rows[1:]))
'SOL figures'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..answer import TypedAnswer, part
from ..basis import basis_record, default_why
from .sweep_result import SweepResult


def _mode(row: dict[str, Any]) -> str:
    return row.get("cost_mode") or "sol"


def sweep_bases(result: SweepResult, default: bool) -> list[dict[str, Any]]:
    """The basis of each cost mode the rows were priced under (a sweep may span several); ``default``: no
    cost mode was given, so each is the serving default of the rows' GPUs, said with why."""
    out = []
    for m in sorted({_mode(r) for r in result.rows}):
        gpus = ", ".join(sorted({r["hardware"] for r in result.rows if _mode(r) == m}))
        out.append(basis_record(m, chosen="default", why=default_why(m, gpus)) if default else basis_record(m))
    return out


def times_note(result: SweepResult) -> str:
    """What the table's times are: their basis, and off SOL where the ceiling is."""
    modes = sorted({_mode(r) for r in result.rows if r.get("itl_s") is not None})
    if not modes:
        return "no figures"
    if modes == ["sol"]:
        return "SOL figures"
    return (f"{' and '.join(modes)} figures (forecasts); itl_over_sol: ITL over the same point's SOL ITL "
            "(sol_ttft_s, sol_itl_s in --json and files)")


def run_sweep(axes: dict[str, Any], *, zip: Sequence[str] = (), scheduler: str | None = None,  # noqa: A002
              workers: int | None = None, quiet: bool = False, fp4_on_hopper: bool = False, pareto: bool = False,
              ttft_max: float | None = None, itl_max: float | None = None, require_fit: bool = True) -> SweepResult:
    """``sweep``: the grid of ``axes`` (an axis whose value is None was not given and takes its default), on a Dask
    cluster at ``scheduler`` or ``workers`` local processes, without a progress bar when ``quiet``. With no
    ``tp``, ``ep`` or ``dp`` axis given each point runs on the smallest mapping that fits, as ``cost`` picks it;
    ``pareto`` marks the frontier under ``ttft_max``, ``itl_max`` and (``require_fit``) the fit.

    >>> r = run_sweep({"prompt": [1024], "batch": None}, workers=1, quiet=True)
    >>> len(r.rows), r.rows[0]["prompt"], [d["line"] for d in r.deployments]
    (1, 1024, ['8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)'])
    """
    from .sweep_grid import sweep
    given = {name: values for name, values in axes.items() if values is not None}
    auto = not {"tp", "ep", "dp"} & set(given)  # no mapping given: each point on the smallest that fits, as cost
    result = sweep(zip=zip, executor=scheduler or "local", workers=workers, progress=False if quiet else None,
                   fp4_on_hopper=fp4_on_hopper, auto_mapping=auto, **given)
    if pareto:
        result = result.with_pareto(ttft_max=ttft_max, itl_max=itl_max, require_fit=require_fit)
    return result


def _deployments(records: tuple) -> dict[str, Any]:
    """One deployment as ``deployment`` (the same shape as every command's), several as ``deployments``."""
    if len(records) > 1:
        return {"deployments": list(records)}
    return {"deployment": records[0]} if records else {}


@dataclass(frozen=True)
class SweepAnswer(TypedAnswer):
    """``sweep --json``: the rows, the sweep's note, the file written (its message) and the page, the basis of
    each cost mode (:func:`sweep_bases`) and the auto mapping's deployments."""

    rows: list = part(default_factory=list)
    note: str | None = None
    written: str | None = None
    page: str | None = None
    basis: list = part(default_factory=list)
    deployments: tuple = part(inline=True, as_json=_deployments, default=())


def sweep_answer(result: SweepResult, *, default_basis: bool, written: str | None = None,
                 page: str | None = None) -> SweepAnswer:
    """The answer of ``result`` (``default_basis``: no cost mode was given; ``written``: what writing the rows
    said; ``page``: the page's path)."""
    return SweepAnswer(result.to_records(), result.note, written, page, sweep_bases(result, default_basis),
                       tuple(result.deployments))


__all__ = ["SweepAnswer", "run_sweep", "sweep_answer", "sweep_bases", "times_note"]
