"""``v41graph ask …``: questions answered by solving (:mod:`v41graph.analysis.symbolic.solvers`), and
``v41graph diff``: two compiled graphs compared node by node (:mod:`v41graph.analysis.diff`).

Two plans are given by one option with two comma-separated values (``--replay off,bounded``,
``--fusion unfused,single-pass`` or ``--model a,b``); every other option is shared.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..errors import PlanError
from ..ir.plan import DECODER_REPLAY, FUSION_PROFILES, Plan
from ..model.config import load_model
from .options.cost_options import add_hardware_option
from .options.plan_options import add_mapping_options, token_count
from .options.resolved import Resolved


def _ratio(text: str) -> float:
    """``--ratio``: a / b to reach, a finite number > 0 (nan would never be reached, and a ratio
    <= 0 holds at every N)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite ratio > 0 (e.g. 1.2)")
    return value


def _pair(choices: tuple[str, ...] | None):
    def parse(text: str) -> tuple[str, ...]:
        values = tuple(v.strip() for v in text.split(","))  # an empty part is an error here: "a," names no B
        if len(values) > 2 or any(choices is not None and v not in choices for v in values) or "" in values:
            raise argparse.ArgumentTypeError(f"{text!r}: one or two comma-separated values"
                                             + (f" of {', '.join(choices)}" if choices else ""))
        return values
    return parse


def _models(args: argparse.Namespace) -> tuple[str, ...]:
    """``--model`` (the common option): one name, or two comma-separated (``default``: the built-in default)."""
    return _pair(None)(args.model) if args.model else ("default",)


def _two(args: argparse.Namespace, degrees) -> tuple[tuple, tuple, Resolved]:
    """(model, plan policies) of a and of b (:func:`~v41graph.analysis.symbolic.ask_answers.two_plans`), each model
    loaded as the checkpoint ``--hardware`` runs, and the checkpoints they run."""
    from ..analysis.symbolic.ask_answers import two_plans
    (name_a, pa), (name_b, pb) = two_plans(args.command, _models(args), args.replay, args.fusion, degrees)
    a, b = _load(args, name_a), _load(args, name_b)
    return (a.model, pa), (b.model, pb), Resolved().also(a.checkpoints).also(b.checkpoints)


def _one_model(args: argparse.Namespace, resolved: Resolved):
    """The one ``--model`` (``resolved.model``: loaded as its checkpoint by :func:`_resolve`)."""
    models = _models(args)
    if len(models) != 1:
        raise PlanError(f"ask {args.question}: one --model, got {','.join(models)}")
    return resolved.model


def _load(args: argparse.Namespace, name: str) -> Resolved:
    """The model ``name`` (``default``: the built-in default) as the checkpoint ``--hardware`` runs."""
    from ..costs.hardware import load_hardware
    from .options.checkpoint_options import resolve_checkpoint
    return resolve_checkpoint(args, load_hardware(args.hardware), load_model(None if name == "default" else name))


def _print(args: argparse.Namespace, answer, text, resolved: Resolved) -> None:
    """``answer`` (a dict or a typed answer) under the deployment, basis and checkpoints it was priced on
    (``resolved``): ``--json`` prints the :class:`~v41graph.analysis.answer.Priced` answer's ``to_json()``."""
    from ..analysis.answer import Priced, TypedAnswer
    from .options.checkpoint_options import shown_checkpoints
    ran = tuple(shown_checkpoints(args, resolved.checkpoints))
    priced = Priced(answer, resolved.basis, resolved.mapping, ran)
    if args.json:
        print(priced.to_json())
    else:
        from ..render.terminal import header_lines
        lines = header_lines(priced.deployment, priced.basis, [c.line() for c in ran])
        body = answer.to_dict() if isinstance(answer, TypedAnswer) else answer
        print("".join(f"{line}\n" for line in lines) + text(body), end="")


def _resolve(args: argparse.Namespace) -> Resolved:
    """``ask``: the first model as its checkpoint, the deployment every answer is priced on (auto: the smallest
    that fits its workload, :func:`~v41graph.analysis.symbolic.ask_answers.ask_workload`) and the basis."""
    from ..analysis.symbolic.ask_answers import ask_basis, ask_workload
    from ..costs.hardware import load_hardware
    from .options.mapping_options import resolve_mapping
    q, models = args.question, _models(args)
    first = _load(args, models[0])
    work = ask_workload(q, context=args.context, prefill=args.prefill)
    # every question on the deployment `cost` picks for its workload (closed forms in N: at --prefill, as
    # `formula` at --at); counts under a mapping are per GPU, so they name it too
    choice = resolve_mapping(args, first.model, load_hardware(args.hardware), Plan([work]))
    return replace(first, mapping=choice, basis=ask_basis(q, by_op=args.by_op, metric=args.metric))


def cmd_ask(args: argparse.Namespace) -> None:
    from ..analysis.symbolic.ask_answers import (derivative_answer, max_context_answer, plan_policies, prompt_plan,
                                                 sensitivity_answer)
    from ..render.text.ask_text import answer_text, derivative_text, sensitivity_text
    from ..analysis.symbolic.solvers import compute_bound_batch, crossover
    q = args.question
    res = _resolve(args)
    m = res.mapping.mapping  # the deployment's degrees
    if q == "max-context":
        answer = max_context_answer(_one_model(args, res), res.mapping, args.hardware, dspark=args.dspark)
        return _print(args, answer, answer_text, res)
    if q == "compute-bound":
        answer = compute_bound_batch(_one_model(args, res), args.context, args.hardware, tp=m.tp, ep=m.ep, dp=m.dp)
        return _print(args, answer, answer_text, res)
    if q == "crossover":
        (ma, pa), (mb, pb), sides = _two(args, m)
        answer = crossover(ma, prompt_plan(pa), mb, prompt_plan(pb), metric=args.metric, ratio=args.ratio,
                           hardware=args.hardware)
        return _print(args, answer, answer_text, res.also(sides.checkpoints))
    model = _one_model(args, res)
    policies = plan_policies(args.replay[0], args.fusion[0], m)
    if q == "derivative":
        answer = derivative_answer(model, prompt_plan(policies), args.hardware, metric=args.metric, by_op=args.by_op)
        return _print(args, answer, derivative_text, res)
    answer = sensitivity_answer(model, prompt_plan(policies, args.prefill), args.hardware, args.prefill)
    _print(args, answer, sensitivity_text, res)


def cmd_diff(args: argparse.Namespace) -> None:
    from ..analysis.diff import plans_diff
    from ..render.text.diff_text import diff_text
    a, b, sides = _two(args, args)  # diff's degrees: the options as given (default 1)
    _print(args, plans_diff(a, b, args.hardware, args.prefill), lambda d: diff_text(d, limit=args.limit), sides)


def _shared(p: argparse.ArgumentParser) -> None:
    p.add_argument("--replay", type=_pair(DECODER_REPLAY), default=("off",),
                   help="decoder replay, or two: off,bounded (default: off)")
    p.add_argument("--fusion", type=_pair(FUSION_PROFILES + ("default",)), default=("default",),
                   help="fusion profile, or two (default: the model family's)")
    add_hardware_option(p, "GPU")
    add_mapping_options(p, auto=p.prog.endswith(" ask"))  # ask prices a deployment; diff compares two graphs


def add_ask_parser(sub, common) -> None:
    """Register ``ask`` and ``diff`` on the top-level subparsers."""
    p = sub.add_parser("ask", parents=[common], help="questions answered by solving: max-context, compute-bound, "
                       "crossover, derivative, sensitivity")
    p.add_argument("question", choices=("max-context", "compute-bound", "crossover", "derivative", "sensitivity"))
    _shared(p)
    p.add_argument("--dspark", action="store_true", help="max-context: count the DSpark SWA rings")
    p.add_argument("--context", type=token_count, default=8192, help="compute-bound: decode context (default: 8192)")
    p.add_argument("--metric", default="sol_time", help="crossover / derivative: the metric (default: sol_time)")
    p.add_argument("--ratio", type=_ratio, default=1.2, help="crossover: a / b ratio to reach (default: 1.2)")
    p.add_argument("--by-op", action="store_true", help="derivative: d sol_time / d N by op family")
    p.add_argument("--prefill", type=token_count, default=8192, help="sensitivity: prompt length; crossover, "
                   "derivative: the prompt whose fit picks the auto mapping (default: 8192)")
    p.set_defaults(func=cmd_ask)
    p = sub.add_parser("diff", parents=[common], help="two scheduled graphs compared node by node (give one of "
                       "--model/--replay/--fusion two values)")
    _shared(p)
    p.add_argument("--prefill", type=token_count, default=4096, help="prompt length (default: 4096)")
    p.add_argument("--limit", type=int, default=40, help="nodes listed per kind in text (default: 40)")
    p.set_defaults(func=cmd_diff)


__all__ = ["add_ask_parser"]
