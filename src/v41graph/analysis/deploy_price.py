"""Steady-state prices of a deployment from the simulator's own compiled step costs.

Every step time comes from a :class:`~v41graph.analysis.step_cost.StepCoster` — the object
``simulate`` costs its steps with — one per (mapping, decoder replay, Engram residency), kept in :class:`Costers`
and reused across candidates, caps, chunk sizes and rates. Its cache is keyed by the whole step
shape and the coster by every policy, so reuse never changes an answer.

The formulas (fixed ISL/OSL, or a trace's means; FCFS, prefill first, no mixed chunks):

* prefill of one prompt ``t_p``: its chunks, each one step; one prefill step holds
  ``16384 // isl`` prompts (``t_step``), so an instance prefills ``k / t_step`` prompts per second;
* decode step ``t_d`` at the cap's batch and the mean context isl + osl / 2; with DSpark verifying
  k drafted tokens the step is a verify step and emits ``e`` = E[tokens | k] per request
  (``costs.system.expected_emitted``), so every "per token" below is ``t_d / e``;
* **aggregated**: each decode round also pays for the prefills of the requests that replace the
  ``cap / (osl - 1)`` finishing ones, so TPOT = t_d + cap · t_p / (osl − 1); capacity (Little) =
  cap / (t_p + (osl − 1) · TPOT) requests/s; TTFT = t_d (the step in progress) + t_p, + the step that
  follows the prefill under the overlap scheduler (its end emits the token): another prompt's prefill
  when one waits — with probability ρ = rate per replica × t_p, the share of time spent prefilling
  (an M/G/1 departure leaves work behind with probability ρ) — else a decode step of the running
  batch: ρ · t_p + (1 − ρ) · t_d;
* **disaggregated**: TPOT = t_d; decode capacity cap / ((osl − 1) · t_d) per decode instance;
  TTFT = M/D/1 queueing at the prefill instances' load + t_p, + ρ · one prefill step under the overlap
  scheduler (a prefill step follows back to back when work is queued, which an M/D/1 departure leaves
  behind with probability ρ, the load; otherwise the instance goes idle and emits at once), + the KV
  transfer over the NIC.

TTFT is :func:`~v41graph.costs.system.first_token_s` (wait, prefill, the step that follows, the
instance's ``overlap``), the analytic twin of the simulation's emission rule (costs/lifecycle.py).

Under a trace the rate is the trace's, and the decode batch is the one that rate keeps running
(Little's law, :func:`_batch_at`), not the cap. Under Poisson a deployment is run at :data:`LOAD`
of its capacity: Poisson arrivals at full capacity queue
without bound; the headroom is what simulation then checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ..costs.restore import persisted
from ..errors import CostError
from ..ir.routing import UNIFORM, Routing
from ..costs.system import expected_emitted, first_token_s
from .deploy_space import DSPARK_ACCEPTANCE, EngineMapping, Instance, prefill_prompts
from .step_cost import Piece, StepCoster

#: the share of steady-state capacity a deployment is offered (headroom for Poisson bursts)
LOAD = 0.85


class Costers:
    """One StepCoster per (engine mapping, decoder replay, Engram residency) under one ``routing`` (the
    expert-load model, ir/routing.py), shared by every candidate of a search; ``acceptance``: DSpark's
    per-position acceptance (a verify of k drafts keeps ``acceptance[:k]``)."""

    def __init__(self, model, hardware, cost=None, acceptance=DSPARK_ACCEPTANCE, routing: Routing = UNIFORM):
        self.model, self.hardware, self.cost, self.acceptance = model, hardware, cost, tuple(acceptance)
        self.routing = routing.check(model.n_routed_experts)
        self._by: dict = {}

    def get(self, inst: Instance) -> StepCoster:
        m, key = inst.engine.mapping, self.key(inst)  # every policy StepCoster takes
        if key not in self._by:
            self._by[key] = StepCoster(self.model, self.hardware, tp=m.tp, ep=m.ep, dp=m.dp, cost=self.cost,
                                       decoder_replay=inst.replay, engram_residency=inst.engram,
                                       routing=self.routing)
        return self._by[key]

    @staticmethod
    def mapping_key(inst: Instance) -> tuple:
        """The instance's part of :meth:`key`: its mapping and V4.1 knobs."""
        m = inst.engine.mapping
        return (m.tp, m.dp, m.ep, inst.replay, inst.engram)

    def key(self, inst: Instance) -> tuple:
        """Everything a StepCoster's figures depend on besides the search's model, hardware and cost: the
        instance's mapping and knobs, and the routing (so shapes of two routings never meet, adopted or not)."""
        return (*self.mapping_key(inst), self.routing)

    def entries(self) -> dict:
        """Every coster's compiled shapes, by :meth:`key` (what a Dask worker sends back)."""
        return {k: c.entries() for k, c in self._by.items()}

    def adopt(self, entries: dict) -> None:
        """Take the shapes another ``Costers`` of the same model, hardware, cost, acceptance and routing compiled."""
        for key, shapes in sorted(entries.items(), key=lambda kv: kv[0][:5]):
            tp, dp, ep, replay, engram, routing = key
            if routing != self.routing:
                raise CostError(f"deploy costers: shapes priced under routing {routing.describe()} cannot join a "
                                f"search under {self.routing.describe()}")
            inst = Instance(EngineMapping(tp * dp, dp, ep), 1, 1, replay, engram)
            self.get(inst).adopt(shapes)

    def drafts(self, inst: Instance) -> tuple[float, ...] | None:
        """The acceptance of the drafts one verify step of ``inst`` checks (None: DSpark off)."""
        return self.acceptance[:inst.verify] or None

    def emitted(self, inst: Instance) -> float:
        """Tokens one decode (verify) step emits per request on average."""
        return expected_emitted(self.acceptance[:inst.verify])

    @property
    def compiled(self) -> int:
        return sum(c.compiled for c in self._by.values())

    def all(self) -> list[StepCoster]:
        return list(self._by.values())


def prefill_s(coster: StepCoster, isl: int, chunk: int, prompts: int = 1) -> float:
    """Forward time of prefilling ``prompts`` prompts of ``isl`` tokens, chunk by chunk."""
    total, start = 0.0, 0
    while start < isl:
        n = min(chunk, isl - start)
        piece = coster.piece_key(Piece(isl, start, n))
        total += coster.forward_s((piece,) * prompts, (0, 0))
        start += n
    return total


def decode_s(coster: StepCoster, batch: int, context: int, verify: int = 0) -> float:
    """One decode step (a DSpark verify step of ``verify`` drafts when > 0) of ``batch`` requests."""
    return coster.forward_s((), coster.decode_key(batch, batch * context), verify)


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


def price_aggregated(costers: Costers, inst: Instance, replicas: int, isl: int, osl: int,
                     rate: float | None = None) -> Price:
    """Aggregated: ``replicas`` instances each prefilling and decoding (see the module doc)."""
    c, e, k = costers.get(inst), costers.emitted(inst), inst.verify
    t_p = prefill_s(c, isl, inst.chunk)

    def tpot_at(batch: int) -> float:
        return decode_s(c, batch, _decode_context(isl, osl), k) / e + batch * t_p / max(1, osl - 1)

    def ttft_at(batch: int, offered: float) -> float:  # the step in progress, the prefill, the step after it
        t_d = decode_s(c, batch, _decode_context(isl, osl), k)
        rho = min(1.0, offered / replicas * t_p)  # another prompt waits after a prefill with this probability
        return first_token_s(t_d, t_p, rho * t_p + (1 - rho) * t_d, inst.overlap)

    capacity = replicas * inst.cap / (t_p + max(1, osl - 1) * tpot_at(inst.cap))
    if rate is None:
        return Price(ttft_at(inst.cap, LOAD * capacity), tpot_at(inst.cap), LOAD * capacity, capacity,
                     LOAD * capacity * osl)
    batch = _batch_at(lambda b: rate / replicas * (t_p + max(1, osl - 1) * tpot_at(b)), inst.cap)
    return Price(ttft_at(batch, rate), tpot_at(batch), rate, capacity, rate * osl)


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
