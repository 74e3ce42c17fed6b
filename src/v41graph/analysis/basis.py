"""What a printed time is: its basis (SOL, hybrid, OP or FPM), in one header line and a JSON record.

* **SOL** is a lower bound: every op at the GPU's peak compute, HBM or link bandwidth, whichever
  binds; :data:`SOL_CAVEAT` names what it leaves out.
* **hybrid** is measured kernel tables where they apply, the allowed transfers next, SOL last; its
  *coverage* is the share of node time a table measured or interpolated.
* **OP** is measured tables only (strict: a miss is an error).
* **FPM** is a whole-forward measured table under one identity (engine, GPU, mapping, …).
* **runtime** is each step's kernels (SOL) plus the engine's own cost per forward, fitted to a
  whole-forward table of the GPU (``analysis/forwards/runtime_basis.py``): a forecast of any shape, with its
  fit error and the steps it extrapolated.

Serving answers take the most realistic basis that covers the plan (:func:`serving_default`), and
where that is not SOL they put the SOL figure beside the forecast as a ratio (:func:`ceiling_ratio`).

>>> basis_line(basis_record("sol"))
'SOL: lower bound — no kernel-launch, collective-latency or scheduler overhead; every op at peak compute or bandwidth'
>>> basis_line(basis_record("hybrid", coverage={"measured_or_interpolated": 0.2726}))
'hybrid: measured kernel tables, then transfers, then SOL — 27.3 % of node time measured or interpolated'
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..costs.measured.tiers import MODES, TRANSFERS, CostMode

#: the one-line caveat of every SOL figure
SOL_CAVEAT = "no kernel-launch, collective-latency or scheduler overhead; every op at peak compute or bandwidth"
_WHAT = {
    "sol": "SOL: lower bound",
    "hybrid": "hybrid: measured kernel tables, then transfers, then SOL",
    "op": "OP: measured kernel tables only (a miss is an error)",
    "fpm": "FPM: whole-forward measured table",
    "runtime": "runtime: kernels plus the engine's own cost per forward, fitted to a whole-forward table",
}
NAMES = {"sol": "SOL", "hybrid": "hybrid", "op": "OP", "fpm": "FPM", "runtime": "runtime"}


def basis_record(mode: str, *, coverage: dict | None = None, identity: Any = None,
                 chosen: str = "--cost", why: str | None = None) -> dict[str, Any]:
    """JSON-ready basis of a figure: ``{"name", "mode", "chosen", "caveat" | "coverage" | "identity", "why"}``.

    ``chosen``: ``--cost`` when the user named it, ``default`` when the command picked it; ``why``: what
    made the default this basis (:func:`serving_default`), when the command picked it."""
    out: dict[str, Any] = {"name": NAMES[mode], "mode": mode, "chosen": chosen}
    if why is not None:
        out["why"] = why
    if mode == "sol":
        out["caveat"] = SOL_CAVEAT
    if mode in ("hybrid", "op") and coverage is not None:
        out["coverage"] = {k: coverage[k] for k in ("measured_or_interpolated", "critical_measured_or_interpolated")
                           if k in coverage} or {"measured_or_interpolated": None}
    if mode in ("fpm", "runtime"):
        out["identity"] = identity
    return out


def basis_line(record: dict[str, Any]) -> str:
    """The header line that says what every time below is."""
    mode = record["mode"]
    line = _WHAT[mode]
    if mode == "sol":
        line += f" — {SOL_CAVEAT}"
    share = (record.get("coverage") or {}).get("measured_or_interpolated")
    if share is not None:
        line += f" — {share * 100:.1f} % of node time measured or interpolated"
    line += _thin_coverage((record.get("coverage") or {}).get("critical_measured_or_interpolated"))
    if mode in ("fpm", "runtime") and record.get("identity"):
        line += f" — {'identity' if mode == 'fpm' else 'fitted to'} {record['identity']}"
    if record.get("chosen") == "default":
        why = f" — {record['why']}" if record.get("why") else ""
        line += f" (default for serving answers: the most realistic basis that covers the plan{why}; --cost overrides)"
    return line


def _thin_coverage(critical: float | None) -> str:
    """Coverage first: said on the basis line when under half of the critical path is measured or interpolated.

    >>> _thin_coverage(0.125)
    ' — only 12.5% of the critical path measured or interpolated (the rest transferred or SOL: coverage below)'
    """
    if critical is None or critical >= 0.5:
        return ""
    return (f" — only {critical:.1%} of the critical path measured or interpolated (the rest transferred or SOL: "
            "coverage below)")


def serving_default(hybrid_available: bool, fpm_covers: bool = False, runtime_covers: bool = False) -> str:
    """The basis a serving answer takes when ``--cost`` is not given, the most measured that covers it:
    FPM where an admitted table covers the plan, else the runtime basis where a whole-forward table of
    the plan's GPU and mapping exists to fit it to, else hybrid where measured kernel tables exist for
    the hardware, else SOL.

    >>> serving_default(True), serving_default(False), serving_default(True, fpm_covers=True)
    ('hybrid', 'sol', 'fpm')
    >>> serving_default(True, runtime_covers=True), serving_default(True, True, runtime_covers=True)
    ('runtime', 'fpm')
    """
    return "fpm" if fpm_covers else "runtime" if runtime_covers else "hybrid" if hybrid_available else "sol"


def tables_cover(hardware_name: str, measured_root=None) -> bool:
    """Whether the measured kernel tables (``measured_root``, else the extra, else the packaged slice) hold
    SGLang GEMM rows for ``hardware_name`` — what makes hybrid the default of a serving answer there.

    >>> tables_cover("h200_sxm"), tables_cover("my_gpu")
    (True, False)
    """
    from ..costs.measured.layout import find_source
    return find_source(measured_root).version_of(hardware_name, "gemm", "sglang") is not None


def ceiling_ratio(forecast: float | None, sol: float | None) -> float | None:
    """Forecast over SOL: how far above its lower bound (a time) or below its ceiling (a rate) a forecast is.

    >>> ceiling_ratio(0.0312, 0.0095), ceiling_ratio(None, 1.0), ceiling_ratio(1.0, 0.0)
    (3.2842105263157895, None, None)
    """
    return None if forecast is None or not sol else forecast / sol


def default_why(mode: str, hardware_name: str, runtime_table: str | None = None) -> str:
    """Why the serving default is ``mode`` on ``hardware_name`` (several GPUs: their names joined), as the
    basis record's ``why`` says it (:func:`serving_default`).

    >>> default_why("hybrid", "h200_sxm, gb300"), default_why("sol", "my_gpu")
    ('measured kernel tables cover h200_sxm, gb300', 'no measured kernel tables for my_gpu')
    """
    return {"fpm": "an admitted whole-forward table covers it",
            "runtime": f"a whole-forward table of this GPU and mapping exists ({runtime_table}) and no FPM table is "
                       "admitted",
            "hybrid": f"measured kernel tables cover {hardware_name}",
            "sol": f"no measured kernel tables for {hardware_name}"}[mode]


class ServingBasis(NamedTuple):
    """What a serving answer is priced on: the basis, the graph cost mode (None under FPM and runtime, which
    bring their own step coster), how it was chosen (``--cost`` or ``default``) and, for a default, why."""

    basis: str
    mode: CostMode | None
    chosen: str
    why: str | None = None


def serving_basis(cost: str | None, hardware_name: str, *, transfers=TRANSFERS, measured_root=None,
                  fpm_covers: bool = False, runtime_table: str | None = None) -> ServingBasis:
    """The basis of a serving answer (:class:`ServingBasis`): ``cost`` when given (``--cost``), else the
    default (:func:`serving_default`).

    ``fpm_covers``: an admitted whole-forward table covers the plan; ``runtime_table``: the name of a
    whole-forward table of the plan's GPU and mapping the runtime basis can be fitted to (the caller
    knows which tables it takes). Without ``cost`` the default is then FPM, else runtime, else
    hybrid wherever the measured kernel tables cover the hardware, else SOL; ``transfers`` and
    ``measured_root``: the hybrid mode's.

    >>> serving_basis(None, "my_gpu")
    ServingBasis(basis='sol', mode=CostMode(mode='sol', transfers=('dtype', 'shape', 'op'), measured_root=None), \
chosen='default', why='no measured kernel tables for my_gpu')
    >>> serving_basis("fpm", "gb300")
    ServingBasis(basis='fpm', mode=None, chosen='--cost', why=None)
    """
    if cost is not None:
        return ServingBasis(cost, None if cost not in MODES else CostMode(cost, tuple(transfers), measured_root),
                            "--cost")
    # the measured lookup only when it can decide
    tables = not fpm_covers and runtime_table is None and tables_cover(hardware_name, measured_root)
    mode = serving_default(tables, fpm_covers, runtime_table is not None)
    why = default_why(mode, hardware_name, runtime_table)
    graph_mode = None if mode in ("fpm", "runtime") else CostMode(mode, tuple(transfers), measured_root)
    return ServingBasis(mode, graph_mode, "default", why)
