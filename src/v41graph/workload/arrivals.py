"""Arrivals a serving simulation reads: one request's arrival, Poisson arrivals, a CSV trace.

>>> [round(a.t, 3) for a in poisson_arrivals(2.0, 2.0, 16, 4, seed=1)]
[0.537, 0.691]
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import CostError


@dataclass(frozen=True)
class Arrival:
    """One request: arrival time (s), prompt and output tokens, and its prefix hit (tokens, SWA
    kept or not, the tier its global KV waits in)."""

    t: float
    prompt: int
    output: int
    hit: int = 0
    swa_cached: bool = True
    tier: str = "hbm"

    def __post_init__(self):
        if not self.t >= 0 or self.prompt < 1 or self.output < 1 or not 0 <= self.hit < self.prompt:
            raise CostError(f"arrival: need t >= 0, prompt >= 1, output >= 1 and 0 <= hit < prompt, got {self!r}")



def poisson_arrivals(rate: float, duration: float, prompt: int, output: int, seed: int) -> list[Arrival]:
    """Poisson arrivals at ``rate``/s over [0, duration), from numpy's seeded generator.
    """
    if not rate > 0 or not duration > 0:
        raise CostError(f"arrivals: rate and duration must be > 0, got rate {rate!r}, duration {duration!r}")
    rng, t, out = np.random.default_rng(seed), 0.0, []
    while True:
        t += float(rng.exponential(1.0 / rate))
        if t >= duration:
            return out
        out.append(Arrival(t, prompt, output))


_TRACE_COLUMNS = ("t", "prompt", "output", "hit", "swa_cached", "tier")


def read_trace(path: str | Path) -> list[Arrival]:
    """A CSV trace with a header ``t,prompt,output[,hit,swa_cached,tier]``, one request a row."""
    origin = f"trace file {str(path)!r}"
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise CostError(f"{origin}: cannot read: {exc.strerror or exc}") from None
    out = []
    for i, row in enumerate(rows, start=2):
        extra = sorted(set(row) - set(_TRACE_COLUMNS))
        if extra or None in row:
            raise CostError(f"{origin} line {i}: unknown column {extra[:1] or 'beyond the header'} "
                            f"(known: {', '.join(_TRACE_COLUMNS)})")
        try:
            out.append(Arrival(float(row["t"]), int(row["prompt"]), int(row["output"]), int(row.get("hit") or 0),
                               (row.get("swa_cached") or "1") not in ("0", "false", "False"),
                               row.get("tier") or "hbm"))
        except (KeyError, TypeError, ValueError) as exc:
            raise CostError(f"{origin} line {i}: {exc}") from None
    if not out:
        raise CostError(f"{origin}: no requests")
    return out
