"""``v41graph report`` (the main job, on the smallest mapping that fits unless one is given) and the
interactive page from the command line: ``report`` writes ``report.html`` beside ``report.md``,
``cost … --html FILE`` the page of the plan it costs (issue 29)."""

from __future__ import annotations

import argparse
import json
import os

from ..model.config import load_model
from .options.checkpoint_options import checkpoint_lines, resolve_checkpoint
from .options.cost_options import serving_cost_mode
from .out_folder import check_folder, output_folder


#: every name ``report`` writes: a folder holding only these is an earlier report, replaced whole
REPORT_FILES = ("report.md", "report.json", "report.html", "boundary.svg", "boundary.dot")


def cmd_report(args: argparse.Namespace) -> None:
    """Write the report folder (``--out``, whole: see ``out_folder.py``); print its summary, or with
    ``--json`` its report.json, from the figures in memory (never read back from the folder)."""
    from ..analysis.report_data import boundary_graph, degrees, report_answer, report_hardware, report_workload
    from ..costs.hardware import load_hardware
    from ..render.html.html_report import write_report_html
    from ..render.markdown_report import write_report
    from .options.checkpoint_options import shown_checkpoints
    from ..render.terminal import header_lines
    from .options.mapping_options import resolve_mapping
    hardware = load_hardware(args.hardware)  # a bad name fails here, in one line, before any work
    ran = resolve_checkpoint(args, hardware, load_model(args.model))  # the checkpoint the GPU runs
    model = ran.model
    check_folder(args.out, REPORT_FILES, force=args.force, option="report --out")  # so does a folder it must keep
    name = report_hardware(args.hardware)
    served = serving_cost_mode(args, hardware.name)  # a forecast by default: hybrid where tables cover the GPU
    choice = resolve_mapping(args, model, hardware, report_workload())
    answer = report_answer(model, name, served, choice, checkpoints=shown_checkpoints(args, ran.checkpoints))
    record = json.loads(answer.to_json())  # report.json
    page, boundary = report_page(record, model, name, served.mode, degrees(choice.mapping)), boundary_graph(model)
    head = tuple(header_lines(choice, answer.basis, checkpoint_lines(args, ran.checkpoints)))
    with output_folder(args.out, REPORT_FILES, force=args.force, option="report --out") as tmp:
        summary = write_report(str(tmp), record, boundary, head_lines=head, shown_dir=args.out)
        write_report_html(record, page, tmp / "report.html")
    if args.json:
        print(answer.to_json())
    else:
        print(f"{summary}\ninteractive page: {os.path.join(args.out, 'report.html')}")


def add_html_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--html", default=None, metavar="FILE", help="also write the plan's interactive page (one "
                   "self-contained HTML file: layer map, costed graph, calculators) to FILE (default: none)")


def report_page(record: dict, model, hardware: str, cost, mapping: dict[str, int]):
    """The page data of ``report.html`` (:func:`~v41graph.analysis.report_data.report_page_data`), its diagram
    on the markdown report's layers."""
    from ..analysis.report_data import report_page_data
    from ..render.markdown_report import DIAGRAM_LAYERS
    return report_page_data(record, model, hardware, cost, mapping, diagram_layers=DIAGRAM_LAYERS)


def plan_page(args: argparse.Namespace, model, plan, compiled, cost, deployment: str | None) -> None:
    """``cost --html FILE``: the page of the plan just costed (a line on stderr says where)."""
    if args.html:  # the page's modules (sympy, graphviz) load only when asked for
        import sys

        from ..render.html.html_report import write_html
        print(write_html(compiled, args.html, model=model, plan=plan, cost=cost, deployment=deployment),
              file=sys.stderr)
