"""``v41graph dspark``: the verify length DSpark should use at each batch size.

    v41graph dspark --acceptance 0.9,0.8,0.7,0.6,0.5 --batch 1,8,64 [--hardware h200_sxm] [--itl-ms 20] [--json]
"""

from __future__ import annotations

import argparse

from .options.checkpoint_options import resolve_checkpoint
from .options.cost_options import add_hardware_option
from .options.plan_options import add_mapping_options, token_count
from .lists import comma_list


def _batches(text: str) -> list[int]:
    out = list(comma_list(text, int, error=f"{text!r} is not a comma-separated list of batch sizes"))
    for b in out:
        if b < 1:
            raise argparse.ArgumentTypeError(f"batch size {b} must be >= 1")
    return out


def cmd_dspark(args: argparse.Namespace) -> None:
    from ..analysis.serving.dspark_verify import dspark_answer, dspark_workload
    from ..render.text.dspark_text import dspark_text
    from ..costs.requests.dspark_acceptance import Acceptance
    from ..costs.hardware import load_hardware
    from ..model.config import load_model
    from .options.checkpoint_options import shown_checkpoints
    from .options.mapping_options import print_priced, resolve_mapping
    hardware = load_hardware(args.hardware)
    ran = resolve_checkpoint(args, hardware, load_model(args.model))  # the checkpoint the GPU runs
    model = ran.model
    work = dspark_workload(model, args.context, args.batch)  # the largest batch must fit
    choice = resolve_mapping(args, model, hardware, work)
    answer = dspark_answer(model, hardware, Acceptance.parse(args.acceptance), args.batch, choice,
                           context=args.context, itl_s=None if args.itl_ms is None else args.itl_ms / 1e3,
                           checkpoints=shown_checkpoints(args, ran.checkpoints))
    print_priced(args, answer, dspark_text)


def register(sub, common) -> None:
    """Add the ``dspark`` command to the CLI's subparsers."""
    p = sub.add_parser("dspark", parents=[common], help="DSpark: E[emitted], step time and tokens/s per verify "
                       "length, and the chosen length per batch size")
    p.add_argument("--acceptance", default="0.9,0.8,0.7,0.6,0.5",
                   help="per-position conditional acceptance a1,…,a5 (default: 0.9,0.8,0.7,0.6,0.5)")
    p.add_argument("--batch", type=_batches, default=[1, 8, 64], help="batch sizes (default: 1,8,64)")
    p.add_argument("--context", type=token_count, default=4096, help="tokens each request holds (default: 4096)")
    add_hardware_option(p, "GPU the steps run on")
    p.add_argument("--itl-ms", type=float, default=None, help="bound on the step time a client waits, in ms "
                   "(default: none; maximise tokens/s)")
    add_mapping_options(p, auto=True)
    p.set_defaults(func=cmd_dspark)
