"""``v41graph plot latency|memory|ops|pareto -o FILE.png|FILE.svg`` (extra ``v41graph[plot]``).

``latency``: TTFT vs prompt length (``--prompt 1K..1M``), a line per ``--replay`` policy;
``memory``: cache memory vs ``--context`` stacked by owner; ``ops``: prefill time by op family
for each ``--prompt`` × ``--replay``; ``pareto``: the frontier of a sweep file (``--input``,
CSV or JSON lines written by ``v41graph sweep --pareto``).
"""

from __future__ import annotations

import argparse
import json

from ..errors import V41Error
from ..model.config import load_model
from .sweep import count_list, name_list
from .options.cost_options import add_hardware_option

KINDS = ("latency", "memory", "ops", "pareto")


def add_plot_parser(sub, parser_class) -> None:
    p = sub.add_parser("plot", help="latency / memory / op-family / Pareto plots as PNG or SVG (needs v41graph[plot])")
    p.add_argument("kind", choices=KINDS, help="what to draw")
    p.add_argument("-o", "--output", required=True, help="FILE.png or FILE.svg")
    p.add_argument("--model", default=None, help="built-in model or config.json (default: deepseek-v4.1-flash)")
    add_hardware_option(p, "GPU of the latency and op-family plots")
    p.add_argument("--prompt", type=count_list, default=[1024, 1 << 20], help="prompt lengths: latency uses "
                   "their range, ops each one (default: 1K..1M)")
    p.add_argument("--context", type=count_list, default=[1024, 1 << 20], help="memory: context range "
                   "(default: 1K..1M)")
    p.add_argument("--replay", type=name_list, default=["off", "bounded"], help="replay policies "
                   "(default: off,bounded)")
    p.add_argument("--tp", type=int, default=1, help="TP degree (default: 1)")
    p.add_argument("--ep", type=int, default=1, help="EP degree (default: 1)")
    p.add_argument("--batch", type=int, default=1, help="latency: prompts per forward (default: 1)")
    p.add_argument("--dspark", action="store_true", help="memory: count the DSpark draft "
                   "blocks' SWA rings (default: off)")
    p.add_argument("--input", default=None, help="pareto: the sweep file, CSV or JSON lines (default: none)")
    p.add_argument("--json", action="store_true", help="machine-readable output (default: off)")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args: argparse.Namespace) -> None:
    from ..analysis.plot_data import latency_series, memory_series, ops_bars
    from ..render import plots as plot
    plot.pyplot()  # without matplotlib: one line naming the extra, before any work
    ran = _model(args) if args.kind in ("latency", "ops") else None  # the plots that price the model
    if args.kind == "pareto":
        if not args.input:
            raise V41Error("plot pareto: needs --input SWEEP.csv|.jsonl (from `v41graph sweep --pareto -o ...`)")
        from ..analysis.sweep.sweep_result import read_sweep
        message = plot.plot_pareto(read_sweep(args.input), args.output)
    elif args.kind == "memory":
        message = plot.plot_memory(memory_series(load_model(args.model), args.context, dspark=args.dspark),
                                   args.output)
    elif args.kind == "latency":
        message = plot.plot_latency(latency_series(ran.model, args.prompt, args.replay,
                                                   hardware=args.hardware, tp=args.tp, ep=args.ep, batch=args.batch),
                                    args.output)
    else:
        message = plot.plot_ops(ops_bars(ran.model, args.prompt, args.replay,
                                         hardware=args.hardware, tp=args.tp, ep=args.ep), args.output)
    from .options.checkpoint_options import checkpoint_record  # (the text is the file written; the JSON names it)
    ran_record = checkpoint_record(args, ran.checkpoints if ran else ())
    print(json.dumps({"kind": args.kind, "written": args.output, "message": message, **ran_record})
          if args.json else message)


def _model(args: argparse.Namespace):
    """The ``--model`` as the checkpoint ``--hardware`` runs, with that choice (the latency and op-family
    plots price it)."""
    from ..costs.hardware import load_hardware
    from .options.checkpoint_options import resolve_checkpoint
    return resolve_checkpoint(args, load_hardware(args.hardware), load_model(args.model))
