"""``v41graph layout`` and ``v41graph memory``: what the checkpoint is (no plan compiled)."""

from __future__ import annotations

import argparse

from ..model.config import load_model
from .options.cost_options import add_hardware_option
from .options.plan_options import add_mapping_options, token_count
from .options.checkpoint_options import resolve_checkpoint
from .shared import emit, model_of


def cmd_layout(args: argparse.Namespace) -> None:
    from ..analysis.summaries import layout_summary
    from ..render.terminal import layout_text
    emit(args, layout_summary(load_model(args.model)), layout_text)


def cmd_memory(args: argparse.Namespace) -> None:
    from ..analysis.plan_answers import memory_answer, memory_workload
    from ..render.terminal import memory_text
    from ..costs.hardware import load_hardware
    from .options.checkpoint_options import shown_checkpoints
    from .options.mapping_options import print_priced, resolve_mapping
    hardware = load_hardware(args.hardware)
    ran = resolve_checkpoint(args, hardware, model_of(args))  # its experts' storage decides the weights
    model = ran.model
    # its GPU holds one request of --context, the workload whose fit picks the auto mapping (the smallest that
    # fits, as `cost` picks)
    held = memory_workload(model, args.context, ep_redundant=args.ep_redundant, engram=args.engram,
                           dspark=args.dspark)
    choice = resolve_mapping(args, model, hardware, held)
    answer = memory_answer(model, hardware, choice, args.context, ep_redundant=args.ep_redundant, engram=args.engram,
                           dspark=args.dspark, hot_cache_rows=args.hot_cache_rows,
                           checkpoints=shown_checkpoints(args, ran.checkpoints))
    print_priced(args, answer, memory_text)


def add_model_parsers(sub, common) -> None:
    p = sub.add_parser("layout", parents=[common], help="per-layer paths, KV owners and Top-K producers")
    p.set_defaults(func=cmd_layout)
    p = sub.add_parser("memory", parents=[common], help="resident weights and per-request cache memory")
    p.add_argument("--context", type=token_count, default=8192, help="tokens held by the request, e.g. 128K "
                   "(default: 8192)")
    p.add_argument("--dspark", action="store_true", help="count the DSpark draft blocks' SWA rings")
    p.add_argument("--allow-past-max-position", action="store_true",
                   help="accept a context past the model's max_position_embeddings (extrapolation) "
                        "(default: off)")
    add_hardware_option(p, "GPU whose capacity the per-GPU memory is held against")
    add_mapping_options(p, auto=True, redundant=True)
    p.add_argument("--engram", choices=("hbm", "host"), default="hbm", help="where the Engram tables live "
                   "(default: hbm)")
    p.add_argument("--hot-cache-rows", type=token_count, default=None, help="with --engram host: rows of each "
                   "Engram table kept in HBM (default: 65536)")
    p.set_defaults(func=cmd_memory)
