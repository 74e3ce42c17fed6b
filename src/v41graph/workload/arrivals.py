"""Arrivals a serving simulation reads: one request's arrival, Poisson arrivals, a CSV trace.

>>> [round(a.t, 3) for a in poisson_arrivals(2.0, 2.0, 16, 4, seed=1)]
[0.537, 0.691]
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

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
    import numpy as np  # here, not at the top: the CLI's parser reads this module's limits for its --help
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

#: the most requests one ``simulate --trace`` (or ``deploy --trace``) replays, the same ceiling as a
#: Poisson workload's: the simulator's time and memory grow with the trace (its step log and every
#: token's time are kept). The Azure conv trace repeated to 100,000 rows replays in 27-40 s at 2.4 GB
#: peak RSS (hybrid, 8 × h200_sxm, 2 cores; 10,000 rows: 11 s, 0.6 GB; under SOL, whose shorter steps
#: are more numerous: 66 s, 4.2 GB). A larger trace is refused after reading this many rows plus one.
MAX_TRACE_REQUESTS = MAX_ARRIVALS


def _rows(path: str | Path, origin: str) -> Iterator[tuple[int, dict]]:
    """(line, row) pairs, read one at a time (never the whole file), headers' aliases applied."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            for i, row in enumerate(csv.DictReader(f), start=2):
                yield i, {TRACE_ALIASES.get(k, k): v for k, v in row.items()}
    except OSError as exc:
        raise CostError(f"{origin}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise CostError(f"{origin}: not a UTF-8 CSV file: {exc}") from None


def _time(origin: str, i: int, row: dict) -> float:
    extra = sorted(set(row) - set(_TRACE_COLUMNS))
    if extra or None in row:
        raise CostError(f"{origin} line {i}: unknown column {extra[:1] or 'beyond the header'} "
                        f"(known: {', '.join(_TRACE_COLUMNS)})")
    try:
        return float(row["t"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CostError(f"{origin} line {i}: {exc}") from None


def _arrival(origin: str, i: int, row: dict, t: float) -> Arrival:
    try:
        return Arrival(t, int(row["prompt"]), int(row["output"]), int(row.get("hit") or 0),
                       (row.get("swa_cached") or "1") not in ("0", "false", "False"), row.get("tier") or "hbm")
    except (KeyError, TypeError, ValueError) as exc:
        raise CostError(f"{origin} line {i}: {exc}") from None


def read_trace(path: str | Path, *, requests: int | None = None, until: float | None = None,
               bounded: bool = False, cut: str = "--trace-requests N") -> list[Arrival]:
    """A CSV trace with a header ``t,prompt,output[,hit,swa_cached,tier]`` (or the Azure traces'
    ``arrived_at,num_prefill_tokens,num_decode_tokens``), one request a row, streamed.

    ``requests`` keeps the first N rows and ``until`` the rows with ``t < until``; either stops
    reading at the first row past it (the rest is never parsed), so a cut trace must list its rows
    in arrival order. ``bounded`` refuses, as soon as it is known and before any simulation, more
    than :data:`MAX_TRACE_REQUESTS` rows or :data:`MAX_OUTPUT_TOKENS` output tokens kept; the
    message suggests ``cut``, the caller's options that shorten the trace.
    """
    origin = f"trace file {str(path)!r}"
    most = MAX_TRACE_REQUESTS if bounded else None
    out, tokens = [], 0
    for i, row in _rows(path, origin):
        t = _time(origin, i, row)
        if until is not None and t >= until:
            break
        if len(out) == most:
            raise CostError(f"{origin}: more than {most:,} requests, the most one simulation replays; "
                            f"replay a part of it with {cut}")
        a = _arrival(origin, i, row, t)
        if out and a.t < out[-1].t and (requests or until is not None):
            raise CostError(f"{origin} line {i}: t {a.t:g} is earlier than the row before it ({out[-1].t:g}); "
                            f"a cut trace is read in file order, so sort its rows by time")
        tokens += a.output
        if bounded and tokens > MAX_OUTPUT_TOKENS:
            raise CostError(f"{origin}: more than {MAX_OUTPUT_TOKENS:,} output tokens by line {i}, the most one "
                            f"simulation replays; replay a part of it with {cut}")
        out.append(a)
        if len(out) == requests:
            break
    if not out:
        raise CostError(f"{origin}: no requests" + ("" if until is None else f" before t = {until:g} s"))
    return out
