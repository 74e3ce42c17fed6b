"""``fpm predict | evaluate | system | gap``'s answers, typed: the estimator each phase takes, the prediction or error
with it, and a table's SOL gap with the runtime basis fitted on each kernel basis.

The command loads the table, parses the query and prints the answer; which estimator values a shape
(:func:`estimators`: the one named, else the leave-one-out choice) and what is fitted are chosen here.

>>> from v41graph import load_model
>>> from v41graph.costs.fpm.load import load_table
>>> from v41graph.costs.fpm.predict import Query
>>> table = load_table("aisimulate-gb300-off-v1")
>>> a = predict_answer(load_model(), table, Query.make("decode", 2, None, past_kv=700), allow_unadmitted=True)
>>> a.prediction.tier, sorted(a.selection)
('estimated', ['chosen', 'why'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..answer import TypedAnswer, part


def _to_dict(value: Any) -> Any:
    return value.to_dict()


def estimators(table, sol, estimator: str = "chosen") -> tuple[dict[str, str], dict | None]:
    """(phase → estimator, the selection's record or None): ``estimator`` for both phases where one is named,
    else the leave-one-out choice over ``table`` (:func:`~v41graph.costs.fpm.select.choose`) and its record."""
    if estimator != "chosen":
        return {"prefill": estimator, "decode": estimator}, None
    from ...costs.fpm.select import choose
    selection = choose(table, sol)
    return selection.chosen, selection.to_dict()


@dataclass(frozen=True)
class PredictAnswer(TypedAnswer):
    """``fpm predict``: the prediction (:class:`~v41graph.costs.fpm.predict.Answer`, its record inlined) and
    which estimator leave-one-out chose and why (None where it chose none: a refusal, an estimator named)."""

    prediction: Any = part(inline=True, as_json=_to_dict)
    selection: dict[str, Any] | None = None


def predict_answer(model, table, query, *, replay: str | None = None, allow_unadmitted: bool = False,
                   sol_reference: bool = False, sol_fallback: bool = False,
                   estimator: str = "chosen") -> PredictAnswer:
    """``fpm predict`` of ``query`` from ``table`` (admission checked first); ``replay``: the query's own decoder
    replay policy (its identity is otherwise the table's); ``sol_reference`` / ``sol_fallback``: the SOL
    reference beside the answer, or answering outside the measured domain."""
    from ...costs.fpm.predict import predict, refuse_unadmitted
    from .fpm_reference import sol_reference as reference_of
    refuse_unadmitted(table, allow_unadmitted)  # before the selection's work
    identity = None
    if replay is not None:  # the query's own policy; every other field as the table's
        identity = table.identity.with_fields(decoder_replay=replay, admission="query")
    sol = reference_of(table.identity, model=model)
    mismatch = identity is not None and table.identity.differences(identity)
    # no selection where the answer is a refusal anyway (no points, another identity)
    chosen, selection = estimators(table, sol, estimator) if table.points and not mismatch else ({}, None)
    answer = predict(table, query, identity=identity, allow_unadmitted=allow_unadmitted,
                     reference=sol if sol_reference else None, sol_fallback=sol if sol_fallback else None,
                     estimator=chosen.get(query.phase, "interpolation"), sol=sol)
    return PredictAnswer(answer, None if selection is None else {"chosen": selection["chosen"],
                                                                  "why": selection["why"]})


@dataclass(frozen=True)
class EvaluateAnswer(TypedAnswer):
    """``fpm evaluate``: the error (:class:`~v41graph.costs.fpm.evaluate.Evaluation`, inlined), the estimator of
    each phase and the leave-one-out selection's record (None where one was named)."""

    evaluation: Any = part(inline=True, as_json=_to_dict)
    estimator: dict[str, str] = part(default_factory=dict)
    selection: dict[str, Any] | None = None


def evaluate_answer(model, table, holdout=None, *, holdout_name: str | None = None, sol_reference: bool = False,
                    estimator: str = "chosen") -> EvaluateAnswer:
    """``fpm evaluate``: leave-one-out over ``table``, or the error on ``holdout`` points (from ``holdout_name``)."""
    from ...costs.fpm.evaluate import evaluate
    from .fpm_reference import sol_reference as reference_of
    sol = reference_of(table.identity, model=model)
    chosen, selection = estimators(table, sol, estimator)
    ev = evaluate(table, holdout, method=None if holdout is None else f"holdout {holdout_name}",
                  reference=sol if sol_reference else None, estimator=chosen, sol=sol)
    return EvaluateAnswer(ev, chosen, selection)


def system_gpu(table, hardware: str | None = None) -> str:
    """The GPU ``fpm system`` prices the plan on: ``hardware``'s name (an alias resolved, a bad name refused),
    else the GPU the ``table`` was measured on.

    >>> from v41graph.costs.fpm.load import load_table
    >>> table = load_table("aisimulate-gb200-calibration-v1")
    >>> system_gpu(table), system_gpu(table, "h200")
    ('gb200', 'h200_sxm')
    """
    from ...costs.hardware import load_hardware
    return load_hardware(hardware).name if hardware else table.identity.gpu


def system_answer(table, plan, gpu: str, *, allow_unadmitted: bool = False):
    """``fpm system``: TTFT, ITL and throughput of ``plan`` from ``table``'s forward times on the table's own
    deployment (its runtime) on ``gpu`` (:func:`system_gpu`), as a :class:`~v41graph.analysis.answer.Priced`
    answer with no basis (the table's own)."""
    from ...costs.fpm.system_figures import fpm_system_figures
    from ...ir.identity import runtime_of
    from ..answer import Priced
    result = fpm_system_figures(table, plan, gpu, runtime_of(table.identity), allow_unadmitted=allow_unadmitted)
    return Priced(result.to_dict())


def table_gap(model, table, *, hybrid: bool = False) -> dict[str, Any]:
    """``fpm gap`` of one table: measured vs SOL (and hybrid) at every point
    (:func:`~.fpm_gap.sol_gap`), with the runtime basis fitted on each kernel basis (``runtime_fit``)."""
    from ...costs.measured.tiers import CostMode
    from .fpm_gap import sol_gap
    from .fpm_reference import sol_reference
    from .runtime_basis import fit_runtime
    measured = sol_reference(table.identity, model=model, cost=CostMode("hybrid")) if hybrid else None
    sol = sol_reference(table.identity, model=model)
    runtime = {"sol": fit_runtime(table, sol, "sol").to_dict()}  # the engine's own cost on top of each basis
    if measured is not None:
        runtime["hybrid"] = fit_runtime(table, measured, "hybrid").to_dict()
    return {**sol_gap(table, sol, measured).to_dict(), "runtime_fit": runtime}


@dataclass(frozen=True)
class GapAnswer(TypedAnswer):
    """``fpm gap --json``: each table's gap (:func:`table_gap`) and what the plot wrote (None without one)."""

    tables: tuple = ()
    plot: str | None = None


__all__ = ["EvaluateAnswer", "GapAnswer", "PredictAnswer", "estimators", "evaluate_answer", "predict_answer",
           "system_answer", "system_gpu", "table_gap"]
