"""Units for the eye, each formatted in one place: bytes with a binary unit, durations, milliseconds."""

from __future__ import annotations

from ..model.formats import GIB, MIB


def human_bytes(n: int | float) -> str:
    """``1,234,567 B (1.18 MiB)``: exact bytes first, a binary unit for the eye."""
    unit = ("GiB", GIB) if abs(n) >= GIB else ("MiB", MIB) if abs(n) >= MIB else ("KiB", 1024)
    return f"{int(n):,} B ({n / unit[1]:.2f} {unit[0]})"


def fit_verdict(g: dict, short: bool = False) -> str:
    """The one "fits" verdict of a per-GPU memory record (``memory_per_gpu``): weights + cache against
    the budget (``model/gpu_memory.py``); ``short``: a table cell.

    >>> fit_verdict({"fits": False, "static_bytes": 128_900_000_000, "budget_bytes": 126_900_000_000,
    ...              "shortfall_bytes": 2_000_000_000, "capacity_bytes": 141_000_000_000}, short=True)
    'no (2,000,000,000 B (1.86 GiB) over the 90 % budget)'
    """
    share = round(100 * g["budget_bytes"] / g["capacity_bytes"])
    if short:
        return "yes" if g["fits"] else f"no ({human_bytes(g['shortfall_bytes'])} over the {share} % budget)"
    head = "fits" if g["fits"] else f"does NOT fit: {human_bytes(g['shortfall_bytes'])} over the budget"
    return (f"{head} (weights + cache {human_bytes(g['static_bytes'])} of {human_bytes(g['budget_bytes'])}, "
            f"{share} % of HBM)")


def seconds(s: float | None) -> str:
    """A duration for the eye: ``12.345 ms``, ``4.2 µs``; ``-`` for none."""
    if s is None:
        return "-"
    if s == 0:
        return "0 s"
    if s >= 1:
        return f"{s:,.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.3f} ms"
    return f"{s * 1e6:,.3f} µs"


def ms(seconds: float, spec: str = ",.3f") -> str:
    """Seconds as milliseconds, ``spec`` the number's format: ``ms(0.0123)`` is ``'12.300 ms'``.

    >>> ms(0.0123), ms(0.0123, ",.2f"), ms(0.0123, ".4g")
    ('12.300 ms', '12.30 ms', '12.3 ms')
    """
    return f"{seconds * 1e3:{spec}} ms"


def ms_or_dash(seconds: float | None, spec: str = ",.1f") -> str:
    """:func:`ms`, or ``—`` where there is no figure (a mode with no pick, a simulation not run).

    >>> ms_or_dash(0.0451), ms_or_dash(None)
    ('45.1 ms', '—')
    """
    return "—" if seconds is None else ms(seconds, spec)


def times(ratio: float | None) -> str:
    """A ratio for the eye: ``3.28×``; ``—`` for none (no SOL figure to divide by)."""
    return "—" if ratio is None else f"{ratio:.2f}×"


def beside_sol(forecast: str, sol: str, ratio: float | None) -> str:
    """A forecast beside its SOL ceiling, as every serving answer off SOL states it.

    >>> beside_sol("31.2 ms", "9.5 ms", 3.284)
    '31.2 ms · SOL 9.5 ms · 3.28×'
    """
    return f"{forecast} · SOL {sol} · {times(ratio)}"
