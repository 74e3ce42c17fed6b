"""The ``v41graph`` command line.

Each subcommand prints text, or with ``--json`` a machine-readable object. Bad input exits
with status 2 and one line on stderr naming the problem; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any, Callable, Sequence

from ..errors import V41Error
from ..model.config import load_model
from .cost_options import add_cost_options, cost_mode_from_args
from ..version import __version__
from .ask import add_ask_parser
from . import compare, dot_options, plot, sweep
from .fpm import add_fpm_parser
from .serving import add_serving_parsers
from .plan_options import add_mapping_options, add_plan_options, plan_from_args, token_count


class CliError(V41Error):
    """A command-line argument is invalid."""


def _emit(args: argparse.Namespace, data: dict[str, Any], text: Callable[[dict[str, Any]], str]) -> None:
    print(json.dumps(data, indent=2) if args.json else text(data))


def _model(args: argparse.Namespace):
    """The ``--model``; ``--allow-past-max-position`` lifts its max_position_embeddings on purpose."""
    model = load_model(args.model)
    return replace(model, max_position=None) if getattr(args, "allow_past_max_position", False) else model


# Each command imports the backends it uses: `v41graph cost` loads neither sympy, networkx nor the
# measured tables (issue 14); the parsers below need only the option modules.
def cmd_layout(args: argparse.Namespace) -> None:
    from ..backends.summaries import layout_summary
    from ..backends.terminal import layout_text
    _emit(args, layout_summary(load_model(args.model)), layout_text)


def cmd_memory(args: argparse.Namespace) -> None:
    from ..backends.summaries import memory_summary
    from ..backends.terminal import memory_text
    from ..costs.hardware import load_hardware
    from ..ir.plan import Plan, Request
    model = _model(args)
    if model.max_position is not None and args.context > model.max_position:  # cache_memory itself extrapolates
        raise CliError(f"memory --context: {args.context:,} tokens exceed max_position_embeddings "
                       f"{model.max_position:,} of model {model.name!r} (add --allow-past-max-position to extrapolate)")
    hardware = load_hardware(args.hardware)
    # the plan carries the mapping (validated against the model); its GPU holds one request of --context
    plan = Plan([Request.prefill(1)], tp=args.tp, ep=args.ep, dp=args.dp, ep_redundant=args.ep_redundant,
                engram_residency=args.engram,
                dspark="on" if args.dspark else "off").check(model)
    if args.engram == "hbm" and args.hot_cache_rows is not None:
        raise CliError("memory --hot-cache-rows: a hot cache goes with --engram host (the tables are in HBM)")
    hot = (65536 if args.hot_cache_rows is None else args.hot_cache_rows) if args.engram == "host" else 0
    _emit(args, memory_summary(model, args.context, dspark=args.dspark, hardware=hardware, plan=plan,
                               hot_cache_rows=hot), memory_text)


def cmd_compile(args: argparse.Namespace) -> None:
    from ..backends.summaries import compile_summary
    from ..backends.terminal import compile_text
    from ..passes import compile_graph
    model = _model(args)
    _emit(args, compile_summary(model, compile_graph(model, plan_from_args(args), check=args.check)), compile_text)


def cmd_dot(args: argparse.Namespace) -> None:
    chosen, args.layers = args.layers, args.layers or range(19, 21)  # --collapse without --layers: all
    from ..backends.dot import render_dot, write_diagram
    from ..ir.lower.blocks import lower
    from ..passes import compile_graph
    if args.json:
        raise CliError("dot: --json has no effect here: the diagram is DOT text (or SVG with -o FILE.svg); "
                       "for machine-readable nodes and passes use `compile --json`")
    model = _model(args)
    last = len(model.layers) + len(model.draft_blocks) - 1
    if args.layers.stop - 1 > last:  # checked before any work: a huge range would take forever to draw
        raise CliError(f"dot --layers: {args.layers.start}:{args.layers.stop - 1} goes past the last layer "
                       f"{last} of model {model.name!r}")
    plan = plan_from_args(args)
    if args.collapse and args.costs is False:
        raise CliError("dot: --collapse draws layer times; it cannot be combined with --no-costs")
    if dot_options.wants_costs(args):  # times need the scheduled (passed) graph
        text = dot_options.cost_dot(args, model, plan, chosen)
    else:
        text = render_dot(compile_graph(model, plan).graph if args.passes else lower(model, plan), layers=args.layers)
    if args.output:
        print(write_diagram(text, args.output))
    else:
        print(text, end="")


def cmd_report(args: argparse.Namespace) -> None:
    """Write the report folder (``--out``); print its summary, or with ``--json`` its report.json."""
    import os

    from ..backends.markdown_report import write_report
    from ..costs.hardware import ALIASES, load_hardware
    model = load_model(args.model)
    load_hardware(args.hardware)  # a bad name fails here, in one line, before any work
    summary = write_report(args.out, model=model, hardware=ALIASES.get(args.hardware, args.hardware),
                           cost=cost_mode_from_args(args))
    if args.json:
        with open(os.path.join(args.out, "report.json"), encoding="utf-8") as f:
            print(f.read(), end="")
    else:
        print(summary)


def cmd_cost(args: argparse.Namespace) -> None:
    from ..backends.summaries import cost_summary
    from ..backends.terminal import cost_text
    from ..costs.hardware import load_hardware
    from ..passes import schedule
    model = _model(args)
    hardware = load_hardware(args.hardware)  # a bad name fails before anything is compiled
    plan = plan_from_args(args)
    summary = cost_summary(model, plan, schedule(model, plan, hardware, cost=cost_mode_from_args(args)), hardware)
    _emit(args, summary, lambda d: cost_text({**d, "per_node": args.per_node}))


def _at(text: str | None) -> dict[str, int]:
    """``--at N=131072`` or ``--at P=100,S=28`` (counts take K / M like the plan options)."""
    out: dict[str, int] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        try:
            out[name.strip()] = token_count(value) if sep else None
        except argparse.ArgumentTypeError:
            out[name.strip()] = None
        if out[name.strip()] is None or out[name.strip()] < 1:
            raise CliError(f"formula --at: {part.strip()!r} is not SYMBOL=COUNT with a count ≥ 1 (e.g. N=131072)")
    return out


def cmd_formula(args: argparse.Namespace) -> None:
    import sympy

    from ..backends.query import METRICS, closed_form
    from ..backends.summaries import formula_summary
    from ..backends.terminal import formula_text
    from ..costs.hardware import load_hardware
    if args.metric not in METRICS:
        raise CliError(f"formula: unknown metric {args.metric!r} (known: {', '.join(METRICS)})")
    model = _model(args)
    hardware = load_hardware(args.hardware)
    plan = plan_from_args(args)
    at = _at(args.at)
    symbols = {s.name for r in plan.requests for v in (r.cached, r.new, r.copies) if isinstance(v, sympy.Basic)
               for s in v.free_symbols}
    stray = sorted(set(at) - symbols)
    if stray:
        raise CliError(f"formula --at: {stray[0]} is not a symbol of the plan (its symbols: "
                       f"{', '.join(sorted(symbols)) or 'none'})")
    cf = closed_form(model, plan, args.metric, hardware=hardware, binding=at or None)
    data = formula_summary(cf, hardware=hardware.name, latex=args.latex)
    if args.latex and not args.json:
        print(sympy.latex(cf.expr))
    else:
        _emit(args, data, formula_text)


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's default in ``--help``: argparse's own ``(default: …)`` where the value reads
    well, the help text's own wording where it says one already, none for flags and "no value"."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if isinstance(action, argparse._StoreTrueAction) and "(default" not in text:
            return f"{text} (default: off)"
        if "(default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # one line, exit 2, no usage dump
        raise CliError(f"{self.prog}: {message}")


#: ``v41graph [options]`` with no subcommand is ``v41graph report [options]``
DEFAULT_COMMAND = "report"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="v41graph", description="Dataflow graph compiler with cost passes for DeepSeek-V4.1. "
                     f"With no command, `v41graph [options]` runs `v41graph {DEFAULT_COMMAND} [options]`.")
    parser.add_argument("--version", action="version", version=__version__,
                        help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument("--model", default=None, help="built-in model name or path to a config.json "
                        "(default: deepseek-v4.1-flash)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    p = sub.add_parser("layout", parents=[common], help="per-layer paths, KV owners and Top-K producers")
    p.set_defaults(func=cmd_layout)
    p = sub.add_parser("memory", parents=[common], help="resident weights and per-request cache memory")
    p.add_argument("--context", type=token_count, required=True, help="tokens held by the request (e.g. 128K)")
    p.add_argument("--dspark", action="store_true", help="count the DSpark draft blocks' SWA rings")
    p.add_argument("--allow-past-max-position", action="store_true",
                   help="accept a context past the model's max_position_embeddings (extrapolation) "
                        "(default: off)")
    p.add_argument("--hardware", default="h200_sxm", help="GPU whose capacity the per-GPU memory is held against "
                   "(default: h200_sxm)")
    add_mapping_options(p, redundant=True)
    p.add_argument("--engram", choices=("hbm", "host"), default="hbm", help="where the Engram tables live "
                   "(default: hbm)")
    p.add_argument("--hot-cache-rows", type=token_count, default=None, help="with --engram host: rows of each "
                   "Engram table kept in HBM (default: 65536)")
    p.set_defaults(func=cmd_memory)
    p = sub.add_parser("compile", parents=[common], help="lower a plan and run the pass pipeline; print each "
                       "pass's report")
    add_plan_options(p)
    p.add_argument("--check", action="store_true", help="run verify() between passes")
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("dot", parents=[common], help="DOT diagram of a plan's graph (SVG with -o FILE.svg)")
    add_plan_options(p)
    p.add_argument("--layers", type=dot_options.layer_range, default=None, help="layers A:B inclusive (default: 19:20)")
    p.add_argument("--passes", action="store_true", help="draw the graph after the pass pipeline (fused), without "
                   "times unless --costs is given (default: off)")
    dot_options.add(p)
    p.add_argument("-o", "--output", default=None, help="FILE.dot or FILE.svg (default: DOT text on stdout)")
    p.set_defaults(func=cmd_dot)
    p = sub.add_parser("cost", parents=[common], help="SOL cost of a plan: critical path, breakdowns, TTFT/ITL")
    add_plan_options(p)
    p.add_argument("--hardware", default="h200_sxm", help="built-in name (h200_sxm, b200_sxm, gb200, gb300) "
                   "or a hardware JSON file (default: h200_sxm)")
    add_cost_options(p)
    p.add_argument("--per-node", action="store_true", help="with --cost op|hybrid: every node's time, tier and "
                   "table in the text output (default: off, the 12 longest; JSON always has them)")
    p.set_defaults(func=cmd_cost)
    p = sub.add_parser("formula", parents=[common], help="closed form of a metric; counts may be the symbols "
                       "N, B, L, P, S (default plan: --prefill N)")
    p.add_argument("metric", help="token_layers, flops, bytes, weights_bytes, kv_read_bytes, kv_bytes, "
                   "comm_bytes or sol_time")
    add_plan_options(p, default_prefill="N", symbolic=True)
    p.add_argument("--hardware", default="h200_sxm", help="hardware for sol_time (default: h200_sxm)")
    p.add_argument("--latex", action="store_true", help="print the expression as LaTeX")
    p.add_argument("--at", default=None, metavar="SYMBOL=COUNT[,…]",
                   help="the point whose regime to print (one symbol: the piece holding there and its range; "
                   "several: where the fusion and critical path are chosen) (default: one symbol, the whole "
                   "domain as a Piecewise; several, N = L = P = 8192, B = 64, S = 1024)")
    p.set_defaults(func=cmd_formula)
    p = sub.add_parser("report", parents=[common], help="the main job: a folder with report.md, report.json "
                       "and a diagram; prints a summary")
    p.add_argument("--out", default="v41graph-report", help="folder for the report's files (default: %(default)s)")
    p.add_argument("--hardware", default="h200_sxm", help="hardware for the SOL figures (default: h200_sxm)")
    add_cost_options(p)
    p.set_defaults(func=cmd_report)
    add_fpm_parser(sub, common)
    add_ask_parser(sub, common)
    add_serving_parsers(sub, common)
    from . import dspark, engram
    engram.register(sub, common)
    dspark.register(sub, common)
    for register in (sweep.add_sweep_parser, compare.add_compare_parser, plot.add_plot_parser):
        register(sub, _Parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``v41graph`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = [DEFAULT_COMMAND, *argv]  # `v41graph --json` is `v41graph report --json`
    try:
        args = build_parser().parse_args(argv)
        args.func(args)
    except V41Error as exc:
        print(f"v41graph: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # `v41graph layout | head` is fine
        return 0
    except OSError as exc:  # an output folder or file that cannot be written
        print(f"v41graph: error: {exc.strerror or exc}: {exc.filename!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
