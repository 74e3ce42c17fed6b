"""What a command's options resolve to, built once from the parsed arguments and handed on explicitly.

A command reads its parsed ``argparse.Namespace`` and never writes it (tests/test_cli_args.py keeps it
so): the checkpoint(s) the ``--hardware`` runs, the deployment the mapping options pick and the basis
an answer is priced on are a :class:`Resolved` record that the command's body passes to its renderer
(:func:`~v41graph.cli.options.mapping_options.emit_priced`, :func:`~v41graph.cli.shared.emit`).

>>> import argparse
>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.cli.options.checkpoint_options import add_checkpoint_options, resolve_checkpoint
>>> p = argparse.ArgumentParser()
>>> add_checkpoint_options(p)
>>> args = p.parse_args([])
>>> r = resolve_checkpoint(args, load_hardware("h200_sxm"), load_model("deepseek-v4-flash"))
>>> r.model.expert_dtype, [c.checkpoint.hf_id for c in r.checkpoints], vars(args)
('fp8', ['sgl-project/DeepSeek-V4-Flash-FP8'], {'checkpoint': None, 'fp4_on_hopper': False})
>>> r.also(r.checkpoints).checkpoints == r.checkpoints   # a checkpoint already named is not named twice
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from ...model.checkpoints import CheckpointChoice


@dataclass(frozen=True)
class Resolved:
    """The model as its checkpoint, the checkpoints the command ran (one, or one per side, first seen
    first), the deployment (a ``MappingChoice``, None where none is priced) and the basis record."""

    model: Any = None
    checkpoints: tuple[CheckpointChoice, ...] = ()
    mapping: Any = None
    basis: dict[str, Any] | None = None

    def also(self, checkpoints: Iterable[CheckpointChoice]) -> "Resolved":
        """This record with ``checkpoints`` added after its own, each named once."""
        out = list(self.checkpoints)
        for c in checkpoints:
            if c not in out:
                out.append(c)
        return replace(self, checkpoints=tuple(out))
