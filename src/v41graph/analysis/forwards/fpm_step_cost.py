"""Serving steps costed by an FPM table: ``simulate --cost fpm``.

A drop-in for :class:`~.step_cost.StepCoster`: the scheduler asks for the forward time of a
step (prefill pieces and a decode batch) and gets the table's answer for that shape — a
measured point, or the value of the estimator chosen by leave-one-out
(:func:`~v41graph.costs.fpm.select.choose`), inside the measured domain only. Shapes are never
rounded (a bucket would move a query off the measured grid), and every step is checked against
the table's identity (GPU, TP, EP, DP, decoder replay, DSpark …).

A step the table cannot answer — a mixed prefill + decode step or an unbalanced batch
(``unsupported``: FPM coordinates describe one phase of a balanced batch), a shape past the grid
(``outside measured domain``), a DSpark verify step — is priced by the runtime basis fitted to the
same table (:mod:`.runtime_step_cost`: the step's kernels plus the engine's fitted own cost) and
counted as tier ``extrapolated``: a simulation never stops inside. Without that fallback
(``fallback=None``) such a step stops the simulation with its failure category, as before. Another
deployment (``identity mismatch``) always stops it. Decode past KV is the context minus the step's
own token.

>>> from v41graph.costs.fpm.load import load_table
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph import load_model
>>> t = load_table("aisimulate-gb300-off-v1")
>>> c = FpmStepCoster(t, load_model(), load_hardware("gb300"), tp=4, allow_unadmitted=True,
...                   estimator={"decode": "interpolation"})
>>> c.forward_s((), c.decode_key(1, 129)) == [p.observed_ms for p in t.points
...                                          if p.key == ("decode", 1, 1, 128)][0] / 1000
True
"""

from __future__ import annotations

from ...costs.fpm.predict import Answer, predict, refuse_unadmitted
from ...costs.fpm.system_figures import query_for_plan
from ...costs.fpm.table import FpmTable
from ...errors import CostError
from ...ir.identity import identity_from_plan, runtime_of
from ...ir.plan import Plan, Request
from ..serving.step_cost import Piece, tier_counts


class FpmStepCoster:
    """Forward times from ``table``; ``answers`` counts answers by tier, ``compiled`` distinct shapes."""

    bucket = False
    basis = "fpm"

    def __init__(self, table: FpmTable, model, hardware, *, tp: int = 1, ep: int = 1, dp: int = 1,
                 allow_unadmitted: bool = False, estimator: dict[str, str] | None = None, sol=None,
                 fallback=None):
        refuse_unadmitted(table, allow_unadmitted)
        self.table, self.model, self.hardware = table, model, hardware
        self.policies = {"tp": tp, "ep": ep, "dp": dp}
        self.estimator, self.sol, self.fallback = dict(estimator or {}), sol, fallback
        self.runtime = runtime_of(table.identity)
        self._cache: dict = {}
        self.answers: dict[str, int] = {}
        self.compiled = 0

    @property
    def decoder_replay(self) -> str | None:
        return self.table.identity.decoder_replay

    def basis_record(self) -> dict:
        """What the steps stand on: the table, its identity and boundary, the estimator, the steps per tier,
        and the runtime fit the extrapolated ones took."""
        i = self.table.identity
        return {"table": self.table.name, "admission": i.admission, "boundary": i.boundary,
                "decoder_replay": i.decoder_replay, "estimator": dict(self.estimator), **tier_counts(self.answers),
                "extrapolated_on": None if self.fallback is None else self.fallback.fit.to_dict()}

    def decode_key(self, batch: int, context_sum: int) -> tuple[int, int]:
        """(batch, context per request), exact: FPM answers only measured coordinates."""
        return (0, 0) if batch == 0 else (batch, -(-context_sum // batch))

    def piece_key(self, piece: Piece) -> Piece:
        return piece

    def _plan(self, pieces: tuple[Piece, ...], decode: tuple[int, int]) -> Plan:
        reqs = [p.request(i) for i, p in enumerate(pieces)]
        if decode[0]:
            # the scheduler's context counts the step's own input token; FPM's past KV does not
            reqs.append(Request.decode(decode[1] - 1, copies=decode[0], seq=len(reqs)))
        defaults = {k: getattr(self.table.identity, k) for k in ("decoder_replay", "engram_residency", "dspark")
                    if getattr(self.table.identity, k) is not None}
        return Plan(reqs, **{**defaults, **self.policies})

    def answer(self, pieces: tuple[Piece, ...], decode: tuple[int, int]) -> Answer:
        plan = self._plan(pieces, decode)
        query = query_for_plan(plan)
        if isinstance(query, str):
            return Answer(self.table.name, None, "unsupported", None, query, self.table.identity.admission,
                          failure="unsupported", category="unsupported")
        identity = identity_from_plan(plan, self.hardware.name, self.runtime)
        return predict(self.table, query, identity=identity, allow_unadmitted=True,
                       estimator=self.estimator.get(query.phase, "interpolation"), sol=self.sol)

    def forward_s(self, pieces: tuple[Piece, ...], decode: tuple[int, int], verify_len: int = 0) -> float:
        key = (pieces, decode, verify_len)
        if key not in self._cache:
            if verify_len:
                a = None
                why = "(unsupported): DSpark verify steps are not in any FPM table"
            else:
                a = self.answer(pieces, decode)
                why = f"({a.category}): {a.reason}"
            if a is not None and a.predicted_ms is not None:
                self._cache[key] = (a.predicted_ms / 1000, a.tier)
            elif self.fallback is not None and (a is None or a.category != "identity mismatch"):
                self._cache[key] = (self.fallback.forward_s(pieces, decode, verify_len), "extrapolated")
            else:
                raise CostError(f"simulate --cost fpm: table {self.table.name!r} cannot cost a step {why}")
            self.compiled += 1
        seconds, tier = self._cache[key]
        self.answers[tier] = self.answers.get(tier, 0) + 1
        return seconds


__all__ = ["FpmStepCoster"]
