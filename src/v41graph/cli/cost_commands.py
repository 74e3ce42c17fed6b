"""``v41graph cost``, ``formula`` and ``report``: what a plan costs, in numbers and closed forms."""

from __future__ import annotations

import argparse

from .options.cost_options import add_cost_options, add_hardware_option, cost_mode_from_args
from .options.plan_options import add_plan_options, plan_from_args, token_count
from .options.checkpoint_options import resolve_checkpoint
from .shared import CliError, model_of
from .lists import comma_list
from .options.mapping_options import add_mapping_options
from .report import add_html_option, cmd_report, plan_page


def cmd_cost(args: argparse.Namespace) -> None:
    from ..analysis.plan_answers import cost_answer
    from ..render.terminal import cost_text
    from ..costs.hardware import load_hardware
    from .options.checkpoint_options import shown_checkpoints
    from .options.mapping_options import print_priced, resolve_mapping
    hardware = load_hardware(args.hardware)  # a bad name fails before anything is compiled
    ran = resolve_checkpoint(args, hardware, model_of(args))  # the checkpoint the GPU runs (checkpoint_options.py)
    model = ran.model
    asked = plan_from_args(args)
    choice = resolve_mapping(args, model, hardware, asked)
    mode = cost_mode_from_args(args)
    answer = cost_answer(model, hardware, asked, choice, mode, checkpoints=shown_checkpoints(args, ran.checkpoints))
    from ..render.text.family_text import family_lines as fams
    print_priced(args, answer, lambda d: cost_text({**d, "per_node": args.per_node},
                                                   fams(d["breakdown"]["by_family"])))
    plan_page(args, model, answer.plan, answer.compiled, mode, choice.line())


def _at(text: str | None) -> dict[str, int]:
    """``--at N=131072`` or ``--at P=100,S=28`` (counts take K / M like the plan options)."""
    out: dict[str, int] = {}
    for part in comma_list(text or "", allow_empty=True):
        name, sep, value = part.partition("=")
        try:
            out[name.strip()] = token_count(value) if sep else None
        except argparse.ArgumentTypeError:
            out[name.strip()] = None
        if out[name.strip()] is None or out[name.strip()] < 1:
            raise CliError(f"formula --at: {part.strip()!r} is not SYMBOL=COUNT with a count ≥ 1 (e.g. N=131072)")
    return out


def cmd_formula(args: argparse.Namespace) -> None:
    from ..analysis.plan_answers import formula_answer, formula_deployment
    from ..analysis.symbolic.query import METRICS
    from ..render.terminal import formula_text
    from ..costs.hardware import load_hardware
    from .options.checkpoint_options import shown_checkpoints
    from .options.mapping_options import print_priced, resolve_mapping
    if args.metric not in METRICS:
        raise CliError(f"formula: unknown metric {args.metric!r} (known: {', '.join(METRICS)})")
    hardware = load_hardware(args.hardware)
    ran = resolve_checkpoint(args, hardware, model_of(args))
    model, plan = ran.model, plan_from_args(args)
    at = _at(args.at)
    # the deployment `cost` picks (auto: the smallest that fits the plan at --at), or the mapping given
    choice = formula_deployment(plan, at, lambda bound: resolve_mapping(args, model, hardware, bound))
    answer = formula_answer(model, hardware, plan, args.metric, choice, at=at, latex=args.latex,
                            checkpoints=shown_checkpoints(args, ran.checkpoints))
    if args.latex and not args.json:
        print(answer.body["latex"])
    else:
        print_priced(args, answer, formula_text)


def add_cost_parsers(sub, common) -> None:
    p = sub.add_parser("cost", parents=[common], help="SOL cost of a plan: critical path, breakdowns, TTFT/ITL")
    add_plan_options(p, auto_mapping=True)
    add_hardware_option(p, "GPU the plan runs on")
    add_cost_options(p)
    add_html_option(p)
    p.add_argument("--per-node", action="store_true", help="with --cost op|hybrid: every node's time, tier and "
                   "table in the text output (default: off, the 12 longest; JSON always has them)")
    p.set_defaults(func=cmd_cost)
    p = sub.add_parser("formula", parents=[common], help="closed form of a metric; counts may be the symbols "
                       "N, B, L, P, S (default plan: --prefill N)")
    p.add_argument("metric", help="token_layers, flops, bytes, weights_bytes, kv_read_bytes, kv_bytes, "
                   "comm_bytes or sol_time")
    add_plan_options(p, default_prefill="N", symbolic=True, auto_mapping=True)
    add_hardware_option(p, "hardware for sol_time")
    p.add_argument("--latex", action="store_true", help="print the expression as LaTeX")
    p.add_argument("--at", default=None, metavar="SYMBOL=COUNT[,…]",
                   help="the point whose regime to print (one symbol: the piece holding there and its range; "
                   "several: where the fusion and critical path are chosen) (default: one symbol, the whole "
                   "domain as a Piecewise; several, N = L = P = 8192, B = 64, S = 1024)")
    p.set_defaults(func=cmd_formula)
    p = sub.add_parser("report", parents=[common], help="the main job: a folder with report.md, report.json, "
                       "report.html and a diagram; prints a summary")
    p.add_argument("--out", default="v41graph-report", help="folder for the report's files, written whole: built "
                   "in a hidden sibling and renamed into place, replacing an earlier report there (nothing of it "
                   "stays); a folder holding other files is refused (default: %(default)s)")
    p.add_argument("--force", action="store_true", help="replace the --out folder whole even when it holds files "
                   "the report does not write (default: off: such a folder is refused)")
    add_hardware_option(p, "hardware the report prices")
    add_mapping_options(p, auto=True)
    add_cost_options(p, serving=True)
    p.set_defaults(func=cmd_report)
