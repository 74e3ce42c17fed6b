"""SOL of an FPM query's shape: the reference for interpolation and the SOL line in the docs' plot.

The query becomes a balanced plan (:func:`~v41graph.costs.fpm.system_figures.plan_for_query`)
with the table identity's policies, scheduled by the same passes as ``v41graph cost``. Results
are cached per query (a leave-one-out asks for each point many times).

>>> from v41graph.costs.fpm.load import load_table
>>> from v41graph.costs.fpm.predict import Query
>>> ref = sol_reference(load_table("aisimulate-gb200-calibration-v1").identity)
>>> 0 < ref(Query("decode", 1, 1, 2)) < 10     # milliseconds; the measured forward is ~750 ms
True
"""

from __future__ import annotations


from ...costs.fpm.predict import Query, Reference
from ...costs.fpm.system_figures import plan_for_query
from ...ir.identity import Identity
from ...model.config import ModelSpec, load_model
from ...passes import compile
from ...reuse import cached


def plan_policies(identity: Identity) -> dict:
    """The plan policies an identity states (unrecorded ones keep the plan's defaults)."""
    names = ("decoder_replay", "encoder_restore", "fusion", "engram_residency", "dspark", "tp", "ep", "dp")
    return {n: getattr(identity, n) for n in names if getattr(identity, n) is not None}


def sol_reference(identity: Identity, model: ModelSpec | None = None, hardware=None, cost=None) -> Reference:
    """A function Query -> SOL milliseconds on the identity's GPU (or ``hardware``) and policies;
    with ``cost`` (a CostMode, e.g. hybrid) the time of that cost mode instead. Its ``key`` names
    everything its values depend on (the identity, model, hardware and cost mode)."""
    model = model or load_model()
    hw = hardware or identity.gpu
    policies = plan_policies(identity)

    @cached(None)
    def sol_ms(query: Query) -> float:
        plan = plan_for_query(query, **policies)
        return float(compile(model, plan, hw, cost=cost).report("schedule").total_time_s) * 1000

    # what every value depends on, so a choice made with this reference can be memoised (costs/fpm/select.py)
    sol_ms.key = ("sol_reference", identity, model, hw, cost)
    return sol_ms


__all__ = ["plan_policies", "sol_reference"]
