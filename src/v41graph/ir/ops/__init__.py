"""Op payloads: one frozen dataclass per op kind — what a node *is*, never its cost or schedule.

Token counts are not part of a payload: they come from the ledger rows the node carries
(``Node.rows``), so one payload serves a prefill, a decode step or a replayed tail alike.
Each kind declares the input roles it needs (``needs``) and the roles it may take
(``takes``), which :func:`v41graph.ir.verify.verify` checks.
"""

from .attention import (BlockMax, CacheWrite, CandidateSelect, Compressor, Dequantize, Embedding, Gemm, IndexScore,
                        Norm, Quantize, Rope, SparseAttention, TopK)
from .base import (CandidatePool, CompressorState, EngramTable, Fused, GlobalKVStore, GraphInput, IndexKStore, Op,
                   Storage, SwaRing,
                   covers)
from .blocks import (Communication, DraftHead, EngramGate, EngramHash, EngramLookup, MhcCoefficients, MhcCollapse,
                     MhcExpand, MoeCombine, MoeGate, RoutedExperts, SwiGLU, VisionEncoder)

__all__ = sorted(name for name in dir() if not name.startswith("_") and name not in ("attention", "base", "blocks"))
