"""``v41graph compare``: two models, plans, hardware or mappings side by side.

``--model A --model B`` and ``--hardware X --hardware Y`` give each side its own (one value
serves both); the plan options are shared, and ``--vs tp=8,ep=8`` (or ``replay=bounded``,
``fusion=two-pass`` …) changes side B's plan only. Text by default, ``--markdown``, ``--json``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import PlanError
from ..model.config import load_model
from .options.plan_options import add_plan_options, plan_from_args, token_count
from .options.cost_options import add_hardware_option
from .lists import comma_list

if TYPE_CHECKING:
    from ..analysis.comparison import Side
    from .options.resolved import Resolved

#: what ``--vs`` may change, and how its value is read
_VS = {"tp": token_count, "ep": token_count, "dp": token_count, "replay": str, "replay_cut": str, "fusion": str,
       "restore": str, "dspark": str}
_POLICY = {"replay": "decoder_replay", "restore": "encoder_restore"}


def _vs(text: str) -> dict[str, object]:
    out = {}
    for part in comma_list(text, allow_empty=True):
        key, sep, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in _VS:
            raise argparse.ArgumentTypeError(f"{part!r}: expected KEY=VALUE with KEY one of {', '.join(_VS)}")
        out[_POLICY.get(key, key)] = _VS[key](value.strip())
    return out


def add_compare_parser(sub, parser_class) -> None:
    p = sub.add_parser("compare", help="two models, plans, hardware or mappings side by side: totals, per-stage "
                       "and per-op-family deltas, memory")
    p.add_argument("--model", action="append", default=None, help="model of side A, then of side B (given once: "
                   "both; default deepseek-v4.1-flash)")
    add_hardware_option(p, "hardware of A, then of B (given once: both)", default=None, default_text="h200_sxm",
                        action="append")
    p.add_argument("--vs", type=_vs, default={}, metavar="KEY=VALUE,...", help="side B's plan changes: "
                   + ", ".join(_VS) + " (default: none)")
    p.add_argument("--markdown", action="store_true", help="Markdown tables (default: off)")
    p.add_argument("--json", action="store_true", help="machine-readable output (default: off)")
    add_plan_options(p)
    p.set_defaults(func=cmd_compare)


def _two(values, default: str, name: str) -> tuple[str, str]:
    values = values or [default]
    if len(values) > 2:
        raise PlanError(f"compare --{name}: at most two values (A and B), got {len(values)}")
    return values[0], values[-1]


def sides(args: argparse.Namespace) -> tuple[Side, Side, Resolved]:
    """Sides A and B (:func:`~v41graph.analysis.comparison.compare_sides`), and the checkpoints they run (one,
    or one per side where they differ)."""
    from ..analysis.comparison import compare_sides
    from ..costs.hardware import load_hardware
    from .options.checkpoint_options import resolve_checkpoint
    from .options.resolved import Resolved
    hardware = _two(args.hardware, "h200_sxm", "hardware")
    # each side runs the checkpoint its GPU runs (cli/options/checkpoint_options.py)
    ran = [resolve_checkpoint(args, load_hardware(hw), load_model(m))
           for m, hw in zip(_two(args.model, None, "model"), hardware)]
    # fusion None: each model family's own (Plan.fusion_for)
    a, b = compare_sides([r.model for r in ran], hardware, plan_from_args(args), args.vs)
    return a, b, Resolved().also(c for r in ran for c in r.checkpoints)


def cmd_compare(args: argparse.Namespace) -> None:
    from ..analysis.comparison import compare
    from ..render.text.compare_text import compare_markdown, compare_text, with_checkpoints
    from ..analysis.answer import Priced
    from .options.checkpoint_options import checkpoint_lines, shown_checkpoints
    a, b, ran = sides(args)
    result = compare(a, b)
    if args.json:  # the comparison with the checkpoints the sides run, as a typed answer
        print(Priced(result, checkpoint=tuple(shown_checkpoints(args, ran.checkpoints))).to_json())
        return
    # the checkpoint lines (one, or one per side where they differ) right below the sides' labels
    text = compare_markdown(result) if args.markdown else compare_text(result)
    print(with_checkpoints(text, checkpoint_lines(args, ran.checkpoints), args.markdown), end="")
