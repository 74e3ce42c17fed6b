"""Choosing the estimator by evidence: leave-one-out over the calibration points, per phase.

Every measured point is held out in turn and each candidate of :mod:`.estimators` predicts it
from the rest of the table, through :func:`.predict.predict` — so the measured domain, and the
points a candidate may answer, are the same for all. Points outside the domain once held out
(an edge of the grid) are answered by no candidate and scored by none. Within each phase the
candidate with the lowest MAPE is chosen; ties (to 1e-9 %) go to the earlier (simpler) candidate. The
``sol ratio`` candidate competes only when a SOL reference is given.

Selection and scoring use the same points, so the chosen candidate's error is an optimistic
estimate of its error on new points; a holdout (``fpm evaluate --holdout``) is the honest check.

The choice is memoised per table content (name, identity, every point, source, note) and SOL reference
(:func:`~v41graph.analysis.forwards.fpm_reference.sol_reference` gives each reference a ``key``: identity, model,
hardware, cost mode), in the shape memos of :mod:`v41graph.ir.shapes` (``V41GRAPH_NO_CACHE`` and
``clear_caches`` apply): a second ``fpm predict`` on the same table does not redo the leave-one-out. A
reference without a ``key`` (a caller's own function) is never memoised: its values are unknown.

>>> from v41graph.costs.fpm.load import load_table
>>> s = choose(load_table("aisimulate-gb200-calibration-v1"))
>>> s.chosen
{'prefill': 'robust fit', 'decode': 'interpolation'}
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ...ir.shapes import Memo
from .estimators import CANDIDATES
from .evaluate import Errors
from .predict import Query, Reference, predict, read_once
from .table import PHASES, FpmTable, Point, TableError


@dataclass(frozen=True)
class Selection:
    """Each candidate's leave-one-out errors per phase and overall, and the choice per phase."""

    table: str
    candidates: tuple[str, ...]
    held_out: int  # measured points held out in turn
    scored: dict[str, int]  # phase -> held-out points inside the domain (what every candidate answers)
    errors: dict[str, dict[str, Errors]]  # phase -> candidate -> errors
    overall: dict[str, Errors]  # candidate -> errors over every scored point
    chosen: dict[str, str]  # phase -> candidate
    combined: Errors  # the chosen candidate of each phase, over every scored point
    why: dict[str, str]  # phase -> a sentence

    def to_dict(self) -> dict:
        return {"table": self.table, "method": "leave-one-out", "candidates": list(self.candidates),
                "held_out": self.held_out, "scored": dict(self.scored),
                "errors": {ph: {c: e.to_dict() for c, e in d.items()} for ph, d in self.errors.items()},
                "overall": {c: e.to_dict() for c, e in self.overall.items()},
                "chosen": dict(self.chosen), "combined": self.combined.to_dict(), "why": dict(self.why)}


def loo_pairs(table: FpmTable, candidates, sol: Reference | None = None) -> dict[str, list[tuple[Point, float]]]:
    """candidate -> [(held-out point, its prediction)] over the points inside the domain."""
    measured = [p for p in table.points if not p.failure]
    out: dict[str, list[tuple[Point, float]]] = {c: [] for c in candidates}
    sol = read_once(sol)
    for point in measured:
        rest = [p for p in table.points if p is not point]
        for c in candidates:
            a = predict(table, Query.of(point), allow_unadmitted=True, points=rest, estimator=c, sol=sol)
            if a.predicted_ms is not None:
                out[c].append((point, a.predicted_ms))
    return out


#: the choice of each (table, SOL reference) seen; a leave-one-out takes seconds, a lookup nothing
_CHOICES = Memo("fpm estimator choices", 16)


def _choice_key(table: FpmTable, sol: Reference | None):
    """Everything the choice depends on, or None (not memoised): the whole table by content, and the SOL
    reference's own key (what its values depend on) when it has one."""
    sol_key = None if sol is None else getattr(sol, "key", None)
    if sol is not None and sol_key is None:
        return None
    key = (table, sol_key)
    try:
        hash(key)
    except TypeError:  # an unhashable part (a hardware or model given as a dict): compute afresh
        return None
    return key


def choose(table: FpmTable, sol: Reference | None = None) -> Selection:
    """Score every candidate by leave-one-out and choose one per phase (see the module docstring);
    memoised per table content and SOL reference key (a copy is returned: callers may change it)."""
    key = _choice_key(table, sol)
    hit = None if key is None else _CHOICES.get(key)
    if hit is None:
        hit = _choose(table, sol)
        if key is not None:
            _CHOICES.put(key, hit)
    return copy.deepcopy(hit)


def _choose(table: FpmTable, sol: Reference | None) -> Selection:
    candidates = tuple(c for c in CANDIDATES if c != "sol ratio" or sol is not None)
    measured = [p for p in table.points if not p.failure]
    if len(measured) < 2:
        raise TableError(f"fpm select: table {table.name!r} has {len(measured)} measured points; need at least 2")
    pairs = loo_pairs(table, candidates, sol)
    # the points every candidate answered (the domain is shared, so this is each one's set)
    common = set.intersection(*({p.key for p, _ in pairs[c]} for c in candidates))
    errors: dict[str, dict[str, Errors]] = {}
    chosen: dict[str, str] = {}
    why: dict[str, str] = {}
    scored: dict[str, int] = {}
    for phase in PHASES:
        per = {c: Errors.of((v, p.observed_ms) for p, v in pairs[c] if p.phase == phase and p.key in common)
               for c in candidates}
        if not per[candidates[0]].count:
            continue
        errors[phase], scored[phase] = per, per[candidates[0]].count
        rank = {c: (round(per[c].mape, 9), candidates.index(c)) for c in candidates}  # 1e-9 %: a tie
        best = min(candidates, key=rank.__getitem__)
        runner = min((c for c in candidates if c != best), key=rank.__getitem__)
        chosen[phase] = best
        why[phase] = (f"lowest leave-one-out MAPE on the {per[best].count} {phase} points every candidate "
                      f"answers: {per[best].mape:.3f}% (next: {runner} {per[runner].mape:.3f}%)")
    overall = {c: Errors.of((v, p.observed_ms) for p, v in pairs[c] if p.key in common) for c in candidates}
    combined = Errors.of((v, p.observed_ms) for ph, c in chosen.items() for p, v in pairs[c]
                         if p.phase == ph and p.key in common)
    return Selection(table.name, candidates, len(measured), scored, errors, overall, chosen, combined, why)


__all__ = ["Selection", "choose", "loo_pairs"]
