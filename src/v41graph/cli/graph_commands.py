"""``v41graph compile`` and ``v41graph dot``: the graph of a plan, after lowering and the passes."""

from __future__ import annotations

import argparse

from .options import dot_options as dot_options
from .options.plan_options import add_plan_options, on_mapping, plan_from_args
from .options.checkpoint_options import model_for
from .options.cost_options import add_hardware_option
from .shared import CliError, model_of


def cmd_compile(args: argparse.Namespace) -> None:
    from ..analysis.plan_answers import compile_answer
    from ..render.terminal import compile_text
    from ..costs.hardware import load_hardware
    from .options.mapping_options import print_priced, resolve_mapping
    model, hardware = model_of(args), load_hardware(args.hardware)
    # the deployment `cost` runs: fitted with the checkpoint the GPU runs (its experts' storage is what is held);
    # the graph and its counts are the model's as loaded, the same on every checkpoint, so no checkpoint is named
    asked = plan_from_args(args)
    choice = resolve_mapping(args, model_for(args, hardware, model), hardware, asked)
    print_priced(args, compile_answer(model, asked, choice, check=args.check), compile_text)


def cmd_dot(args: argparse.Namespace) -> None:
    from ..render.dot import drawn_layers, render_dot, write_diagram
    from ..ir.lower.blocks import lower
    from ..passes import compile_graph
    if args.json:
        raise CliError("dot: --json has no effect here: the diagram is DOT text (or SVG with -o FILE.svg); "
                       "for machine-readable nodes and passes use `compile --json`")
    from ..costs.hardware import load_hardware
    from ..render.terminal import header_lines
    from .options.mapping_options import resolve_mapping
    hardware = load_hardware(args.hardware)
    model = model_for(args, hardware, model_of(args))  # the checkpoint --hardware runs
    asked = plan_from_args(args)
    choice = resolve_mapping(args, model, hardware, asked)
    plan = on_mapping(asked, choice.mapping)  # on the deployment's degrees
    layers = drawn_layers(model, plan, args.layers)  # checked; --collapse without --layers draws all (cost_dot)
    if args.collapse and args.costs is False:
        raise CliError("dot: --collapse draws layer times; it cannot be combined with --no-costs")
    if dot_options.wants_costs(args):  # times need the scheduled (passed) graph
        text = dot_options.cost_dot(args, model, plan, layers)
    else:
        text = render_dot(compile_graph(model, plan).graph if args.passes else lower(model, plan), layers=layers)
    # the deployment as the diagram's first lines (DOT comments; an SVG keeps it in its source) and above the path
    text = "".join(f"// {line}\n" for line in header_lines(choice, None)) + text
    if args.output:
        print("\n".join(header_lines(choice, None) + [write_diagram(text, args.output)]))
    else:
        print(text, end="")


def add_graph_parsers(sub, common) -> None:
    p = sub.add_parser("compile", parents=[common], help="lower a plan and run the pass pipeline; print each "
                       "pass's report")
    add_plan_options(p, auto_mapping=True)
    add_hardware_option(p, "GPU whose memory the auto mapping fits")
    p.add_argument("--check", action="store_true", help="run verify() between passes")
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("dot", parents=[common], help="DOT diagram of a plan's graph (SVG with -o FILE.svg)")
    add_plan_options(p, auto_mapping=True)
    p.add_argument("--layers", type=dot_options.layer_range, default=None, help="layers A:B inclusive (default: 19:20)")
    p.add_argument("--passes", action="store_true", help="draw the graph after the pass pipeline (fused), without "
                   "times unless --costs is given (default: off)")
    dot_options.add(p)
    p.add_argument("-o", "--output", default=None, help="FILE.dot or FILE.svg (default: DOT text on stdout)")
    p.set_defaults(func=cmd_dot)
