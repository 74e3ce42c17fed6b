"""What every command shares: the argument error, the ``--model`` it reads, text or ``--json`` out."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any, Callable

from ..errors import V41Error
from ..model.config import load_model


class CliError(V41Error):
    """A command-line argument is invalid."""


def emit(args: argparse.Namespace, data: dict[str, Any], text: Callable[[dict[str, Any]], str]) -> None:
    """Print ``data`` as JSON with ``--json``, else its text; with the checkpoint the command ran, if
    it chose one (cli/checkpoint_options.py): its record in the JSON, its line above the text."""
    from .checkpoint_options import checkpoint_lines, checkpoint_record
    if args.json:
        print(json.dumps({**data, **checkpoint_record(args)}, indent=2))
    else:
        print("".join(f"{line}\n" for line in checkpoint_lines(args)) + text(data))


def model_of(args: argparse.Namespace):
    """The ``--model``; ``--allow-past-max-position`` lifts its max_position_embeddings on purpose."""
    model = load_model(args.model)
    return replace(model, max_position=None) if getattr(args, "allow_past_max_position", False) else model
