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
from ...analysis.basis import ServingBasis, serving_basis
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


def serving_cost_mode(args: argparse.Namespace, hardware_name: str, fpm_covers: bool = False,
                      runtime_table: str | None = None) -> ServingBasis:
    """The basis of a serving answer on the command's ``--cost``, ``--transfers`` and ``--measured-root``
    (:func:`~v41graph.analysis.basis.serving_basis`, which chooses it)."""
    return serving_basis(args.cost, hardware_name, transfers=args.transfers, measured_root=args.measured_root,
                         fpm_covers=fpm_covers, runtime_table=runtime_table)
