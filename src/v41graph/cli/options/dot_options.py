"""``v41graph dot`` with costs: ``--costs``, ``--collapse`` and ``--hardware`` (kept here so the
command's parser in ``main.py`` stays small)."""

from __future__ import annotations

import argparse

from .cost_options import add_hardware_option


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--costs", action=argparse.BooleanOptionalAction, default=None,
                   help="label nodes with SOL time and bound and draw the critical path bold (the scheduled graph, "
                   "after the passes); --no-costs draws the graph as lowered, or with --passes after the pass "
                   "pipeline, without times (default: on, unless --passes is given)")
    p.add_argument("--collapse", action="store_true", help="one box per layer, with its time (implies --costs; "
                   "every layer unless --layers is given) (default: off)")
    add_hardware_option(p, "GPU for the costs")


def wants_costs(args: argparse.Namespace) -> bool:
    """Costs are the default drawing; ``--passes`` alone (or ``--no-costs``) draws a graph without times."""
    if args.collapse:
        return True
    return (not args.passes) if args.costs is None else args.costs


def cost_dot(args: argparse.Namespace, model, plan, layers: range) -> str:
    """The scheduled diagram of ``layers`` (``--layers`` or its default); ``--collapse`` without ``--layers``
    draws every layer."""
    from ...render.dot_costs import render_cost_dot
    from ...passes import compile
    return render_cost_dot(compile(model, plan, args.hardware), collapse=args.collapse,
                           layers=None if args.collapse and args.layers is None else layers, model=model, plan=plan)


def layer_range(text: str) -> range:
    a, sep, b = text.partition(":")
    if not (a.isdigit() and (not sep or b.isdigit())):
        raise argparse.ArgumentTypeError(f"{text!r} is not a layer range A:B (inclusive) or a layer")
    if sep and int(b) < int(a):
        raise argparse.ArgumentTypeError(f"{text!r} is an empty layer range: A:B runs from A up to B "
                                         f"(did you mean {b}:{a}?)")
    return range(int(a), int(b if sep else a) + 1)
