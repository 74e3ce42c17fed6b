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
from typing import NamedTuple

from ...costs.measured.tiers import MODES, TRANSFERS, CostMode
from ..lists import comma_list


def _kinds(text: str) -> tuple[str, ...]:
    if text == "none":
        return ()
    kinds = comma_list(text, allow_empty=True)
    for k in kinds:
        if k not in TRANSFERS:
            raise argparse.ArgumentTypeError(f"{k!r} is not a transfer kind ({', '.join(TRANSFERS)} or none)")
    return kinds


def add_cost_options(p: argparse.ArgumentParser, extra: dict[str, str] | None = None, *, serving: bool = False) -> None:
    """The cost options; ``extra`` adds modes a command handles itself (name -> help). ``serving``: the
    command states an SLA; without ``--cost`` it takes the most realistic basis that covers the plan
    (:func:`serving_cost_mode`)."""
    g = p.add_argument_group("cost mode")
    more = "".join(f"; {k}: {v}" for k, v in (extra or {}).items())
    fpm = "FPM where an admitted table covers it, else " if "fpm" in (extra or {}) else ""
    if "runtime" in (extra or {}):
        fpm += "runtime where an SGLang whole-forward table of the model, GPU and mapping exists, else "
    default = (f"the most realistic basis that covers the plan: {fpm}hybrid where measured tables exist for the "
               "hardware, else sol") if serving else "sol"
    g.add_argument("--cost", choices=MODES + tuple(extra or ()), default=None if serving else "sol",
                   help="sol: v41graph's rules; op: measured kernel tables, a miss is an error; hybrid: measured, "
                   f"then allowed transfers, then SOL, flagged{more} (default: {default})")
    g.add_argument("--measured-root", default=None, metavar="DIR", help="measured tables in the aiconfigurator "
                   "layout (default: the measured extra if installed, else the packaged slice)")
    g.add_argument("--transfers", type=_kinds, default=TRANSFERS, metavar="KINDS",
                   help=f"what hybrid mode may transfer, comma-separated ({','.join(TRANSFERS)}) or none "
                   f"(default: {','.join(TRANSFERS)})")


def cost_mode_from_args(args: argparse.Namespace) -> CostMode:
    return CostMode(args.cost, tuple(args.transfers), args.measured_root)


#: the built-in GPUs, named in every ``--hardware`` help
HARDWARE_NAMES = "h200_sxm, b200_sxm, gb200, gb300"


def add_hardware_option(p, role: str = "", *, default: str | None = "h200_sxm", checkpoint: bool = True,
                        **kwargs) -> None:
    """``--hardware``, declared once for every command: its ``role`` there, the names it takes, its default;
    with ``checkpoint``, beside it ``--checkpoint`` and ``--fp4-on-hopper`` (cli/options/checkpoint_options.py).

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_hardware_option(p, "GPU for the SOL figures")
    >>> p.parse_args([]).hardware
    'h200_sxm'
    >>> print(p._option_string_actions["--hardware"].help)  # doctest: +NORMALIZE_WHITESPACE
    GPU for the SOL figures: a built-in name (h200_sxm, b200_sxm, gb200, gb300) or a hardware JSON
    file (default: h200_sxm)
    """
    shown = kwargs.pop("default_text", default)
    text = f"{role}: " if role else ""
    p.add_argument("--hardware", default=default, **kwargs,
                   help=f"{text}a built-in name ({HARDWARE_NAMES}) or a hardware JSON file (default: {shown})")
    if checkpoint:
        from .checkpoint_options import add_checkpoint_options
        add_checkpoint_options(p)


class ServingBasis(NamedTuple):
    """What a serving answer is priced on: the basis, the graph cost mode (None under FPM and runtime, which
    bring their own step coster), how it was chosen (``--cost`` or ``default``) and, for a default, why."""

    basis: str
    mode: CostMode | None
    chosen: str
    why: str | None = None


def serving_cost_mode(args: argparse.Namespace, hardware_name: str, fpm_covers: bool = False,
                      runtime_table: str | None = None) -> ServingBasis:
    """The basis of a serving answer (:class:`ServingBasis`).

    ``fpm_covers``: an admitted whole-forward table covers the plan; ``runtime_table``: the name of a
    whole-forward table of the plan's GPU and mapping the runtime basis can be fitted to (the caller
    knows which tables it takes). Without ``--cost`` the default is then FPM, else runtime, else
    hybrid wherever the measured kernel tables cover the hardware, else SOL
    (:func:`~v41graph.analysis.basis.serving_default`)."""
    if args.cost is not None:
        return ServingBasis(args.cost, None if args.cost not in MODES else cost_mode_from_args(args), "--cost")
    from ...analysis.basis import serving_default, tables_cover
    # the measured lookup only when it can decide
    tables = not fpm_covers and runtime_table is None and tables_cover(hardware_name, args.measured_root)
    mode = serving_default(tables, fpm_covers, runtime_table is not None)
    why = {"fpm": "an admitted whole-forward table covers it",
           "runtime": f"a whole-forward table of this GPU and mapping exists ({runtime_table}) and no FPM table is "
                      "admitted",
           "hybrid": f"measured kernel tables cover {hardware_name}",
           "sol": f"no measured kernel tables for {hardware_name}"}[mode]
    graph_mode = None if mode in ("fpm", "runtime") else CostMode(mode, tuple(args.transfers), args.measured_root)
    return ServingBasis(mode, graph_mode, "default", why)
