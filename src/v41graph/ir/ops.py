"""Op payloads: one frozen dataclass per op kind — what a node *is*, never its cost or schedule.

Token counts are not part of a payload: they come from the ledger rows the node carries
(``Node.rows``), so one payload serves a prefill, a decode step or a replayed tail alike.
Each kind declares the input roles it needs (``needs``) and the roles it may take
(``takes``), which :func:`v41graph.ir.graph.verify` checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Op:
    """Base of every op payload."""

    needs: ClassVar[tuple[str, ...]] = ()
    takes: ClassVar[tuple[str, ...]] = ()
    storage: ClassVar[bool] = False

    @property
    def kind(self) -> str:
        return type(self).__name__

    def required_roles(self) -> tuple[str, ...]:
        return self.needs


# ---- compute ------------------------------------------------------------------------------------

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

    def required_roles(self) -> tuple[str, ...]:
        if self.kv_owner is None:
            return self.needs
        return self.needs + (("main_kv",) if self.dense_compressed else ("main_kv", "topk"))


@dataclass(frozen=True)
class MhcCoefficients(Op):
    """mixes = x[n·d] · hc_fn[(2+n)·n, n·d] with an RMS rescale, then Sinkhorn on the n×n comb."""

    streams: int
    dim: int
    sinkhorn_iters: int
    needs: ClassVar = ("x",)


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
    """All-reduce (tp) or all-to-all dispatch/combine (ep) of ``dim`` values per token."""

    collective: str  # "all_reduce" | "all_to_all"
    purpose: str
    dim: int
    ranks: int
    needs: ClassVar = ("x",)


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
    """DSpark Markov head (vocab × rank) and confidence head (d + rank → 1)."""

    vocab: int
    rank: int
    dim: int
    needs: ClassVar = ("x",)


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


def covers(op: Op, cls: type) -> bool:
    """True if ``op`` is a ``cls`` or a fused module covering one."""
    if isinstance(op, Fused):
        return any(isinstance(c, cls) for c in op.covers)
    return isinstance(op, cls)
