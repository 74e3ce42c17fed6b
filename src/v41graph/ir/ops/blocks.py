"""Payloads of the other blocks: mHC, MoE, Engram, communication, vision and the DSpark head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Op, canonical


@dataclass(frozen=True)
class MhcCoefficients(Op):
    """mixes = x[n·d] · hc_fn[(2+n)·n, n·d] with an RMS rescale, then Sinkhorn on the n×n comb.

    ``head``: V4's ``hc_head`` — only the n pre-weights (hc_head_fn is [n, n·d]), no Sinkhorn.
    """

    streams: int
    dim: int
    sinkhorn_iters: int
    head: bool = False
    needs: ClassVar = ("x",)

    @property
    def mixes(self) -> int:
        return self.streams if self.head else (2 + self.streams) * self.streams


@dataclass(frozen=True)
class MhcCollapse(Op):
    """h = Σ_i pre_i · x_i: the n streams into the sublayer input."""

    streams: int
    dim: int
    lagged: bool  # V4.1: uses the previous sublayer's pre-mix
    identity: bool = False  # V4.1's first collapse uses a constant one-hot pre-mix (no coeff input)
    needs: ClassVar = ("x", "coeff")

    def required_roles(self) -> tuple[str, ...]:
        return ("x",) if self.identity else self.needs


@dataclass(frozen=True)
class MhcExpand(Op):
    """x' = post ⊗ f + comb · x: the sublayer output back into n streams."""

    streams: int
    dim: int
    needs: ClassVar = ("f", "x", "coeff")


@dataclass(frozen=True)
class MoeGate(Op):
    experts: int
    top_k: int
    dim: int
    needs: ClassVar = ("x",)


@dataclass(frozen=True)
class RoutedExperts(Op):
    """One GEMM of the SwiGLU experts, each token to ``top_k`` of ``experts``.

    ``part`` "up": w1 and w3 fused, d → 2·inter per routed copy; "down": w2, inter → d.
    """

    experts: int
    top_k: int
    dim: int
    inter: int
    weight_format: str
    part: str  # "up" | "down"
    shared: bool = False

    def __post_init__(self):
        canonical(self, "weight_format")
    needs: ClassVar = ("x",)
    takes: ClassVar = ("route",)

    @property
    def weights_per_expert(self) -> int:
        return (2 if self.part == "up" else 1) * self.dim * self.inter


@dataclass(frozen=True)
class SwiGLU(Op):
    """silu(clamp(gate)) · clamp(up) over each routed copy: 2·inter → inter values, ``top_k`` per token."""

    inter: int
    top_k: int
    shared: bool = False
    needs: ClassVar = ("x",)


@dataclass(frozen=True)
class MoeCombine(Op):
    top_k: int
    dim: int
    needs: ClassVar = ("routed", "shared")


@dataclass(frozen=True)
class EngramHash(Op):
    """N-gram hashes of the actual token ids: (max_ngram − 1) × heads columns per position."""

    columns: int
    needs: ClassVar = ()


@dataclass(frozen=True)
class EngramLookup(Op):
    columns: int
    row_dim: int
    layout: str
    needs: ClassVar = ("ids", "table")


@dataclass(frozen=True)
class EngramGate(Op):
    """Per-stream gate from key·h, then h ← h + gate · value, for all n streams."""

    streams: int
    dim: int
    needs: ClassVar = ("kv", "x")


@dataclass(frozen=True)
class Communication(Op):
    """A collective over ``ranks`` GPUs of ``dim`` values per token, ``copies`` per token (top-k
    for the EP dispatch and combine), sent as ``payload`` (a format name: FP8 dispatch is 1 B per
    value plus its scales)."""

    collective: str  # "all_reduce" | "reduce_scatter" | "all_gather" | "all_to_all"
    purpose: str
    dim: int
    ranks: int
    payload: str = "bf16"
    copies: int = 1
    needs: ClassVar = ("x",)

    def __post_init__(self):
        canonical(self, "payload")


@dataclass(frozen=True)
class VisionEncoder(Op):
    """The ViT tower over image patches: ``layers`` blocks of width ``dim``."""

    layers: int
    dim: int
    heads: int
    inter: int
    patch: int
    needs: ClassVar = ()


@dataclass(frozen=True)
class DraftHead(Op):
    """DSpark Markov head (vocab × rank) and confidence head (d + rank → 1), over the base logits."""

    vocab: int
    rank: int
    dim: int
    needs: ClassVar = ("x", "logits")
