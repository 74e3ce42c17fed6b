"""What a node counts: its token count, and the attention arithmetic over ledger rows (pairs a
query attends, KV entries it unpacks, bytes per entry) that the cost rules share."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..algebra import Value, floordiv, ssum
from ..ir.graph import Node
from ..ir.ledger import Row, image_tokens
from ..ir.ops import Dequantize, SparseAttention
from ..ir.plan import Plan
from ..ir.visibility import capped_floor_sum, floor_sum, range_sum, window_sum
from ..model.config import ModelSpec
from ..model.formats import FORMATS, bytes_per_value

_PRECISION = {"e2m1": "fp4", "e4m3": "fp8", "bf16": "bf16", "fp32": "tf32"}


@dataclass(frozen=True)
class CostContext:
    """What a cost rule may read: the model, the plan, and how many GPUs share one NVLink domain
    (``None``: every collective stays inside one; a hardware description gives the real figure)."""

    model: ModelSpec
    plan: Plan
    gpus_per_node: int | None = None


def tokens(node: Node, ctx: CostContext) -> Value:
    """The token count a node scales with (its ``count`` over its rows)."""
    return tokens_of(node.rows, node.count, ctx)


def tokens_of(rows: tuple[Row, ...], count: str, ctx: CostContext) -> Value:
    """The token count ``count`` over ``rows``; logits follow the row's copies (a DP rank holds
    only some copies of a request)."""
    if count == "q" or count == "patch":
        return ssum(r.tokens for r in rows)
    if count == "kv":
        return ssum(r.kv_tokens for r in rows)
    if count == "in":
        return ssum(r.in_tokens for r in rows)
    if count == "logits":
        reqs = ctx.plan.requests
        return ssum(floordiv(reqs[r.request].emits_logits, reqs[r.request].copies) * r.copies for r in rows)
    if count == "image":
        return ssum(image_tokens(ctx.model, ctx.plan.requests[r.request])[1] for r in rows)
    return 0


def selected_pairs(rows: tuple[Row, ...], ratio: int, cap: int | None) -> Value:
    """Σ over queries of the global entries attended (or scored): min(⌊(i+1)/m⌋, cap)."""
    if ratio == 0:
        return 0
    if cap is None:
        return ssum(r.copies * range_sum(floor_sum, r.q_start, r.q_end, ratio) for r in rows)
    return ssum(r.copies * range_sum(capped_floor_sum, r.q_start, r.q_end, ratio, cap) for r in rows)


def window_pairs(rows: tuple[Row, ...], window: int) -> Value:
    """Σ over queries of SWA keys attended: min(i + 1 − swa_start, W)."""
    return ssum(r.copies * (window_sum(r.q_end - r.swa_start, window) - window_sum(r.q_start - r.swa_start, window))
                for r in rows)


def kv_entries(op: SparseAttention | Dequantize, rows: tuple[Row, ...]) -> Value:
    """Main-KV entries attention reads (and its unpack dequantises) over ``rows``."""
    if isinstance(op, Dequantize):
        return selected_pairs(rows, op.ratio, op.topk)
    if op.kv_owner is None:
        return 0
    return selected_pairs(rows, op.ratio, None if op.dense_compressed else op.topk)


def entry_bytes(layout: str, dim: int) -> Fraction:
    """Bytes of one cache entry of ``dim`` values stored as ``layout`` (scales included)."""
    return bytes_per_value(layout) * dim


def flops_precision(fmt: str) -> str:
    return _PRECISION[FORMATS[fmt].element]
