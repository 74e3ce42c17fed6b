"""Cost-mode options shared by the commands that compute a schedule.

``--cost sol|op|hybrid`` (SOL rules; measured tables, strict; measured with a flagged
fallback), ``--measured-root DIR`` (a folder in the aiconfigurator-core layout that replaces the
packaged tables) and ``--transfers KINDS`` (what hybrid mode may carry over: dtype, shape, op).

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_cost_options(p)
>>> cost_mode_from_args(p.parse_args(["--cost", "hybrid", "--transfers", "dtype"]))
CostMode(mode='hybrid', transfers=('dtype',), measured_root=None)
"""

from __future__ import annotations

import argparse

from ..costs.measured.tiers import MODES, TRANSFERS, CostMode


def _kinds(text: str) -> tuple[str, ...]:
    if text == "none":
        return ()
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    for k in kinds:
        if k not in TRANSFERS:
            raise argparse.ArgumentTypeError(f"{k!r} is not a transfer kind ({', '.join(TRANSFERS)} or none)")
    return kinds


def add_cost_options(p: argparse.ArgumentParser, extra: dict[str, str] | None = None) -> None:
    """The cost options; ``extra`` adds modes a command handles itself (name -> help)."""
    g = p.add_argument_group("cost mode")
    more = "".join(f"; {k}: {v}" for k, v in (extra or {}).items())
    g.add_argument("--cost", choices=MODES + tuple(extra or ()), default="sol", help="sol: v41graph's rules; op: "
                   "measured kernel tables, a miss is an error; hybrid: measured, then allowed transfers, then SOL, "
                   f"flagged{more} (default: sol)")
    g.add_argument("--measured-root", default=None, metavar="DIR", help="measured tables in the aiconfigurator "
                   "layout (default: the measured extra if installed, else the packaged slice)")
    g.add_argument("--transfers", type=_kinds, default=TRANSFERS, metavar="KINDS",
                   help=f"what hybrid mode may transfer, comma-separated ({','.join(TRANSFERS)}) or none "
                   f"(default: {','.join(TRANSFERS)})")


def cost_mode_from_args(args: argparse.Namespace) -> CostMode:
    return CostMode(args.cost, tuple(args.transfers), args.measured_root)
