"""``--checkpoint`` and ``--fp4-on-hopper``: which checkpoint of the ``--model`` the ``--hardware`` runs.

Declared beside ``--hardware`` (:func:`~v41graph.cli.options.cost_options.add_hardware_option`), so every
command that has both applies one rule (:func:`v41graph.model.checkpoints.choose_checkpoint`): a GPU
without FP4 tensor cores (h200) runs a model's engine-published FP8 checkpoint where one exists, a
GPU with them (b200, gb200, gb300) the official FP4 one. The choice is returned, never written on the
arguments (:func:`resolve_checkpoint`: a :class:`~.resolved.Resolved` record), and printed beside the
deployment line (:func:`checkpoint_lines`) and as the ``checkpoint`` record of ``--json``
(:func:`checkpoint_record`).

>>> import argparse
>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> p = argparse.ArgumentParser()
>>> add_checkpoint_options(p)
>>> args = p.parse_args(["--checkpoint", "fp4", "--fp4-on-hopper"])
>>> r = resolve_checkpoint(args, load_hardware("h200_sxm"), load_model("deepseek-v4-flash"))
>>> r.model.checkpoint, r.model.expert_dtype
('deepseek-ai/DeepSeek-V4-Flash', 'fp4')
>>> print(checkpoint_lines(args, r.checkpoints)[0])  # doctest: +ELLIPSIS
checkpoint: deepseek-ai/DeepSeek-V4-Flash (fp4 experts, official, VERIFIED) — chosen by --checkpoint fp4; caveat: ...
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from ...model.checkpoints import CheckpointChoice, choose_checkpoint
from .resolved import Resolved


def add_checkpoint_options(p) -> None:
    p.add_argument("--checkpoint", default=None, metavar="NAME",
                   help="which published checkpoint of --model to run: a Hugging Face id, its name, or fp4 / fp8 "
                   "(default: the one the GPU runs: the engine-published FP8 one on a GPU without FP4 tensor "
                   "cores where one exists, else the official FP4 one)")
    p.add_argument("--fp4-on-hopper", action="store_true",
                   help="allow --checkpoint to name an FP4 checkpoint on a GPU without FP4 tensor cores for a model "
                   "with an FP8 checkpoint (priced at the FP8 peak) (default: off)")


def choose(args: argparse.Namespace, model, hardware) -> CheckpointChoice:
    """The checkpoint ``model`` runs as on ``hardware`` by the command's options."""
    return choose_checkpoint(model, hardware.has_fp4, getattr(args, "checkpoint", None),
                             fp4_on_hopper=getattr(args, "fp4_on_hopper", False), gpu=hardware.name,
                             field="--checkpoint", flag="--fp4-on-hopper")


def resolve_checkpoint(args: argparse.Namespace, hardware, model) -> Resolved:
    """``model`` as the checkpoint ``hardware`` runs, with that choice: the record a command hands on."""
    choice = choose(args, model, hardware)
    return Resolved(model=choice.apply(model), checkpoints=(choice,))


def model_for(args: argparse.Namespace, hardware, model):
    """``model`` (the command's ``--model``) as the checkpoint ``hardware`` runs (see the module doc)."""
    return choose(args, model, hardware).apply(model)


#: the metrics (``formula``, ``ask --metric``) that depend on the routed experts' storage; a count or a cache
#: size is the same on every checkpoint, so its answer names none
CHECKPOINT_METRICS = ("bytes", "weights_bytes", "sol_time")


def shown_checkpoints(args: argparse.Namespace, checkpoints: Sequence[CheckpointChoice]) -> Sequence[CheckpointChoice]:
    """The checkpoints the command ran, unless its answer is a metric no checkpoint changes."""
    metric = getattr(args, "metric", None)
    return [] if metric and metric not in CHECKPOINT_METRICS else checkpoints


def checkpoint_lines(args: argparse.Namespace, checkpoints: Sequence[CheckpointChoice]) -> list[str]:
    """One text line per checkpoint the command ran (``checkpoints``: one, or one per side)."""
    return [c.line() for c in shown_checkpoints(args, checkpoints)]


def checkpoint_record(args: argparse.Namespace, checkpoints: Sequence[CheckpointChoice]) -> dict[str, Any]:
    """``{"checkpoint": {...}}`` (or a list, one per side, where they differ); ``{}`` when none was chosen."""
    chosen = [c.to_dict() for c in shown_checkpoints(args, checkpoints)]
    return {} if not chosen else {"checkpoint": chosen[0] if len(chosen) == 1 else chosen}
