"""``memory``'s answer: the workload whose fit picks its deployment, and what one GPU of it holds, typed.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.analysis.mapping_search import smallest_fitting
>>> model, hw = load_model(), load_hardware("h200_sxm")
>>> choice = smallest_fitting(model, hw, memory_workload(model, 8192))
>>> a = memory_answer(model, hw, choice, 8192)
>>> a.deployment.line(), a.basis, a.body["context"]
('8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)', None, 8192)
"""

from __future__ import annotations

from ..costs.hardware import Hardware
from ..errors import PlanError
from ..ir.plan import Plan, Request
from ..model.config import ModelSpec
from .answer import Priced
from .summaries import memory_summary

#: ``memory --engram host``'s hot-cache rows per Engram layer in HBM when ``--hot-cache-rows`` is not given
HOT_CACHE_ROWS = 65536


def memory_workload(model: ModelSpec, context: int, *, ep_redundant: int = 0, engram: str = "hbm",
                    dspark: bool = False) -> Plan:
    """The workload whose fit picks ``memory``'s deployment: one request holding ``context`` tokens (at least
    one) on the model's own policies; past the model's positions it is refused (the cache would extrapolate).

    >>> from v41graph import load_model
    >>> memory_workload(load_model(), 8192).requests[0].prompt
    8192
    """
    if model.max_position is not None and context > model.max_position:  # cache_memory itself extrapolates
        raise PlanError(f"memory --context: {context:,} tokens exceed max_position_embeddings "
                        f"{model.max_position:,} of model {model.name!r} (add --allow-past-max-position to "
                        "extrapolate)")
    return Plan([Request.prefill(max(context, 1))], ep_redundant=ep_redundant, engram_residency=engram,
                dspark="on" if dspark else "off")


def memory_answer(model: ModelSpec, hardware: Hardware, choice, context: int, *, ep_redundant: int = 0,
                  engram: str = "hbm", dspark: bool = False, hot_cache_rows: int | None = None, checkpoints=()):
    """``memory``'s answer on the deployment ``choice`` (a ``MappingChoice``): the weights, the cache of one
    request of ``context`` tokens and the per-GPU memory (:func:`~.summaries.memory_summary`), unpriced; a hot
    cache (default :data:`HOT_CACHE_ROWS` rows) only with the Engram tables in host memory."""
    m = choice.mapping
    plan = Plan([Request.prefill(1)], tp=m.tp, ep=m.ep, dp=m.dp, ep_redundant=ep_redundant,
                engram_residency=engram, dspark="on" if dspark else "off").check(model)
    if engram == "hbm" and hot_cache_rows is not None:
        raise PlanError("memory --hot-cache-rows: a hot cache goes with --engram host (the tables are in HBM)")
    hot = (HOT_CACHE_ROWS if hot_cache_rows is None else hot_cache_rows) if engram == "host" else 0
    data = memory_summary(model, context, dspark=dspark, hardware=hardware, plan=plan, hot_cache_rows=hot)
    return Priced(data, None, choice, tuple(checkpoints))


__all__ = ["HOT_CACHE_ROWS", "memory_answer", "memory_workload"]
