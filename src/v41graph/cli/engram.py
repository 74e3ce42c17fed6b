"""``v41graph engram``: Engram row locality of real text against synthetic input.

    v41graph engram --corpus kjv --tokens 8K --cache-rows 4096,65536,1M [--layer 1] [--json]
    v41graph engram --prefetch --batch 64 --hot-cache-rows 65536 [--hardware h200_sxm] [--json]

The corpus (``kjv``, ``pydoc`` or a path to a UTF-8 file) is tokenized with the V4 tokenizer
(optional extra ``text``); ``--compare`` adds synthetic inputs of the same length: ``pad`` (all
pad tokens) and ``repeat`` (the corpus's first 16 tokens over and over). With ``--prefetch`` it
reports host-resident Engram instead: a decode step of ``--batch`` requests (request i holds tokens
[i·n, (i+1)·n) of the corpus, n = tokens / batch), the rows its hot cache misses, the host-link
prefetch bytes and whether they land before the Engram layer needs them.
"""

from __future__ import annotations

import argparse

from ..analysis.serving.engram_locality import SYNTHETIC
from ..errors import PlanError
from ..workload.tokens import corpus_tokens
from .options.cost_options import add_hardware_option
from .options.mapping_options import add_mapping_options
from .options.plan_options import token_count
from .lists import comma_list
from .shared import emit

def _int_list(text: str) -> list[int]:
    return list(comma_list(text, token_count, allow_empty=True)) if text.strip() else []


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _names(text: str) -> list[str]:
    names = list(comma_list(text, allow_empty=True))
    for n in names:
        if n not in SYNTHETIC:
            raise argparse.ArgumentTypeError(f"unknown synthetic input {n!r} (known: {', '.join(SYNTHETIC)})")
    return names


def cmd_engram(args: argparse.Namespace) -> None:
    from ..analysis.serving.engram_locality import bounded_tokens, locality_inputs, locality_summary
    from ..render.text.engram_text import locality_text
    from ..ir.engram_rows import v4_fold
    from ..model.config import load_model
    from ..model.engram_hash import hash_layout
    bounded_tokens(args.tokens)
    model = load_model(args.model)
    layout = hash_layout(args.model)
    fold = v4_fold(layout)
    if args.prefetch:
        from ..analysis.serving.engram_host import prefetch_answer, prefetch_workload
        from ..render.text.engram_text import prefetch_text
        from ..costs.hardware import load_hardware
        from .options.mapping_options import print_priced, resolve_mapping
        from .options.checkpoint_options import resolve_checkpoint, shown_checkpoints
        work = prefetch_workload(args.tokens, args.batch)
        ran = resolve_checkpoint(args, load_hardware(args.hardware), model)  # the checkpoint the GPU runs
        model = ran.model
        choice = resolve_mapping(args, model, load_hardware(args.hardware), work)
        answer = prefetch_answer(model, layout, fold, corpus_tokens(args.corpus, args.tokens), args.hardware, choice,
                                 tokens=args.tokens, batch=args.batch, cache_rows=args.hot_cache_rows,
                                 checkpoints=shown_checkpoints(args, ran.checkpoints))
        return print_priced(args, answer, prefetch_text)
    if any(getattr(args, k) is not None for k in ("tp", "ep", "dp", "attn_dp", "checkpoint")) or args.fp4_on_hopper:
        raise PlanError("engram --tp/--ep/--dp/--attn-dp/--checkpoint/--fp4-on-hopper: need --prefetch (the "
                        "locality report prices no deployment)")
    data = locality_summary(model, layout, fold, locality_inputs(args.corpus, args.tokens, args.compare),
                            args.cache_rows, args.layer)
    emit(args, data, locality_text)  # no checkpoint: the locality report prices no deployment


def register(sub, common) -> None:
    """Add the ``engram`` command to the CLI's subparsers."""
    p = sub.add_parser("engram", parents=[common], help="Engram row locality of real text vs all-pad / repeated "
                       "tokens (needs the 'text' extra)")
    p.add_argument("--corpus", default="kjv", help="kjv, pydoc or a path to a UTF-8 text file (default: kjv)")
    p.add_argument("--tokens", type=token_count, default=8192,
                   help="first N tokens of the corpus, at most 64K (default: 8192)")
    p.add_argument("--layer", type=int, action="append", default=None,
                   help="Engram layer id, repeatable (default: every Engram layer)")
    p.add_argument("--cache-rows", type=_int_list, default=[4096, 65536, 1 << 20],
                   help="LRU cache sizes in rows of 264 B (default: 4096,65536,1M)")
    p.add_argument("--compare", type=_names, default=list(SYNTHETIC),
                   help="synthetic inputs to contrast: pad,repeat (default: both; '' for none)")
    p.add_argument("--prefetch", action="store_true", help="host-resident Engram: a decode step's host-link "
                   "prefetch and whether it is hidden (default: off, the locality report)")
    p.add_argument("--batch", type=_positive, default=64,
                   help="with --prefetch: requests in the decode step (default: 64)")
    p.add_argument("--hot-cache-rows", type=token_count, default=65536,
                   help="--prefetch: hot-cache rows per Engram layer in HBM (default: 65536)")
    add_hardware_option(p, "with --prefetch: the GPU and its host link")
    add_mapping_options(p, auto=True)  # --prefetch: each GPU fetches its TP column slice of every missed row
    p.set_defaults(func=cmd_engram)
