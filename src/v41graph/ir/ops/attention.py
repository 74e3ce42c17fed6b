"""Payloads of the embedding and attention sublayer: GEMMs, norms, RoPE, (de)quantisation, the
compressor, cache writes, index scoring, candidate selection, Top-K and sparse attention."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Op, canonical


@dataclass(frozen=True)
class Embedding(Op):
    vocab: int
    dim: int
    streams: int  # the embedding is repeated into the hc_mult residual streams


@dataclass(frozen=True)
class Gemm(Op):
    """y[t, n] = x[t, k] · W[k, n]; ``groups`` block-diagonal groups (wo_a) each k → n."""

    name: str
    k: int
    n: int
    weight_format: str
    groups: int = 1
    needs: ClassVar = ("x",)

    def __post_init__(self):
        canonical(self, "weight_format")  # "fp8" → fp8_e4m3 (model/formats.py ALIASES)


@dataclass(frozen=True)
class Norm(Op):
    dim: int
    needs: ClassVar = ("x",)


@dataclass(frozen=True)
class Rope(Op):
    heads: int
    rope_dims: int
    needs: ClassVar = ("x",)


@dataclass(frozen=True)
class Dequantize(Op):
    """Unpack the main-KV entries attention selects from storage ``format`` to bf16.

    Reads the owner's storage (``main_kv``) and, under Top-K, the selection (``topk``); entries
    per query as attention's: ≤ ``topk`` of the visible groups of ``ratio`` (every one if None).
    """

    dim: int
    format: str
    ratio: int
    topk: int | None
    needs: ClassVar = ("main_kv",)
    takes: ClassVar = ("topk",)

    def required_roles(self) -> tuple[str, ...]:
        return self.needs + (() if self.topk is None else ("topk",))


@dataclass(frozen=True)
class Quantize(Op):
    """Cast to a storage format (FP8 SWA KV, FP4 main KV / index K, FP4 index Q)."""

    dim: int
    format: str
    needs: ClassVar = ("x",)

    def __post_init__(self):
        canonical(self, "format")


@dataclass(frozen=True)
class Compressor(Op):
    """Pool each group of ``ratio`` tokens with a softmax gate (ratio 1: pass-through, no gate)."""

    ratio: int
    dim: int
    gated: bool
    needs: ClassVar = ("x",)
    takes: ClassVar = ("score", "state")


@dataclass(frozen=True)
class CacheWrite(Op):
    """Write entries into a cache storage node."""

    role: str  # "swa_kv" | "main_kv" | "index_k"
    dim: int
    layout: str
    ratio: int = 1  # tokens per written entry (the owner's compress ratio; 1 for SWA)
    needs: ClassVar = ("x",)


@dataclass(frozen=True)
class IndexScore(Op):
    """Σ_h relu(q_h·k)·w_h over the visible compressed entries (``scope='all'``) or the pool."""

    heads: int
    dim: int
    scope: str  # "all" | "pool"
    pool: int
    kv_owner: int | None = None  # whose index K it scores (checked by verify)
    ratio: int = 1
    needs: ClassVar = ("q", "w", "index_k")
    takes: ClassVar = ("pool",)
    references: ClassVar = ("kv_owner",)  # see Op.references

    def required_roles(self) -> tuple[str, ...]:
        return self.needs + (("pool",) if self.scope == "pool" else ())


@dataclass(frozen=True)
class BlockMax(Op):
    """Max score over each block of ``block`` positions (the candidate source's first level)."""

    block: int
    ratio: int = 1
    needs: ClassVar = ("score",)


@dataclass(frozen=True)
class CandidateSelect(Op):
    """Keep the top ``blocks`` blocks (the newest pinned): the shared candidate pool."""

    blocks: int
    block: int
    ratio: int = 1
    needs: ClassVar = ("score",)


@dataclass(frozen=True)
class TopK(Op):
    """Select ``k`` of the scored entries (visible range with ``ratio``, or the ``pool``)."""

    k: int
    ratio: int = 1
    scope: str = "all"
    pool: int = 0
    needs: ClassVar = ("score",)


@dataclass(frozen=True)
class SparseAttention(Op):
    """Attention over ≤ topk selected global entries plus ≤ window SWA keys, with a sink."""

    heads: int
    head_dim: int
    topk: int
    window: int
    kv_owner: int | None
    topk_producer: int | None
    kv_layout: str
    swa_layout: str
    dense_compressed: bool = False  # V4 HCA: attends every compressed entry (no Top-K)
    ratio: int = 0  # the KV owner's compress ratio (0: SWA-only)
    needs: ClassVar = ("q", "swa_kv")
    takes: ClassVar = ("main_kv", "topk")
    references: ClassVar = ("kv_owner", "topk_producer")  # see Op.references

    def required_roles(self) -> tuple[str, ...]:
        if self.kv_owner is None:
            return self.needs
        return self.needs + (("main_kv",) if self.dense_compressed else ("main_kv", "topk"))
