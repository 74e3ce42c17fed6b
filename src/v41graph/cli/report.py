"""``v41graph report`` (the main job, on the smallest mapping that fits unless one is given) and the
interactive page from the command line: ``report`` writes ``report.html`` beside ``report.md``,
``cost … --html FILE`` the page of the plan it costs (issue 29)."""

from __future__ import annotations

import argparse
import json
import os

from ..model.config import load_model
from .checkpoint_options import checkpoint_lines, checkpoint_record, model_for
from .cost_options import cost_mode_from_args


def cmd_report(args: argparse.Namespace) -> None:
    """Write the report folder (``--out``); print its summary, or with ``--json`` its report.json."""
    from ..analysis.basis import basis_record
    from ..analysis.report_data import boundary_graph, report_data, report_workload
    from ..costs.hardware import ALIASES, load_hardware
    from ..render.markdown_report import write_report
    from .mapping_options import header_lines, resolve_mapping, with_header
    hardware = load_hardware(args.hardware)  # a bad name fails here, in one line, before any work
    model = model_for(args, hardware, load_model(args.model))  # the checkpoint the GPU runs
    choice, basis = resolve_mapping(args, model, hardware, report_workload()), basis_record(args.cost)
    name, cost = ALIASES.get(args.hardware, args.hardware), cost_mode_from_args(args)
    mapping = {"tp": args.tp, "ep": args.ep, "dp": args.dp}
    data = report_data(model, name, cost, mapping=mapping)
    summary = write_report(args.out, with_header(data, choice, basis, checkpoint_record(args)), boundary_graph(model),
                           head_lines=tuple(header_lines(choice, basis, checkpoint_lines(args))))
    summary += f"\ninteractive page: {report_page(args.out, model, name, cost, mapping)}"
    if args.json:
        with open(os.path.join(args.out, "report.json"), encoding="utf-8") as f:
            print(f.read(), end="")
    else:
        print(summary)


def add_html_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--html", default=None, metavar="FILE", help="also write the plan's interactive page (one "
                   "self-contained HTML file: layer map, costed graph, calculators) to FILE (default: none)")


def report_page(out_dir: str, model, hardware: str, cost, mapping: dict[str, int]) -> str:
    """Write ``out_dir/report.html`` from the report's plans at ``mapping`` and ``report.json``
    (its figures, basis and deployment records, as written); return its path."""
    from ..analysis.basis import basis_line
    from ..analysis.page import page_data
    from ..analysis.report_data import report_mappings, report_plans
    from ..passes import compile
    from ..render.html_report import write_report_html
    from ..render.markdown_report import DIAGRAM_LAYERS
    with open(os.path.join(out_dir, "report.json"), encoding="utf-8") as f:
        data = json.load(f)
    plans = {k: compile(model, p, hardware, cost=cost) for k, p in report_plans(model, mapping).items()}
    basis = basis_line(data["basis"])
    deployment = data["deployment"]["line"] if "deployment" in data else None
    page = page_data(model, hardware, plans, report_mappings(mapping), basis=basis, deployment=deployment,
                     mapping=mapping, diagram_layers=DIAGRAM_LAYERS)
    path = os.path.join(out_dir, "report.html")
    write_report_html(data, page, path)
    return path


def plan_page(args: argparse.Namespace, model, plan, compiled, cost, deployment: str | None) -> None:
    """``cost --html FILE``: the page of the plan just costed (a line on stderr says where)."""
    if args.html:  # the page's modules (sympy, graphviz) load only when asked for
        import sys

        from ..render.html_report import write_html
        print(write_html(compiled, args.html, model=model, plan=plan, cost=cost, deployment=deployment),
              file=sys.stderr)
