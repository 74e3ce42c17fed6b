"""``ask``'s answers, typed: what each question is priced on and the answer the command prints.

The command parses its options, calls these and prints the answer under its deployment and basis
(:class:`~v41graph.analysis.answer.Priced`); the solving itself is :mod:`.solvers`'.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.analysis.mapping_search import explicit
>>> hw = load_hardware("h200_sxm")
>>> w = ask_workload("max-context", context=8192, prefill=8192)
>>> (w.kind, w.prompt), ask_basis("max-context", by_op=False, metric="sol_time")
(('prefill', 1), None)
>>> print(max_context_answer(load_model(), explicit(load_model(), hw, Plan([Request.prefill(1)])), hw).to_json())
... # doctest: +ELLIPSIS
{
  "question": "max-context",
  "value": 0,
  "exact": true,
  "method": "ask max-context: the weights alone (... B per GPU) exceed h200_sxm's budget ..."
}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import CostError, PlanError
from ...ir.plan import Plan, Request
from ..answer import TypedAnswer, part
from ..basis import basis_record
from .solvers import Answer, max_context


def ask_workload(question: str, *, context: int, prefill: int) -> Request:
    """The request whose fit picks ``ask``'s auto mapping: one token for max-context (its answer is the
    context), a decode step at ``context`` for compute-bound, else a prompt of ``prefill``."""
    return {"max-context": Request.prefill(1), "compute-bound": Request.decode(context)}.get(
        question, Request.prefill(prefill))


def plan_policies(replay: str, fusion: str, degrees) -> dict[str, Any]:
    """The policies of an ``ask`` or ``diff`` plan: decoder ``replay``, ``fusion`` (``default``: the model
    family's, None) and the ``tp``, ``ep``, ``dp`` of ``degrees`` (a mapping, or anything with those three).

    >>> from v41graph.model.mapping import Mapping
    >>> plan_policies("bounded", "default", Mapping(tp=8, ep=8))
    {'decoder_replay': 'bounded', 'fusion': None, 'tp': 8, 'ep': 8, 'dp': 1}
    """
    return {"decoder_replay": replay, "fusion": None if fusion == "default" else fusion,
            "tp": degrees.tp, "ep": degrees.ep, "dp": degrees.dp}


def prompt_plan(policies: dict[str, Any], prefill: int | None = None) -> Plan:
    """The plan an ``ask`` question (or ``diff``) is asked of: one prompt of ``prefill`` tokens, or of the symbol
    N for the closed forms in N (crossover, derivative), under ``policies`` (:func:`plan_policies`).

    >>> prompt_plan({"decoder_replay": "bounded", "tp": 8}).requests[0].new, prompt_plan({}, 8192).requests[0].new
    (N, 8192)
    """
    from ...symbols import N
    return Plan([Request.prefill(N if prefill is None else prefill)], **policies)


def two_plans(command: str, models: tuple[str, ...], replay: tuple[str, ...], fusion: tuple[str, ...],
              degrees) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]:
    """(model name, plan policies) of plan a and of plan b, for ``ask crossover`` and ``diff``: the one of
    ``models``, ``replay``, ``fusion`` that holds two values varies, the others' one value is shared; both
    run on ``degrees`` (:func:`plan_policies`). Not exactly one pair is refused.

    >>> from v41graph.model.mapping import Mapping
    >>> a, b = two_plans("diff", ("default",), ("off", "bounded"), ("default",), Mapping())
    >>> a, b[1]["decoder_replay"]
    (('default', {'decoder_replay': 'off', 'fusion': None, 'tp': 1, 'ep': 1, 'dp': 1}), 'bounded')
    >>> two_plans("diff", ("a", "b"), ("off", "bounded"), ("default",), Mapping())
    Traceback (most recent call last):
    ...
    v41graph.errors.PlanError: diff: give exactly one of --model, --replay, --fusion two comma-separated values \
(the two plans), got 2
    """
    given = {"model": models, "replay": replay, "fusion": fusion}
    varied = [k for k, values in given.items() if len(values) == 2]
    if len(varied) != 1:
        raise PlanError(f"{command}: give exactly one of --model, --replay, --fusion two comma-separated "
                        f"values (the two plans), got {len(varied)}")
    out = []
    for i in (0, 1):
        pick = {k: values[i if k in varied else 0] for k, values in given.items()}
        out.append((pick["model"], plan_policies(pick["replay"], pick["fusion"], degrees)))
    return out[0], out[1]


def ask_basis(question: str, *, by_op: bool, metric: str) -> dict[str, Any] | None:
    """The basis record of a timed answer (SOL), None for one that is memory (max-context) or a count.

    >>> ask_basis("crossover", by_op=False, metric="sol_time")["mode"]
    'sol'
    >>> ask_basis("crossover", by_op=False, metric="flops"), ask_basis("sensitivity", by_op=False, metric="x")["mode"]
    (None, 'sol')
    """
    timed = question in ("compute-bound", "sensitivity") or by_op or (question != "max-context"
                                                                      and metric == "sol_time")
    return basis_record("sol") if timed else None


@dataclass(frozen=True)
class Unfit(TypedAnswer):
    """max-context on a deployment whose weights alone overflow: no context fits, and ``method`` says why."""

    question: str
    value: int
    exact: bool
    method: str


def max_context_answer(model, choice, hardware, *, dspark: bool = False) -> Answer | Unfit:
    """``ask max-context`` on the deployment ``choice`` (a
    :class:`~v41graph.analysis.mapping_search.MappingChoice`): :func:`~.solvers.max_context` of one request,
    or, where the mapping does not fit and its weights alone overflow, 0 with the reason."""
    m = choice.mapping
    plan = Plan([Request.prefill(1)], tp=m.tp, ep=m.ep, dp=m.dp)
    try:
        return max_context(model, plan, hardware, dspark=dspark)
    except CostError as exc:  # an explicit mapping whose weights alone overflow: no context fits; say why
        if choice.fits:
            raise
        return Unfit("max-context", 0, True, str(exc))


@dataclass(frozen=True)
class RateByOp(TypedAnswer):
    """d sol_time / d N by op family: each family's rate as a string (sympy)."""

    question: str
    by_op: dict[str, str]


@dataclass(frozen=True)
class Derivative(TypedAnswer):
    """A metric's closed form f(N) and its right derivative, in plain sympy (as ``formula`` writes them)."""

    question: str
    expr: str
    derivative: str
    valid_range: Any


def derivative_answer(model, plan: Plan, hardware, *, metric: str, by_op: bool) -> RateByOp | Derivative:
    """``ask derivative`` of ``plan`` (a prompt of N tokens): by op family (sol_time) with ``by_op``, else the
    ``metric``'s closed form and its right derivative in N.

    >>> from v41graph import load_model
    >>> from v41graph.symbols import N
    >>> d = derivative_answer(load_model(), Plan([Request.prefill(N)]), "h200_sxm", metric="flops", by_op=False)
    >>> d.question, d.valid_range
    ('d flops / d N', (1, 1048576))
    """
    from ...chance import plain
    from ...symbols import N
    from .calculus import right_derivative
    from .query import closed_form
    from .solvers import ttft_by_op_rate
    if by_op:
        rates = ttft_by_op_rate(model, plan, hardware)
        return RateByOp("d sol_time / d N by op family", {k: str(v) for k, v in rates.items()})
    cf = closed_form(model, plan, metric, hardware=hardware)
    return Derivative(f"d {metric} / d N", str(plain(cf.expr)), str(plain(right_derivative(cf.expr, N))),
                      cf.valid_range)


@dataclass(frozen=True)
class Sensitivity(TypedAnswer):
    """``ask sensitivity`` at a prompt of ``prefill`` tokens: the SOL time and its derivatives in bandwidth and
    peak (:func:`~.solvers.sensitivity`'s figures, inlined)."""

    question: str
    prefill: int
    figures: dict[str, float] = part(inline=True)


def sensitivity_answer(model, plan: Plan, hardware, prefill: int) -> Sensitivity:
    """``ask sensitivity`` of ``plan`` (a prompt of ``prefill`` tokens)."""
    from .solvers import sensitivity
    return Sensitivity("sensitivity", prefill, sensitivity(model, plan, hardware))


__all__ = ["Derivative", "RateByOp", "Sensitivity", "Unfit", "ask_basis", "ask_workload", "derivative_answer",
           "max_context_answer", "plan_policies", "prompt_plan", "sensitivity_answer", "two_plans"]
