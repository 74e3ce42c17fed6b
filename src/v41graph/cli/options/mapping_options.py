"""The mapping options of every command that prices a deployment, built in one place.

``--tp``, ``--ep``, ``--dp`` (this project's DP: attention replicas, GPUs = tp × dp) and
``--attn-dp`` / ``--dp-attention`` (SGLang's ``--dp D --enable-dp-attention``: attention DP inside
the TP group, GPUs = tp). With ``auto=True`` a command given none of them runs on the smallest
mapping that fits (:func:`v41graph.analysis.mapping_search.smallest_fitting`); one given any of
them runs exactly that mapping (the others 1), with the shortfall first when it does not fit.

>>> import argparse
>>> from v41graph import load_model, Plan, Request
>>> from v41graph.costs.hardware import load_hardware
>>> p = argparse.ArgumentParser()
>>> add_mapping_options(p, auto=True)
>>> args = p.parse_args(["--tp", "8", "--attn-dp", "8", "--ep", "8"])
>>> c = resolve_mapping(args, load_model(), load_hardware("h200_sxm"), Plan([Request.prefill(8192)]))
>>> (c.mapping.tp, c.mapping.dp, c.mapping.ep), (args.tp, args.dp, args.ep)   # the arguments stay as given
((1, 8, 8), (8, None, 8))
>>> c.line()  # doctest: +NORMALIZE_WHITESPACE
'8 × h200_sxm: tp 8 · attn-dp 8 · ep 8 (explicit; SGLang DP attention: attention TP 1 × DP 8 inside the TP group)'
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

#: the parallel degrees every command that builds a mapping takes
MAPPING_OPTIONS = (("tp", "attention tensor-parallel"), ("ep", "expert-parallel"),
                   ("dp", "attention data-parallel replicas of tp GPUs each (GPUs = tp × dp)"))


def degree(text: str) -> int:
    """Parse a parallel degree (``--tp``, ``--ep``, ``--dp``): a positive integer."""
    raw = text.strip()
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer degree (e.g. 1, 2, 4, 8)")
    return int(raw)


def add_mapping_options(p, *, auto: bool = False, redundant: bool = False) -> None:
    """``--tp``, ``--ep``, ``--dp`` (and, with ``auto``, ``--attn-dp``); one definition for every command;
    with ``redundant``, ``--ep-redundant`` too (a command that holds or prices the experts)."""
    default = "auto: the smallest mapping that fits" if auto else "1"
    for name, what in MAPPING_OPTIONS:
        p.add_argument(f"--{name}", type=degree, default=None if auto else 1,
                       help=f"{what} degree (default: {default})")
    if auto:
        p.add_argument("--attn-dp", "--dp-attention", dest="attn_dp", type=degree, default=None, metavar="D",
                       help="SGLang's --dp D --enable-dp-attention: D attention DP groups inside the TP group "
                       "(GPUs = tp; attention TP = tp / D) (default: none)")
    if redundant:
        p.add_argument("--ep-redundant", type=_redundant, default=0, metavar="R",
                       help="redundant expert slots over the EP ranks, placed by the EPLB greedy (SGLang "
                            "--ep-num-redundant-experts) (default: 0)")
    p.set_defaults(mapping_auto=auto)


def _redundant(text: str) -> int:
    raw = text.strip()
    if not raw.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative count of redundant experts")
    return int(raw)


def resolve_mapping(args: argparse.Namespace, model, hardware, plan):
    """The :class:`MappingChoice` of the mapping the command runs on (its degrees: ``choice.mapping``),
    :func:`~v41graph.analysis.mapping_search.choose_mapping` of the options; ``args`` is read, never written.

    ``plan``: the workload whose weights and cache must fit (its own mapping is ignored)."""
    from ...analysis.mapping_search import choose_mapping
    return choose_mapping(model, hardware, plan, tp=getattr(args, "tp", None), ep=getattr(args, "ep", None),
                          dp=getattr(args, "dp", None), attn_dp=getattr(args, "attn_dp", None),
                          auto=getattr(args, "mapping_auto", False))


def emit_priced(args: argparse.Namespace, data: dict[str, Any], text, choice, basis: dict[str, Any] | None,
                checkpoints: Sequence = ()) -> None:
    """Print a priced answer: JSON with its ``basis``, ``deployment`` and ``checkpoint`` records, or text
    under its header lines (``checkpoints``: the ones the command ran, :class:`~.resolved.Resolved`)."""
    from ...analysis.answer import Priced
    from .checkpoint_options import shown_checkpoints
    print_priced(args, Priced(data, basis, choice, tuple(shown_checkpoints(args, checkpoints))), text)


def print_priced(args: argparse.Namespace, answer, text) -> None:
    """Print a :class:`~v41graph.analysis.answer.Priced` answer: ``--json`` its ``to_json()``, else its header
    lines (:func:`header_lines`) above ``text(answer.body)``."""
    if getattr(args, "json", False):
        print(answer.to_json())
    else:
        from ...render.terminal import header_lines
        lines = header_lines(answer.deployment, answer.basis, [c.line() for c in answer.checkpoint])
        print("\n".join(lines + [text(answer.body)]))
