"""The request lifecycle: from a log of engine steps to what a client sees.

**Measurement boundary.** Times count from the request's **arrival at the scheduler** (server side)
to the **end of the engine step that emits the token**. The client's network, tokenisation and
detokenisation are outside it. (``start`` = first step the request is in, so
``start − arrival`` is its queueing.)

**Emission** (:func:`emission_times`). The step that *produces* a token is not always the one that
*emits* it. SGLang's default scheduler loop (``event_loop_overlap``) launches step k + 1 before it
processes step k's outputs (a result queue one batch deep: ``run_batch`` of the new batch, then
``process_batch_result`` of the last), so step k's tokens reach the client when step k + 1 ends — when
k + 1 follows k back to back; when the engine goes idle after k (nothing to launch), at k's own end.
With ``--disable-overlap-schedule`` (``overlap=False``) every token leaves at the end of its step.
The rule holds for every token, first and later, so TTFT, ITL and a request's completion agree.

- **TTFT** = queueing + every step from the request's first step to the step that emits its first
  token: its own prefill forwards (every chunk; a prefix fetch from a storage tier overlapped into
  its first one), the steps scheduled between them (decode batches or other requests'
  prefills) and, under the overlap scheduler, the step that follows its last chunk. Nothing is
  summed by hand: it is ``first_token − arrival`` on the step log, and :func:`ttft_parts` splits it.
- **ITL** = the gap between consecutive emitted tokens of one request; a step that emits k > 1
  tokens (a DSpark burst) gives one gap of its length and k − 1 gaps of 0.
- **Throughput** = output tokens emitted inside a stated window [t0, t1) / (t1 − t0).

>>> log = (Step(0.0, 0.5, "prefill"), Step(0.5, 0.75, "decode"), Step(0.75, 1.0, "prefill"))
>>> r = RequestRecord(rid=0, arrival=0.0, steps=(0, 2), token_times=(1.0, 1.25, 1.5, 1.5))
>>> p = ttft_parts(r, log)
>>> p.queue_s, p.own_steps_s, p.between_s, p.ttft_s
(0.0, 0.75, 0.25, 1.0)
>>> itl_samples(r)                        # the last step emitted two tokens (a burst)
(0.25, 0.25, 0.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import CostError

#: the one place the boundary is stated; every summary carries it
BOUNDARY = ("from arrival at the scheduler to the end of the engine step that emits the token "
            "(server side; client network and (de)tokenisation excluded)")
#: how a step's tokens reach the client, by the scheduler's ``overlap`` (JSON ``emission``)
EMISSION = {True: "overlap", False: "step_end"}


@dataclass(frozen=True)
class Step:
    """One engine step: when it ran and what it was (``prefill``, ``decode`` or ``mixed``)."""

    start: float
    end: float
    kind: str
    restore_s: float = 0.0   # fetch time this step exposed beyond its forward


def emission_times(log, overlap: bool) -> list[float]:
    """When the tokens each step of ``log`` produced are emitted, by step index (see the module doc).

    ``overlap=False``: at the step's end. ``overlap=True`` (SGLang's overlap scheduler): at the end
    of the next step when that one starts as this one ends, else (the engine went idle) at this one's end.

    >>> log = (Step(0.0, 0.5, "prefill"), Step(0.5, 0.75, "decode"), Step(2.0, 2.25, "prefill"))
    >>> emission_times(log, overlap=False)
    [0.5, 0.75, 2.25]
    >>> emission_times(log, overlap=True)   # step 1 is followed by idle time, step 2 by nothing
    [0.75, 0.75, 2.25]
    """
    ends = [s.end for s in log]
    if not overlap:
        return ends
    return [nxt.end if nxt.start == s.end else s.end for s, nxt in zip(log, log[1:])] + ends[-1:]


@dataclass(frozen=True)
class RequestRecord:
    """One request as the engine saw it: the steps it was in before its first token (indices into
    the log) and the times its tokens were emitted (equal times: one burst)."""

    rid: int
    arrival: float
    steps: tuple[int, ...]          # its prefill steps (each chunk), in order
    token_times: tuple[float, ...]
    transfer_s: float = 0.0          # disaggregated: KV transfer between the instances

    @property
    def ttft_s(self) -> float:
        return self.token_times[0] - self.arrival


@dataclass(frozen=True)
class TTFTParts:
    """TTFT split over the step log."""

    queue_s: float
    own_steps_s: float     # the request's own prefill forwards (restore overlapped inside)
    restore_s: float       # of which: a prefix fetch the forward could not hide
    between_s: float       # steps of other work scheduled between its chunks
    transfer_s: float      # disaggregated stages: the KV transfer to the decode instance
    ttft_s: float
    emission_s: float = 0.0  # overlap scheduler: the step after its last chunk, before the token goes out


def ttft_parts(record: RequestRecord, log) -> TTFTParts:
    """Split ``record``'s TTFT into queueing, own forwards, steps in between, the following step the
    overlap scheduler emits after (``emission_s``) and transfer."""
    if not record.steps or not record.token_times:
        raise CostError(f"request {record.rid}: no prefill step or no token in the log")
    first, last = log[record.steps[0]], log[record.steps[-1]]
    own = sum(log[i].end - log[i].start for i in record.steps)
    span = last.end - first.start
    return TTFTParts(queue_s=first.start - record.arrival, own_steps_s=own,
                     restore_s=sum(log[i].restore_s for i in record.steps), between_s=span - own,
                     transfer_s=record.transfer_s, ttft_s=record.ttft_s,
                     emission_s=record.token_times[0] - record.transfer_s - last.end)


def itl_samples(record: RequestRecord) -> tuple[float, ...]:
    """Gaps between consecutive tokens of one request (a burst gives zero gaps)."""
    t = record.token_times
    return tuple(b - a for a, b in zip(t, t[1:]))


def percentiles(values, qs=(50, 90, 99)) -> dict[str, float | None]:
    """``p50``/``p90``/``p99`` (numpy's linear interpolation); None for no samples.

    >>> percentiles([1.0, 2.0, 3.0, 4.0])
    {'p50': 2.5, 'p90': 3.7, 'p99': 3.97}
    """
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return {f"p{q}": None for q in qs}
    return {f"p{q}": round(float(np.percentile(arr, q)), 12) for q in qs}


def throughput(records, t0: float, t1: float) -> float:
    """Output tokens emitted in [t0, t1) per second."""
    if not t1 > t0:
        raise CostError(f"throughput window: end {t1!r} must be after start {t0!r}")
    n = sum(1 for r in records for t in r.token_times if t0 <= t < t1)
    return n / (t1 - t0)
