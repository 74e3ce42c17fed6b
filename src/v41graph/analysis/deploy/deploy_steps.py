"""The step costers a ``deploy`` search shares, and the two step prices every formula reads
(:mod:`.deploy_price`): one prompt's prefill chunk by chunk, one decode (or DSpark verify) step.

Every step time comes from a :class:`~v41graph.analysis.serving.step_cost.StepCoster` — the object ``simulate``
costs its steps with — one per (mapping, decoder replay, Engram residency) under one routing, kept in
:class:`Costers` and reused across candidates, caps, chunk sizes and rates; its cache is keyed by the
whole step shape and the coster by every policy, so reuse never changes an answer.
"""

from __future__ import annotations

from ...errors import CostError
from ...ir.routing import UNIFORM, Routing
from ...costs.requests.system import expected_emitted
from .deploy_space import DSPARK_ACCEPTANCE, EngineMapping, Instance
from ..serving.step_cost import Piece, StepCoster

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
                                       routing=self.routing, moe_a2a=m.a2a)
        return self._by[key]

    @staticmethod
    def mapping_key(inst: Instance) -> tuple:
        """The instance's part of :meth:`key`: its mapping (whose degrees decide its a2a backend) and V4.1 knobs."""
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
