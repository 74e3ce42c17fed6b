"""Arrivals a serving simulation reads: one request's arrival, Poisson arrivals, a CSV trace.

>>> [round(a.t, 3) for a in poisson_arrivals(2.0, 2.0, 16, 4, seed=1)]
[0.537, 0.691]
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..algebra import as_int
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
            raise CostError(f"arrival: need t >= 0, prompt >= 1, output >= 1 and 0 <= hit < prompt, got t {self.t!r}, "
                            f"prompt {self.prompt!r}, output {self.output!r}, hit {self.hit!r}")


#: what one run may simulate: requests per rate (rate × duration, expected) and output tokens in all
#: (each output token is a decode slot of some step). The defaults (2/s × 600 s × 256 tokens) are
#: 1,200 requests and 307,200 tokens; about 2,000 requests run in a second and a half.
MAX_ARRIVALS = 100_000
MAX_OUTPUT_TOKENS = 50_000_000


def check_workload(rate: float, duration: float, output: int) -> None:
    """Refuse, before any work, a Poisson workload too large to simulate (it would run for hours
    with memory growing per request): both limits are on expected figures, known up front.

    >>> check_workload(1e9, 600, 256)
    Traceback (most recent call last):
    ...
    v41graph.errors.CostError: simulate --rate 1e+09 × --duration 600 s: 6e+11 expected requests, over the limit ...
    """
    if not 0 < rate < float("inf") or not 0 < duration < float("inf"):
        raise CostError(f"simulate: --rate and --duration must be finite and > 0, got rate {rate!r}, "
                        f"duration {duration!r}")
    if as_int(output) is None or output < 1:
        raise CostError(f"simulate --output: must be an integer >= 1 token, got {output!r}")
    requests = rate * duration
    if requests > MAX_ARRIVALS:
        raise CostError(f"simulate --rate {rate:g} × --duration {duration:g} s: {requests:.3g} expected requests, "
                        f"over the limit of {MAX_ARRIVALS:,} per rate")
    if requests * output > MAX_OUTPUT_TOKENS:
        raise CostError(f"simulate --rate {rate:g} × --duration {duration:g} s × --output {output:,}: "
                        f"{requests * output:.3g} expected output tokens, over the limit of {MAX_OUTPUT_TOKENS:,}")


def poisson_arrivals(rate: float, duration: float, prompt: int, output: int, seed: int) -> list[Arrival]:
    """Poisson arrivals at ``rate``/s over [0, duration), from numpy's seeded generator."""
    check_workload(rate, duration, output)
    rng, t, out = np.random.default_rng(seed), 0.0, []
    while True:
        t += float(rng.exponential(1.0 / rate))
        if t >= duration:
            return out
        out.append(Arrival(t, prompt, output))


_TRACE_COLUMNS = ("t", "prompt", "output", "hit", "swa_cached", "tier")
#: the Azure LLM inference traces' header (arrived_at,num_prefill_tokens,num_decode_tokens), read as t,prompt,output
TRACE_ALIASES = {"arrived_at": "t", "num_prefill_tokens": "prompt", "num_decode_tokens": "output"}


def read_trace(path: str | Path) -> list[Arrival]:
    """A CSV trace with a header ``t,prompt,output[,hit,swa_cached,tier]`` (or the Azure traces'
    ``arrived_at,num_prefill_tokens,num_decode_tokens``), one request a row."""
    origin = f"trace file {str(path)!r}"
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise CostError(f"{origin}: cannot read: {exc.strerror or exc}") from None
    out = []
    for i, row in enumerate(rows, start=2):
        row = {TRACE_ALIASES.get(k, k): v for k, v in row.items()}
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
