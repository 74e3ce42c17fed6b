"""The ``v41graph`` command line.

Each subcommand prints text, or with ``--json`` a machine-readable object. Bad input exits
with status 2 and one line on stderr naming the problem; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Sequence

from .backends.summary import layout_summary, memory_summary
from .cli_plan import add_plan_options, plan_from_args
from .backends.text import layout_text, memory_text
from .errors import V41Error
from .lower import lower
from .model import load_model

REPORT_CONTEXTS = (4096, 131072, 1048576)
_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class CliError(V41Error):
    """A command-line argument is invalid."""


def token_count(text: str) -> int:
    """Parse a token count: ``4096``, ``128K`` (×1024), ``1M`` (×1,048,576); never negative."""
    raw = text.strip().replace("_", "").replace(",", "")
    scale = _SUFFIX.get(raw[-1:].lower(), 1)
    digits = raw[:-1] if scale != 1 else raw
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative token count (e.g. 4096, 128K, 1M)")
    return int(digits) * scale


def _emit(args: argparse.Namespace, data: dict[str, Any], text: Callable[[dict[str, Any]], str]) -> None:
    print(json.dumps(data, indent=2) if args.json else text(data))


def cmd_layout(args: argparse.Namespace) -> None:
    _emit(args, layout_summary(load_model(args.model)), layout_text)


def cmd_memory(args: argparse.Namespace) -> None:
    _emit(args, memory_summary(load_model(args.model), args.context, dspark=args.dspark), memory_text)


def cmd_compile(args: argparse.Namespace) -> None:
    from .backends.reports import compile_summary
    from .backends.text import compile_text
    from .passes import compile_graph
    model = load_model(args.model)
    _emit(args, compile_summary(model, compile_graph(model, plan_from_args(args), check=args.check)), compile_text)


def _layer_range(text: str) -> range:
    a, sep, b = text.partition(":")
    if not (a.isdigit() and (not sep or b.isdigit())):
        raise argparse.ArgumentTypeError(f"{text!r} is not a layer range A:B (inclusive) or a layer")
    return range(int(a), int(b if sep else a) + 1)


def cmd_dot(args: argparse.Namespace) -> None:
    from .backends.dot import render_dot, write_diagram
    from .passes import compile_graph
    model = load_model(args.model)
    plan = plan_from_args(args)
    graph = compile_graph(model, plan).graph if args.passes else lower(model, plan)
    text = render_dot(graph, layers=args.layers)
    if args.output:
        print(write_diagram(text, args.output))
    else:
        print(text, end="")


REPORT_DIAGRAM_LAYERS = range(18, 23)  # the encoder → decoder boundary: last encoder Reuse, 20 (Full), 21–22


def _report_diagram(model, out_dir: str) -> str:
    import os

    from .backends.dot import find_renderer, render_dot, write_diagram
    from .plan import Plan, Request
    os.makedirs(out_dir, exist_ok=True)
    text = render_dot(lower(model, Plan([Request.prefill(8192)])),
                      layers=REPORT_DIAGRAM_LAYERS, title=f"{model.name} · 8K prefill · layers 18–22")
    write_diagram(text, os.path.join(out_dir, "boundary.dot"))
    if find_renderer() is not None:
        return write_diagram(text, os.path.join(out_dir, "boundary.svg"))
    return f"wrote {os.path.join(out_dir, 'boundary.dot')} (no DOT renderer found for SVG)"


def cmd_report(args: argparse.Namespace) -> None:
    model = load_model(args.model)
    layout = layout_summary(model)
    memories = [memory_summary(model, n) for n in REPORT_CONTEXTS]
    if args.json:
        print(json.dumps({"layout": layout, "memory": memories}, indent=2))
        return
    print(layout_text(layout))
    for m in memories:
        print()
        print(memory_text(m))
    if model.family == "v4.1":
        print()
        print("diagram of an 8K prefill around the encoder → decoder boundary (layers 18–22): "
              + _report_diagram(model, args.out))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        raise CliError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="v41graph", description="Dataflow graph compiler with cost passes for DeepSeek-V4.1.")
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
    p.set_defaults(func=cmd_memory)
    p = sub.add_parser("compile", parents=[common], help="lower a plan and run the pass pipeline; print each "
                       "pass's report")
    add_plan_options(p)
    p.add_argument("--check", action="store_true", help="run verify() between passes")
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("dot", parents=[common], help="DOT diagram of a plan's graph (SVG with -o FILE.svg)")
    add_plan_options(p)
    p.add_argument("--layers", type=_layer_range, default=range(19, 21), help="layers A:B inclusive (default 19:20)")
    p.add_argument("--passes", action="store_true", help="draw the graph after the pass pipeline (fused)")
    p.add_argument("-o", "--output", default=None, help="FILE.dot or FILE.svg (default: DOT text on stdout)")
    p.set_defaults(func=cmd_dot)
    p = sub.add_parser("report", parents=[common], help="the main job: layout, memory and a diagram")
    p.add_argument("--out", default="v41graph-report", help="folder for the report's files")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``v41graph`` console script; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            args = build_parser().parse_args(["report", *(argv or [])])
        args.func(args)
    except V41Error as exc:
        print(f"v41graph: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `v41graph layout | head` is fine
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
