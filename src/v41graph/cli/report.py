"""``v41graph report``: the main job, on the smallest mapping that fits unless one is given."""

from __future__ import annotations

import argparse

from ..model.config import load_model
from .cost_options import cost_mode_from_args


def cmd_report(args: argparse.Namespace) -> None:
    """Write the report folder (``--out``); print its summary, or with ``--json`` its report.json."""
    import os

    from ..backends.markdown_report import write_report
    from ..costs.hardware import ALIASES, load_hardware
    from ..analysis.basis import basis_record
    from ..backends.markdown_report import report_workload
    from .mapping_options import header_lines, resolve_mapping, with_header
    model = load_model(args.model)
    hardware = load_hardware(args.hardware)  # a bad name fails here, in one line, before any work
    choice, basis = resolve_mapping(args, model, hardware, report_workload()), basis_record(args.cost)
    summary = write_report(args.out, model=model, hardware=ALIASES.get(args.hardware, args.hardware),
                           cost=cost_mode_from_args(args), mapping={"tp": args.tp, "ep": args.ep, "dp": args.dp},
                           header=with_header({}, choice, basis), head_lines=tuple(header_lines(choice, basis)))
    if args.json:
        with open(os.path.join(args.out, "report.json"), encoding="utf-8") as f:
            print(f.read(), end="")
    else:
        print(summary)
