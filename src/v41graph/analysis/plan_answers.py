"""The typed answers of the commands that price or hold one plan: ``memory``, ``cost`` and ``formula``.

Each takes the deployment the command resolved (a :class:`~.mapping_search.MappingChoice`) and returns a
:class:`~.answer.Priced` whose ``to_json()`` is what ``--json`` prints; the workload whose fit picks a
deployment is computed here too (:func:`memory_workload`, :func:`formula_deployment`).

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

from dataclasses import dataclass
from typing import Any, Callable

from ..costs.hardware import Hardware
from ..errors import PlanError
from ..ir.plan import Plan, Request
from ..model.config import ModelSpec
from .answer import Priced, part
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



def _never(value: Any) -> bool:
    """``omit`` of a field that travels with an answer but is never written."""
    return True


@dataclass(frozen=True)
class CostAnswer(Priced):
    """``cost``'s answer: the cost summary priced on its basis (with the tables' coverage off SOL), and, never
    in the JSON, the plan it costed and its compile (what ``cost --html`` draws)."""

    plan: Any = part(omit=_never, default=None)
    compiled: Any = part(omit=_never, default=None)


def cost_answer(model: ModelSpec, hardware: Hardware, asked: Plan, choice, cost, *, checkpoints=()) -> CostAnswer:
    """``cost``: ``asked`` on the degrees of the deployment ``choice``, compiled on the cost mode ``cost`` (a
    :class:`~v41graph.costs.measured.tiers.CostMode`) and summarised (:func:`~.summaries.cost_summary`).

    >>> from v41graph import load_model
    >>> from v41graph.costs.hardware import load_hardware
    >>> from v41graph.costs.measured.tiers import CostMode
    >>> from v41graph.analysis.mapping_search import explicit
    >>> model, hw = load_model(), load_hardware("h200_sxm")
    >>> choice = explicit(model, hw, Plan([Request.prefill(1024)], tp=8, ep=8))
    >>> a = cost_answer(model, hw, Plan([Request.prefill(1024)]), choice, CostMode("sol"))
    >>> (a.plan.tp, a.plan.ep), a.basis["mode"], "compiled" in a.to_dict()
    ((8, 8), 'sol', False)
    """
    from ..passes import compile
    from .basis import basis_record
    from .summaries import cost_summary
    m = choice.mapping
    plan = asked.with_policies(tp=m.tp, ep=m.ep, dp=m.dp)  # on the deployment's degrees
    compiled = compile(model, plan, hardware, cost=cost)
    summary = cost_summary(model, plan, compiled, hardware)
    return CostAnswer(summary, basis_record(cost.mode, coverage=summary.get("coverage")), choice,
                      tuple(checkpoints), plan, compiled)


def formula_deployment(plan: Plan, at: dict[str, int], pick: Callable[[Plan], Any]):
    """The deployment a closed form is priced on: ``pick`` (the command's mapping rule: auto picks the smallest
    that fits) of the plan bound at ``at``, the symbols it leaves open at their default binding; where ``at``
    is past the model's positions, at the default binding alone (the closed form says so in its own words).
    A name of ``at`` that is not a symbol of the plan is refused."""
    from .symbolic.query import DEFAULT_BINDING, bind, plan_symbols
    symbols = plan_symbols(plan)
    stray = sorted(set(at) - set(symbols))
    if stray:
        raise PlanError(f"formula --at: {stray[0]} is not a symbol of the plan (its symbols: "
                        f"{', '.join(symbols) or 'none'})")
    try:
        return pick(bind(plan, {**DEFAULT_BINDING, **at}))
    except PlanError:
        return pick(bind(plan, dict(DEFAULT_BINDING)))


def formula_answer(model: ModelSpec, hardware: Hardware, plan: Plan, metric: str, choice, *,
                   at: dict[str, int] | None = None, latex: bool = False, checkpoints=()) -> Priced:
    """``formula``: the closed form of ``metric`` over ``plan`` on the degrees of the deployment ``choice``
    (:func:`~.summaries.formula_summary`), bound at ``at``; a time is on SOL, a count has no basis.

    >>> from v41graph import load_model
    >>> from v41graph.costs.hardware import load_hardware
    >>> from v41graph.analysis.mapping_search import explicit
    >>> from v41graph.symbols import N
    >>> model, hw = load_model(), load_hardware("h200_sxm")
    >>> choice = explicit(model, hw, Plan([Request.prefill(8192)], tp=8, ep=8))
    >>> a = formula_answer(model, hw, Plan([Request.prefill(N)]), "token_layers", choice)
    >>> a.basis, a.body["symbols"]
    (None, ['N'])
    """
    from .basis import basis_record
    from .summaries import formula_summary
    from .symbolic.query import closed_form
    m = choice.mapping
    plan = plan.with_policies(tp=m.tp, ep=m.ep, dp=m.dp)  # on the deployment's degrees
    cf = closed_form(model, plan, metric, hardware=hardware, binding=at or None)
    data = formula_summary(cf, hardware=hardware.name, latex=latex)
    return Priced(data, basis_record("sol") if metric == "sol_time" else None, choice, tuple(checkpoints))


def compile_answer(model: ModelSpec, asked: Plan, choice, *, check: bool = True) -> Priced:
    """``compile``: ``asked`` on the degrees of the deployment ``choice``, lowered and passed
    (:func:`~v41graph.passes.compile_graph`, ``check``: verify between the passes) and summarised
    (:func:`~.summaries.compile_summary`); unpriced, and no checkpoint (the graph is the same on every one).

    >>> from v41graph import load_model
    >>> from v41graph.costs.hardware import load_hardware
    >>> from v41graph.analysis.mapping_search import explicit
    >>> model = load_model()
    >>> choice = explicit(model, load_hardware("h200_sxm"), Plan([Request.prefill(512)], tp=8, ep=8))
    >>> a = compile_answer(model, Plan([Request.prefill(512)]), choice, check=False)
    >>> a.basis, a.checkpoint, a.deployment.mapping.tp
    (None, (), 8)
    """
    from ..passes import compile_graph
    from .summaries import compile_summary
    m = choice.mapping
    plan = asked.with_policies(tp=m.tp, ep=m.ep, dp=m.dp)  # on the deployment's degrees
    return Priced(compile_summary(model, compile_graph(model, plan, check=check), plan), None, choice)


__all__ = ["HOT_CACHE_ROWS", "CostAnswer", "compile_answer", "cost_answer", "formula_answer", "formula_deployment",
           "memory_answer", "memory_workload"]
