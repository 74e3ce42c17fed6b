"""``v41graph report`` (the main job) and the interactive page from the command line: ``report``
writes ``report.html`` beside ``report.md``, ``cost … --html FILE`` the page of the plan it costs
(issue 29)."""

from __future__ import annotations

import argparse
import json
import os


def cmd_report(args: argparse.Namespace) -> None:
    """Write the report folder (``--out``); print its summary, or with ``--json`` its report.json."""
    from ..backends.markdown_report import write_report
    from ..costs.hardware import ALIASES, load_hardware
    from ..model.config import load_model
    from .cost_options import cost_mode_from_args
    model = load_model(args.model)
    load_hardware(args.hardware)  # a bad name fails here, in one line, before any work
    hardware, cost = ALIASES.get(args.hardware, args.hardware), cost_mode_from_args(args)
    summary = write_report(args.out, model=model, hardware=hardware, cost=cost)
    summary += f"\ninteractive page: {report_page(args.out, model, hardware, cost)}"
    if args.json:
        with open(os.path.join(args.out, "report.json"), encoding="utf-8") as f:
            print(f.read(), end="")
    else:
        print(summary)


def add_html_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--html", default=None, metavar="FILE", help="also write the plan's interactive page (one "
                   "self-contained HTML file: layer map, costed graph, calculators) to FILE (default: none)")


def report_page(out_dir: str, model, hardware: str, cost) -> str:
    """Write ``out_dir/report.html`` from the report's plans and ``report.json``; return its path."""
    from ..analysis.page import page_data
    from ..backends.markdown_report import DIAGRAM_LAYERS, report_mappings, report_plans
    from ..backends.query import closed_form
    from ..passes import schedule
    from ..render.html_report import write_report_html
    with open(os.path.join(out_dir, "report.json"), encoding="utf-8") as f:
        data = json.load(f)
    plans = {k: schedule(model, p, hardware, cost=cost) for k, p in report_plans(model).items()}
    basis = "SOL" if "cost_mode" not in data else f"{data['cost_mode']} (OP times from measured tables)"
    page = page_data(model, hardware, plans, report_mappings(), closed_form=closed_form, basis=basis,
                     diagram_layers=DIAGRAM_LAYERS)
    path = os.path.join(out_dir, "report.html")
    write_report_html(data, page, path)
    return path


def plan_page(args: argparse.Namespace, model, plan, compiled, cost) -> None:
    """``cost --html FILE``: the page of the plan just costed (a line on stderr says where)."""
    if args.html:  # the page's modules (sympy, graphviz) load only when asked for
        import sys

        from ..render.html_report import write_html
        print(write_html(compiled, args.html, model=model, plan=plan, cost=cost), file=sys.stderr)
