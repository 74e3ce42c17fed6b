"""Pareto frontiers of sweep rows: the points no other point beats on both axes.

A row is on the frontier of (``x``, ``y``) — both maximised, by default tokens/s per GPU and
tokens/s per user — when no eligible row has x and y at least as large and one of them larger.
Eligible rows are valid (or, without ``require_fit``, invalid only because they do not fit), have
both figures and meet ``ttft_max`` / ``itl_max`` (seconds); a row whose fit is unknown is kept and
the note says so.

>>> rows = [{"valid": True, "a": 1, "b": 5}, {"valid": True, "a": 2, "b": 4},
...         {"valid": True, "a": 1, "b": 4}, {"valid": True, "a": 3, "b": 1}]
>>> pareto_flags(rows, x="a", y="b")[0]
[True, True, False, True]
"""

from __future__ import annotations

from typing import Any, Sequence


def _eligible(row: dict[str, Any], x: str, y: str, ttft_max, itl_max, require_fit: bool) -> bool:
    # a row invalid only because it does not fit still has its figures: ranked when fit is not required
    usable = row.get("valid") or (not require_fit and row.get("fits") is False)
    if not usable or row.get(x) is None or row.get(y) is None:
        return False
    if ttft_max is not None and (row.get("ttft_s") is None or row["ttft_s"] > ttft_max):
        return False
    if itl_max is not None and (row.get("itl_s") is None or row["itl_s"] > itl_max):
        return False
    return not (require_fit and row.get("fits") is False)


def pareto_flags(rows: Sequence[dict[str, Any]], *, x: str = "tok_s_per_gpu", y: str = "tok_s_per_user",
                 ttft_max: float | None = None, itl_max: float | None = None,
                 require_fit: bool = True) -> tuple[list[bool], str]:
    """One flag per row (on the frontier or not) and a note on what limited the frontier."""
    keep = [i for i, r in enumerate(rows) if _eligible(r, x, y, ttft_max, itl_max, require_fit)]
    # best x first, then best y: a row is dominated iff an earlier row (larger x, or equal x and
    # larger y) has y >= its own, with one of the two strictly larger
    order = sorted(keep, key=lambda i: (-rows[i][x], -rows[i][y], i))
    flags = [False] * len(rows)
    best_y = None
    best_at_x: dict[Any, Any] = {}
    for i in order:
        xv, yv = rows[i][x], rows[i][y]
        dominated = best_y is not None and yv < best_y or (
            best_y is not None and yv == best_y and best_at_x.get("x") != xv)
        if not dominated:
            flags[i] = True
        if best_y is None or yv > best_y:
            best_y, best_at_x = yv, {"x": xv}
    notes = []
    missing = sum(1 for r in rows if r.get("valid") and (r.get(x) is None or r.get(y) is None))
    if missing:
        notes.append(f"{missing} valid rows lack {x} or {y} and are not ranked")
    unknown_fit = sum(1 for i in keep if rows[i].get("fits") is None)
    if require_fit and unknown_fit:
        notes.append(f"{unknown_fit} ranked rows have an unknown fit (not excluded)")
    return flags, "; ".join(notes)
