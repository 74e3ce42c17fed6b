"""The base payload, storage kinds and fused modules (what a fused node covers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...model.formats import FORMATS, canonical_format
from ...model.sharding import Rule


class Op:
    """Base of every op payload."""

    needs: ClassVar[tuple[str, ...]] = ()
    takes: ClassVar[tuple[str, ...]] = ()
    storage: ClassVar[bool] = False
    #: fields that name another layer (the KV owner, the Top-K producer): the graph's edges say the
    #: same, and no cost rule reads them but to ask whether there is one — so work alike in two
    #: layers with different owners is costed once (``costs.node.static_signature``)
    references: ClassVar[tuple[str, ...]] = ()
    #: the op's own sharding row (``v41graph.model.user_sharding.sharding_rule``); None: the table's
    sharding: ClassVar[object] = None

    @property
    def kind(self) -> str:
        return type(self).__name__

    def required_roles(self) -> tuple[str, ...]:
        return self.needs


def canonical(op: Op, *fields: str) -> None:
    """Replace a friendly format alias (``fp8``) in ``op``'s ``fields`` by its canonical name, once,
    at construction (a frozen payload: reports and cost keys then see one name); unknown: an error."""
    for f in fields:
        value = getattr(op, f)
        if value not in FORMATS:
            object.__setattr__(op, f, canonical_format(value))


# ---- storage ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Storage(Op):
    """A cache or table that lives across forwards; edges into it are writes, out of it reads."""

    owner: int
    layout: str
    storage: ClassVar[bool] = True


@dataclass(frozen=True)
class GlobalKVStore(Storage):
    ratio: int = 1


@dataclass(frozen=True)
class IndexKStore(Storage):
    ratio: int = 1


@dataclass(frozen=True)
class SwaRing(Storage):
    window: int = 128


@dataclass(frozen=True)
class CompressorState(Storage):
    ratio: int = 2


@dataclass(frozen=True)
class CandidatePool(Storage):
    """Workspace of ≤ blocks × block positions; not long-lived KV."""

    positions: int = 16384


@dataclass(frozen=True)
class EngramTable(Storage):
    rows: int = 0


@dataclass(frozen=True)
class GraphInput(Op):
    """Where a hand-built graph's tensors come from (the hidden states of the block before it):
    ``dim`` values per token, held like a storage — its readers pay for reading them, it costs
    nothing itself — and on every GPU (its own sharding row: nothing to split)."""

    dim: int
    storage: ClassVar[bool] = True
    sharding: ClassVar[Rule] = Rule("graph input", "replicated", "rank", (), (), "an input: nothing to split")


# ---- fusion -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fused(Op):
    """A fused module: which nodes it replaced and what they were, so nothing is charged twice.

    ``reread`` lists (role, dims) of external inputs the kernel reads a second time (two-pass
    Mega-mHC re-reads the residual to compute its own coefficients).
    """

    rule: str
    members: tuple[str, ...]
    covers: tuple[Op, ...]
    reread: tuple[tuple[str, int], ...] = ()
    writes: tuple[tuple[int, str], ...] = ()  # (values per token, format) of each output leaving the module
    counts: tuple[str, ...] = ()  # each member's token count ("q", "logits" …): the head's fused nodes count logits


def covers(op: Op, cls: type) -> bool:
    """True if ``op`` is a ``cls`` or a fused module covering one."""
    if isinstance(op, Fused):
        return any(isinstance(c, cls) for c in op.covers)
    return isinstance(op, cls)
