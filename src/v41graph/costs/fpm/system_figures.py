"""From plans to FPM and back: a plan's query coordinates, routing by identity, system figures.

An FPM table's coordinates describe a *balanced* batch of one phase (AISimulate: "homogeneous
batch"): every request has the same new tokens and the same past KV. A plan maps onto them only
then; a mixed prefill+decode batch, a verify step or an unbalanced batch is ``unsupported``
rather than squeezed into totals it was never measured at.

System figures reuse :func:`v41graph.costs.requests.system.system_figures` (one set of rules for TTFT,
ITL and throughput) on the FPM forward time, and state the table, its identity and the
measurement boundary: a forward interval of that boundary, not client latency.

>>> from v41graph.ir.plan import Plan, Request
>>> query_for_plan(Plan([Request.decode(1024, copies=2)]))
Query(phase='decode', batch_size=2, total_prefill_tokens=2, total_kv_read_tokens=2048)
>>> [(r.kind, r.cached, r.new) for r in plan_for_query(Query("prefill", 2, 8, 256)).requests]
[('extend', 128, 4), ('extend', 128, 4)]
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import CostError
from ...ir.identity import Identity, Runtime, identity_from_plan
from ...ir.plan import Plan, Request
from ..requests.system import SystemFigures, system_figures
from .predict import Answer, Query, predict, refuse_unadmitted
from .table import FpmTable


def query_for_plan(plan: Plan) -> Query | str:
    """The plan's FPM coordinates, or the reason it has none (a string)."""
    kinds = {r.kind for r in plan.requests}
    if kinds == {"decode"}:
        phase = "decode"
    elif kinds <= {"prefill", "extend", "chunk"}:
        phase = "prefill"
    else:
        return f"the plan mixes {', '.join(sorted(kinds))}; FPM coordinates hold one phase (prefill or decode)"
    shapes = {(r.cached, r.new) for r in plan.requests}
    numbers = [v for s in shapes for v in s] + [r.copies for r in plan.requests]
    if not all(isinstance(v, int) for v in numbers):
        return "the plan has symbolic lengths; FPM needs numbers"
    if len(shapes) > 1:
        return f"unbalanced batch (requests at {sorted(shapes)}); the table holds balanced batches only"
    batch = sum(r.copies for r in plan.requests)
    return Query.make(phase, batch, sum(r.new * r.copies for r in plan.requests),
                      past_kv=sum(r.cached * r.copies for r in plan.requests))


def plan_for_query(query: Query, **policies) -> Plan:
    """A balanced plan at ``query``'s coordinates (prefill with no past KV is a plain prefill)."""
    b = query.batch_size
    if query.total_prefill_tokens % b or query.total_kv_read_tokens % b:
        raise CostError(f"fpm query: totals {query.total_prefill_tokens} new / {query.total_kv_read_tokens} "
                        f"past KV do not split evenly over batch {b}")
    new, past = query.total_prefill_tokens // b, query.total_kv_read_tokens // b
    if query.phase == "decode":
        return Plan([Request.decode(past, copies=b)], **policies)
    one = Request.prefill(new) if past == 0 else Request.extend(past, new)
    return Plan([one] * b, **policies)


def route(identity: Identity, tables) -> tuple[FpmTable | None, dict[str, tuple[str, ...]]]:
    """The first table whose identity matches ``identity``, and for the others the fields that differ."""
    mismatches: dict[str, tuple[str, ...]] = {}
    for table in tables:
        diff = table.identity.differences(identity)
        if not diff:
            return table, mismatches
        mismatches[table.name] = diff
    return None, mismatches


@dataclass(frozen=True)
class _Forward:
    total_time_s: float  # what system_figures reads from a schedule report


@dataclass(frozen=True)
class FpmSystem:
    """FPM system figures (None unless the table covers the plan) with what they stand on."""

    table: str
    identity: Identity
    boundary: str | None
    answer: Answer
    figures: SystemFigures | None

    def to_dict(self) -> dict:
        f = self.figures
        return {"table": self.table, "identity": self.identity.to_dict(), "boundary": self.boundary,
                "answer": self.answer.to_dict(),
                "figures": None if f is None else {"forward_s": f.forward_s, "ttft_s": f.ttft_s, "itl_s": f.itl_s,
                                                   "output_tokens": f.output_tokens,
                                                   "throughput_tok_s": f.throughput_tok_s}}


def fpm_system_figures(table: FpmTable, plan: Plan, hardware, runtime: Runtime, *,
                       allow_unadmitted: bool = False) -> FpmSystem:
    """TTFT, ITL and throughput of ``plan`` from ``table``'s forward time, when the table covers it."""
    refuse_unadmitted(table, allow_unadmitted)
    identity = identity_from_plan(plan, hardware, runtime)
    query = query_for_plan(plan)
    if isinstance(query, str):
        answer = Answer(table.name, None, "unsupported", None, query,
                        table.identity.admission, failure="unsupported", category="unsupported")
    else:
        answer = predict(table, query, identity=identity, allow_unadmitted=allow_unadmitted)
    figures = None
    if answer.predicted_ms is not None:
        figures = system_figures(plan, _Forward(answer.predicted_ms / 1000))
    return FpmSystem(table.name, table.identity, table.identity.boundary, answer, figures)


__all__ = ["FpmSystem", "fpm_system_figures", "plan_for_query", "query_for_plan", "route"]
