"""Steady-state prices of a deployment from the simulator's own compiled step costs.

Every step time comes from a :class:`~v41graph.analysis.serving.step_cost.StepCoster` — the object
``simulate`` costs its steps with — one per (mapping, decoder replay, Engram residency), kept in :class:`Costers`
and reused across candidates, caps, chunk sizes and rates. Its cache is keyed by the whole step
shape and the coster by every policy, so reuse never changes an answer.

The formulas (fixed ISL/OSL, or a trace's means; FCFS; the step costers and the two step prices are
:mod:`.deploy_steps`'s):

* prefill of one prompt ``t_p``: its chunks, each one step; one prefill step holds
  ``16384 // isl`` prompts (``t_step``), so an instance prefills ``k / t_step`` prompts per second;
* decode step ``t_d`` at the running batch and the mean context isl + osl / 2; with DSpark verifying
  k drafted tokens the step is a verify step and emits ``e`` = E[tokens | k] per request
  (``costs.requests.system.expected_emitted``), so every "per token" below is ``t_d / e``;
* **aggregated**, prefill-first or mixed chunks (SGLang ``--enable-mixed-chunk``), from the step shapes of
  :func:`aggregated_steps`: the prompts a prefill-bearing step holds are the arrivals during one such step;
  prefilling takes ρ of the decode time (the whole step prefill-first, the step's increment over the decode
  step when mixed), so TPOT = t_d(b) / (1 − ρ) at the running batch b of Little's law; capacity is the
  largest rate with b ≤ cap (:func:`aggregated_at`);
* **disaggregated**: TPOT = t_d; decode capacity cap / ((osl − 1) · t_d) per decode instance;
  TTFT = M/D/1 queueing at the prefill instances' load + t_p, + ρ · one prefill step under the overlap
  scheduler (a prefill step follows back to back when work is queued, which an M/D/1 departure leaves
  behind with probability ρ, the load; otherwise the instance goes idle and emits at once), + the KV
  transfer over the NIC.

TTFT is :func:`~v41graph.costs.requests.system.first_token_s` (wait, prefill, the step that follows, the
instance's ``overlap``), the analytic twin of the simulation's emission rule (costs/requests/lifecycle.py).

Under a trace the rate is the trace's, and the decode batch is the one that rate keeps running
(Little's law, :func:`_batch_at`), not the cap. Under Poisson a deployment is run at :data:`LOAD`
of its capacity: Poisson arrivals at full capacity queue
without bound; the headroom is what simulation then checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from bisect import bisect_left
from math import ceil, expm1

from ...costs.requests.restore import persisted
from ...costs.requests.system import first_token_s
from .deploy_space import Instance, prefill_prompts
from .deploy_steps import LOAD, Costers, decode_s, prefill_s  # noqa: F401  (re-exported: the price's inputs)
from ..serving.step_cost import Piece

@dataclass(frozen=True)
class Price:
    """A deployment's analytic steady state (seconds, requests/s, tokens/s)."""

    ttft_s: float
    tpot_s: float
    rate_per_s: float       # offered: LOAD × capacity (or the trace's rate)
    capacity_per_s: float
    tokens_per_s: float

    def per_gpu(self, gpus: int) -> float:
        return self.tokens_per_s / gpus


def _decode_context(isl: int, osl: int) -> int:
    return isl + osl // 2


#: decode batches the aggregated model compiles its decode step at, linear between them (the caps' grid,
#: so one engine's caps share their shapes)
DECODE_GRID = (1, 8, 16, 32, 64, 128, 256, 512, 1024)
#: the decode batch a mixed step's prefill increment is priced at (the increment moves < 6 % between 64 and
#: 1,024 requests on h200_sxm tp4; one reference batch keeps the shapes per engine, not per cap)
MIXED_REFERENCE_BATCH = 64


def prompts_per_step(isl: int, chunk: int) -> int:
    """Whole prompts one prefill step can hold: ``max_prefill_tokens``' worth when a prompt fits a chunk, else 1."""
    return prefill_prompts(isl) if isl <= chunk else 1


@dataclass(frozen=True)
class AggregatedSteps:
    """The step costs the aggregated model reads for one instance: decode step times at ``batches``
    (``decode``: the whole step; ``emitted`` tokens per request each, > 1 under DSpark), and per m = 1 … k
    prompts, ``taken[m-1]``: the decode time a prefill-bearing step of m prompts takes — prefill first:
    the whole prefill step; mixed (``--enable-mixed-chunk``): its increment over the decode step it rides
    on."""

    batches: tuple[int, ...]
    decode: tuple[float, ...]
    taken: tuple[float, ...]
    mixed: bool
    emitted: float = 1.0

    def step(self, b: float) -> float:
        """The decode step at a batch of ``b`` requests (linear between compiled batches)."""
        if b <= self.batches[0]:
            return self.decode[0]
        i = min(bisect_left(self.batches, b), len(self.batches) - 1)
        b0, b1, t0, t1 = self.batches[i - 1], self.batches[i], self.decode[i - 1], self.decode[i]
        return t0 + (t1 - t0) * (b - b0) / (b1 - b0)

    def td(self, b: float) -> float:
        """The decode step per emitted token at a batch of ``b`` requests."""
        return self.step(b) / self.emitted

    def bearing(self, m: float, b: float) -> float:
        """A prefill-bearing step of ``m`` prompts beside a batch of ``b``: prefill first, the prefill step;
        mixed, the decode step plus the increment (which the step costs may price below the prefill alone:
        the decode's weight reads are shared; the simulation steps on the same costs)."""
        return self.step(b) + self.take(m) if self.mixed else self.take(m)

    def take(self, m: float) -> float:
        """``taken`` at a fractional prompt count (linear between whole ones)."""
        return _linear(self.taken, m)


def _linear(values: tuple[float, ...], m: float) -> float:
    """``values[m - 1]`` at a fractional m ≥ 1 (linear between whole ones, the last beyond them)."""
    i = min(int(m), len(values)) - 1
    if i + 1 >= len(values):
        return values[-1]
    return values[i] + (values[i + 1] - values[i]) * (m - 1 - i)


def aggregated_steps(costers: Costers, inst: Instance, isl: int, osl: int) -> AggregatedSteps:
    """The compiled step costs :func:`aggregated_at` reads (shared by an engine's caps)."""
    c, ctx, v, e = costers.get(inst), _decode_context(isl, osl), inst.verify, costers.emitted(inst)
    batches = tuple(sorted({b for b in DECODE_GRID if b < inst.cap} | {inst.cap}))
    decode = tuple(decode_s(c, b, ctx, v) for b in batches)
    k = prompts_per_step(isl, inst.chunk)

    def counts(one: float, full: float) -> tuple[float, ...]:
        # one prompt and a full step compiled, the counts between linear (within 2 % of compiling each on
        # h200_sxm tp4 and tp4 dpattn4, prefill first and mixed): half the shapes
        return tuple(one + (full - one) * (m - 1) / max(1, k - 1) for m in range(1, k + 1))
    taken = counts(prefill_taken(costers, inst, isl, osl, 1), prefill_taken(costers, inst, isl, osl, k))
    return AggregatedSteps(batches, decode, taken, inst.mixed, e)


def prefill_taken(costers: Costers, inst: Instance, isl: int, osl: int, m: int) -> float:
    """The decode time a prefill-bearing step of ``m`` prompts takes: prefill first, the prefill step(s);
    mixed, their increment over the decode step they ride on (at :data:`MIXED_REFERENCE_BATCH`)."""
    c, ctx, v = costers.get(inst), _decode_context(isl, osl), inst.verify
    if not inst.mixed:
        return prefill_s(c, isl, inst.chunk, m)
    ref = MIXED_REFERENCE_BATCH
    dkey, t_ref = c.decode_key(ref, ref * ctx), decode_s(c, ref, ctx, v)
    total, start = 0.0, 0
    while start < isl:  # chunk by chunk, each chunk's step carrying the decode batch
        n = min(inst.chunk, isl - start)
        total += c.forward_s((c.piece_key(Piece(isl, start, n)),) * m, dkey, v) - t_ref
        start += n
    return max(total, 0.0)


def aggregated_at(s: AggregatedSteps, rate: float, cap: int, osl: int, overlap: bool = True):
    """(TTFT, TPOT, batch) of one aggregated replica offered ``rate`` req/s; None when it cannot carry it.

    The prompts one prefill-bearing step holds, m, are the arrivals during such a step (at least one:
    m = μ / (1 − e^−μ), μ = rate × its length, at most k). Prefilling takes ρ = rate · taken(m) / m of
    the decode time (mixed: the step's increment over the decode step), so TPOT = t_d(b) / (1 − ρ); the
    running batch b is Little's: rate × (osl − 1 + one step under overlap) × TPOT, at most ``cap``
    (beyond it: None, the queue grows). TTFT is the step in progress, the prefill-bearing step, and under
    overlap the step after it (a mean step).

    >>> s = AggregatedSteps((1, 8), (0.01, 0.02), (0.1,), False)
    >>> [round(x, 4) for x in aggregated_at(s, 2.0, 8, 3)]
    [0.138, 0.0125, 0.075]
    >>> aggregated_at(s, 12.0, 8, 3) is None
    True
    """
    b, k = 1.0, len(s.taken)
    for _ in range(60):
        raw = s.step(b)
        m = 1.0
        for _ in range(4):  # m and the step holding m prompts: a few rounds settle it
            mu = rate * s.bearing(m, b)
            m = min(float(k), mu / -expm1(-mu)) if mu > 1e-12 else 1.0
        rho = rate * (s.bearing(m, b) - (raw if s.mixed else 0.0)) / m
        if rho >= 1.0:
            return None
        tpot = s.td(b) / (1.0 - rho)
        nxt = min(cap + 1.0, rate * (max(1, osl - 1) + overlap) * tpot)
        if abs(nxt - b) < 1e-6:
            break
        b = nxt
    if b > cap:
        return None
    step = s.bearing(m, b)
    ttft = first_token_s(raw, step, tpot * s.emitted if s.mixed else rho * step + (1.0 - rho) * raw, overlap)
    return ttft, tpot, b


def price_aggregated(costers: Costers, inst: Instance, replicas: int, isl: int, osl: int,
                     rate: float | None = None, steps: AggregatedSteps | None = None) -> Price:
    """Aggregated: ``replicas`` instances each prefilling and decoding, prefill first or mixed as the
    instance says (see :func:`aggregated_at`); capacity: the highest rate a replica carries (bisection)."""
    s = steps or aggregated_steps(costers, inst, isl, osl)
    lo, hi = 0.0, min(len(s.taken) / max(s.taken[-1], 1e-12), inst.cap / (max(1, osl - 1) * s.td(inst.cap)))
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if aggregated_at(s, mid, inst.cap, osl, inst.overlap) else (lo, mid)
    capacity = replicas * lo
    offered = LOAD * capacity if rate is None else rate
    at = aggregated_at(s, offered / replicas, inst.cap, osl, inst.overlap) if offered else None
    if at is None:  # over capacity: priced at capacity, and the SLA check says the rate is too high
        at = aggregated_at(s, lo * (1 - 1e-9), inst.cap, osl, inst.overlap) or (float("inf"), float("inf"), 0)
    return Price(at[0], at[1], offered, capacity, offered * osl)


def _batch_at(in_flight, cap: int) -> int:
    """A given rate's running batch: the fixed point of Little's law b = rate × lifetime(b), from 1 up
    (the lifetime grows with b), at most ``cap`` — a trace's load rarely fills the cap."""
    b = 1
    for _ in range(16):
        nxt = min(cap, max(1, ceil(in_flight(b))))
        if nxt <= b:
            return b
        b = nxt
    return b


def transfer_s(model, hardware, isl: int) -> float:
    """One request's KV (global pages + SWA window) over the GPU's NIC, as ``disaggregated`` moves it."""
    return persisted(model, isl).with_swa / hardware.scaleout_bandwidth


def price_disaggregated(costers: Costers, pre: Instance, x: int, dec: Instance, y: int, isl: int, osl: int,
                        rate: float | None = None) -> Price:
    """Disaggregated: ``x`` prefill instances feeding ``y`` decode instances (see the module doc)."""
    k = prefill_prompts(isl)
    t_p = prefill_s(costers.get(pre), isl, pre.chunk)
    step = prefill_s(costers.get(pre), isl, pre.chunk, k)
    dc, ctx, e, v = costers.get(dec), _decode_context(isl, osl), costers.emitted(dec), dec.verify
    pre_cap = x * k / step
    dec_cap = y * dec.cap / (max(1, osl - 1) * decode_s(dc, dec.cap, ctx, v) / e)
    capacity = min(pre_cap, dec_cap)
    offered = LOAD * capacity if rate is None else rate
    batch = dec.cap if rate is None else _batch_at(lambda b: rate / y * max(1, osl - 1) * decode_s(dc, b, ctx, v) / e,
                                                   dec.cap)
    t_d = decode_s(dc, batch, ctx, v) / e
    rho = min(offered / pre_cap, 0.999)
    wait = rho * step / (2 * (1 - rho))  # M/D/1 mean wait with one prefill step as the service time
    # overlap: the next prefill step follows when work is queued (a departure leaves some with probability rho)
    ttft = first_token_s(wait, t_p, rho * step, pre.overlap) + transfer_s(costers.model, costers.hardware, isl)
    return Price(ttft, t_d, offered, capacity, offered * osl)
