"""``v41graph report`` (the main job, on the smallest mapping that fits unless one is given) and the
interactive page from the command line: ``report`` writes ``report.html`` beside ``report.md``,
``cost … --html FILE`` the page of the plan it costs (issue 29)."""

from __future__ import annotations

import argparse
import json
import os

from ..model.config import load_model
from .options.checkpoint_options import checkpoint_lines, checkpoint_record, resolve_checkpoint
from .options.cost_options import serving_cost_mode
from .out_folder import check_folder, output_folder


#: every name ``report`` writes: a folder holding only these is an earlier report, replaced whole
REPORT_FILES = ("report.md", "report.json", "report.html", "boundary.svg", "boundary.dot")


def cmd_report(args: argparse.Namespace) -> None:
    """Write the report folder (``--out``, whole: see ``out_folder.py``); print its summary, or with
    ``--json`` its report.json, from the figures in memory (never read back from the folder)."""
    from ..analysis.basis import basis_record
    from ..analysis.report_data import boundary_graph, report_data, report_workload
    from ..analysis.summaries import jsonable
    from ..costs.hardware import ALIASES, load_hardware
    from ..render.html.html_report import write_report_html
    from ..render.markdown_report import write_report
    from .options.mapping_options import header_lines, resolve_mapping, with_header
    hardware = load_hardware(args.hardware)  # a bad name fails here, in one line, before any work
    ran = resolve_checkpoint(args, hardware, load_model(args.model))  # the checkpoint the GPU runs
    model = ran.model
    check_folder(args.out, REPORT_FILES, force=args.force, option="report --out")  # so does a folder it must keep
    name = ALIASES.get(args.hardware, args.hardware)
    served = serving_cost_mode(args, hardware.name)  # a forecast by default: hybrid where tables cover the GPU
    choice, cost = resolve_mapping(args, model, hardware, report_workload()), served.mode
    mapping = {"tp": choice.mapping.tp, "ep": choice.mapping.ep, "dp": choice.mapping.dp}
    data = report_data(model, name, cost, mapping=mapping)
    basis = basis_record(served.basis, chosen=served.chosen, why=served.why,
                         coverage=data.get("decode_coverage"))
    ran_record = checkpoint_record(args, ran.checkpoints)
    record = json.loads(json.dumps(jsonable(with_header(data, choice, basis, ran_record))))  # report.json
    page, boundary = report_page(record, model, name, cost, mapping), boundary_graph(model)
    head = tuple(header_lines(choice, basis, checkpoint_lines(args, ran.checkpoints)))
    with output_folder(args.out, REPORT_FILES, force=args.force, option="report --out") as tmp:
        summary = write_report(str(tmp), record, boundary, head_lines=head, shown_dir=args.out)
        write_report_html(record, page, tmp / "report.html")
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        print(f"{summary}\ninteractive page: {os.path.join(args.out, 'report.html')}")


def add_html_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--html", default=None, metavar="FILE", help="also write the plan's interactive page (one "
                   "self-contained HTML file: layer map, costed graph, calculators) to FILE (default: none)")


def report_page(data: dict, model, hardware: str, cost, mapping: dict[str, int]):
    """The page data of ``report.html``: the report's plans at ``mapping`` with ``data``'s (report.json's)
    basis and deployment records."""
    from ..analysis.basis import basis_line
    from ..analysis.page import page_data
    from ..analysis.report_data import report_mappings, report_plans
    from ..passes import compile
    from ..render.markdown_report import DIAGRAM_LAYERS
    sources = report_plans(model, mapping)
    plans = {k: compile(model, p, hardware, cost=cost) for k, p in sources.items()}
    deployment = data["deployment"]["line"] if "deployment" in data else None
    return page_data(model, hardware, plans, report_mappings(mapping), sources=sources,
                     basis=basis_line(data["basis"]), deployment=deployment, mapping=mapping,
                     diagram_layers=DIAGRAM_LAYERS)


def plan_page(args: argparse.Namespace, model, plan, compiled, cost, deployment: str | None) -> None:
    """``cost --html FILE``: the page of the plan just costed (a line on stderr says where)."""
    if args.html:  # the page's modules (sympy, graphviz) load only when asked for
        import sys

        from ..render.html.html_report import write_html
        print(write_html(compiled, args.html, model=model, plan=plan, cost=cost, deployment=deployment),
              file=sys.stderr)
