"""``v41graph report``: the main job, on the smallest mapping that fits unless one is given."""

from __future__ import annotations

import argparse

from ..model.config import load_model
from .cost_options import cost_mode_from_args


def cmd_report(args: argparse.Namespace) -> None:
    """Write the report folder (``--out``); print its summary, or with ``--json`` its report.json."""
    import os

    from ..analysis.basis import basis_record
    from ..analysis.report_data import boundary_graph, report_data, report_workload
    from ..costs.hardware import ALIASES, load_hardware
    from ..render.markdown_report import write_report
    from .mapping_options import header_lines, resolve_mapping, with_header
    model = load_model(args.model)
    hardware = load_hardware(args.hardware)  # a bad name fails here, in one line, before any work
    choice, basis = resolve_mapping(args, model, hardware, report_workload()), basis_record(args.cost)
    data = report_data(model, ALIASES.get(args.hardware, args.hardware), cost_mode_from_args(args),
                       mapping={"tp": args.tp, "ep": args.ep, "dp": args.dp})
    summary = write_report(args.out, with_header(data, choice, basis), boundary_graph(model),
                           head_lines=tuple(header_lines(choice, basis)))
    if args.json:
        with open(os.path.join(args.out, "report.json"), encoding="utf-8") as f:
            print(f.read(), end="")
    else:
        print(summary)
