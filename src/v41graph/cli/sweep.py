"""``v41graph sweep``: a grid of configurations, one row per point (CSV, JSON lines, Parquet).

Every axis takes a comma list (``--tp 1,8 --hardware h200_sxm,gb300``); counts accept 8K / 1M
and ``A..B`` (A, 2A, 4A, … up to B). ``--zip prompt,batch`` advances those axes together.
A progress bar shows on a terminal, never on a pipe or with ``--json``.
"""

from __future__ import annotations

import argparse
from typing import Callable

from ..analysis.sweep.sweep_grid import AXES
from .lists import count_list, name_list  # noqa: F401  (the axes' parsers; cli/plot.py imports them here)


def _workers(text: str) -> int:
    """``--workers``: a positive number of processes (0 would silently mean one per CPU)."""
    raw = text.strip()
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of processes (e.g. 1, 4)")
    return int(raw)


def seconds(text: str) -> float:
    """``0.05``, ``50ms`` or ``2s`` → seconds."""
    raw = text.strip().lower()
    scale = 1e-3 if raw.endswith("ms") else 1.0
    number = raw[:-2] if raw.endswith("ms") else raw[:-1] if raw.endswith("s") else raw
    try:
        value = float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time (e.g. 0.05, 50ms, 2s)") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a time limit must be > 0")
    return value


_TYPES: dict[str, Callable] = {"tp": count_list, "ep": count_list, "dp": count_list, "batch": count_list,
                               "prompt": count_list, "context": count_list}
def add_sweep_parser(sub, parser_class) -> None:
    p = sub.add_parser("sweep", help="a grid of models, hardware, mappings, lengths and policies; one row per "
                       "point (CSV, JSON lines, Parquet)")
    for name, default in AXES.items():
        flag = "--" + name.replace("_", "-")
        shown = "the prompt length" if name == "context" else default
        p.add_argument(flag, dest=name, type=_TYPES.get(name, name_list), default=None,
                       help=f"comma list (default: {shown})")
    p.add_argument("--fp4-on-hopper", action="store_true", help="let --checkpoint name an FP4 checkpoint on a GPU "
                   "without FP4 tensor cores for a model with an FP8 one (default: off; --checkpoint auto: the "
                   "one each GPU runs, model/checkpoints.py)")
    p.add_argument("--zip", type=name_list, default=[],
                   help="axes that advance together (equal lengths) (default: none)")
    p.add_argument("-o", "--output", default=None, help="FILE.csv, FILE.jsonl or FILE.parquet (default: a table "
                   "on stdout)")
    p.add_argument("--pareto", action="store_true", help="mark the tokens/s-per-GPU vs tokens/s-per-user frontier "
                   "(default: off)")
    p.add_argument("--ttft-max", type=seconds, default=None,
                   help="Pareto constraint on TTFT (e.g. 2s, 500ms) (default: none)")
    p.add_argument("--itl-max", type=seconds, default=None, help="Pareto constraint on ITL (e.g. 50ms) (default: none)")
    p.add_argument("--ignore-fit", action="store_true", help="Pareto: keep rows that do not fit (default: off)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run on a Dask cluster at ADDRESS "
                   "(needs v41graph[distributed]; default: a local process pool)")
    p.add_argument("--workers", type=_workers, default=None, help="local processes (default: one per CPU)")
    p.add_argument("--html", default=None, metavar="FILE", help="also write the sweep's page to FILE: tokens/s per "
                   "GPU against per user with the front, the rows and the notes; one self-contained HTML file "
                   "(default: none)")
    p.add_argument("--json", action="store_true", help="machine-readable output, no progress bar (default: off)")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> None:
    from ..analysis.sweep.sweep_answer import run_sweep, sweep_answer, sweep_bases
    from ..render.text.sweep_text import page_notes, shown_columns, sweep_cell, sweep_screen
    result = run_sweep({name: getattr(args, name) for name in AXES}, zip=args.zip, scheduler=args.scheduler,
                       workers=args.workers, quiet=args.json, fp4_on_hopper=args.fp4_on_hopper,
                       pareto=args.pareto, ttft_max=args.ttft_max, itl_max=args.itl_max,
                       require_fit=not args.ignore_fit)
    given = [a for a in AXES if getattr(args, a) is not None]
    bases = sweep_bases(result, args.cost_mode is None)
    message = result.write(args.output) if args.output else None
    page = None
    if args.html:  # the same rows, columns and basis as the table
        from ..render.html.result_pages import sweep_page, write_page
        page = write_page(sweep_page(result, shown_columns(result, given), page_notes(result, bases), sweep_cell),
                          args.html)
    if args.json:
        print(sweep_answer(result, default_basis=args.cost_mode is None, written=message, page=args.html).to_json())
        return
    print(sweep_screen(result, bases, given, message), end="")
    if page:
        print(page)
