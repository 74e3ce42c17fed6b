"""What every command shares: the argument error, the ``--model`` it reads, text or ``--json`` out."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any, Callable, Sequence

from ..errors import V41Error
from ..model.config import load_model


class CliError(V41Error):
    """A command-line argument is invalid."""


def emit(args: argparse.Namespace, data: dict[str, Any], text: Callable[[dict[str, Any]], str],
         checkpoints: Sequence = ()) -> None:
    """Print ``data`` as JSON with ``--json``, else its text; with the ``checkpoints`` the command ran, if
    it chose one (cli/options/checkpoint_options.py): its record in the JSON, its line above the text. The
    JSON is the :class:`~v41graph.analysis.answer.Priced` answer's ``to_json()`` (no basis, no deployment)."""
    from ..analysis.answer import Priced
    from .options.checkpoint_options import shown_checkpoints
    from .options.mapping_options import print_priced
    print_priced(args, Priced(data, None, None, tuple(shown_checkpoints(args, checkpoints))), text)


def model_of(args: argparse.Namespace):
    """The ``--model``; ``--allow-past-max-position`` lifts its max_position_embeddings on purpose."""
    model = load_model(args.model)
    return replace(model, max_position=None) if getattr(args, "allow_past_max_position", False) else model


def add_overlap_option(p: argparse.ArgumentParser) -> None:
    """``--disable-overlap-schedule`` (SGLang's own flag), for the commands that simulate serving.

    >>> p = argparse.ArgumentParser()
    >>> add_overlap_option(p)
    >>> p.parse_args([]).disable_overlap_schedule, p.parse_args(["--disable-overlap-schedule"]).disable_overlap_schedule
    (False, True)
    """
    p.add_argument("--disable-overlap-schedule", action="store_true", help="emit each token at the end of the "
                   "step that produced it (default: off, SGLang's overlap scheduler: the CPU processes a step's "
                   "outputs after launching the next step, so its tokens go out when that next step ends, and "
                   "TTFT includes the step after the prefill)")
