"""What a node counts: its token count, and the attention arithmetic over ledger rows (pairs a
query attends, KV entries it unpacks, index-K entries a query tile reads, bytes per entry) that
the cost rules share; and how many times a node's output tensor holds its dims (:func:`units`)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..algebra import Value, exact, floordiv, select, smax, smin, ssum
from ..ir.graph import Node
from ..ir.ledger import Row, image_tokens
from ..ir.ops import BlockMax, Compressor, Dequantize, IndexScore, SparseAttention
from ..ir.plan import Plan
from ..ir.rows import groups, per_request, total
from ..ir.visibility import capped_floor_sum, floor_sum, range_sum, window_sum
from ..model.config import ModelSpec
from ..model.formats import FORMATS, bytes_per_value, canonical_format
from ..reuse import cached

_PRECISION = {"e2m1": "fp4", "e4m3": "fp8", "bf16": "bf16", "fp32": "tf32"}

#: Queries per tile of the index-scoring kernel (a kernel-design assumption, not a measurement).
#: Scoring is a GEMM-like q·Kᵀ: a CTA keeps a tile of queries on chip and streams the index K
#: past all of them. 64 queries × 32 heads × 128 dims of FP4 index Q are 128 KiB, the largest
#: power-of-two tile that leaves room for double-buffered K tiles in an H200 SM's 228 KiB of
#: shared memory. Only the K reads depend on it (see :func:`index_k_reads`).
QUERY_TILE = 64


@dataclass(frozen=True)
class CostContext:
    """What a cost rule may read: the model, the plan, and how many GPUs share one NVLink domain
    (``None``: every collective stays inside one; a hardware description gives the real figure)."""

    model: ModelSpec
    plan: Plan
    gpus_per_node: int | None = None


#: the counts of :func:`tokens_of` that read the plan's requests, not only the rows
REQUEST_COUNTS = frozenset(("logits", "image"))


def tokens(node: Node, ctx: CostContext) -> Value:
    """The token count a node scales with (its ``count`` over its rows)."""
    return tokens_of(node.rows, node.count, ctx, node.layer)


def tokens_of(rows: tuple[Row, ...], count: str, ctx: CostContext, layer: int | None = None) -> Value:
    """The token count ``count`` over ``rows`` (of ``layer``, for counts per compressed entry);
    logits follow the row's copies (a DP rank holds only some copies of a request)."""
    # each formula runs on one Row, or once on a table's columns (ir/rows.py)
    if count == "q" or count == "patch":
        return ssum(total(g.tokens) for g in groups(rows))
    if count == "kv":
        return ssum(total(g.kv_tokens) for g in groups(rows))
    if count == "in":
        return ssum(total(g.in_tokens) for g in groups(rows))
    if count == "entry":  # after an owner's pooling: one per compressed entry written
        return new_entries(rows, ctx.model.layers[layer].compress_ratio)
    if count == "logits":  # a copy's share of its request's logit positions, times the row's copies
        share = [floordiv(q.emits_logits, q.copies) for q in ctx.plan.requests]
        return ssum(total(per_request(share, g) * g.copies) for g in groups(rows))
    if count == "image":
        images = [image_tokens(ctx.model, q)[1] for q in ctx.plan.requests]
        return ssum(total(per_request(images, g)) for g in groups(rows))
    return 0


def units(node: Node, t: Value) -> Value:
    """How many times ``node``'s output tensor holds its dims: once per token (``t``, the count
    the reader scales with), except for ops whose output is per something else — an unpacked
    main-KV entry, a scored (query, entry) pair, a block of scored pairs, a compressed entry."""
    op = node.op
    if isinstance(op, Dequantize):
        return kv_entries(op, node.rows)
    if isinstance(op, IndexScore):
        return scored_pairs(op, node.rows)
    if isinstance(op, BlockMax):  # one maximum per block of ``block`` scored positions
        return scored_pairs(op, node.rows) * Fraction(1, op.block)
    if isinstance(op, Compressor):
        return new_entries(node.rows, op.ratio)
    return t


def new_entries(rows: tuple[Row, ...], ratio: int) -> Value:
    """Global entries the rows' compressor writes (``Row.new_entries`` summed)."""
    return ssum(total(g.new_entries(ratio)) for g in groups(rows))


def scored_pairs(op, rows: tuple[Row, ...]) -> Value:
    """(query, entry) pairs an indexer op scores: the visible entries, or the candidate pool."""
    return selected_pairs(rows, op.ratio, op.pool if getattr(op, "scope", "all") == "pool" else None)


@cached(4096)
def index_k_reads(rows: tuple[Row, ...], ratio: int, at_most: int | None) -> Value:
    """Index-K entries read when each tile of :data:`QUERY_TILE` queries shares one K stream.

    A tile reads the union of what its queries score, which is at least the largest of them and
    at least their mean; so per row max(pairs / QUERY_TILE, entries of the row's last query) is
    a lower bound (one query at decode reads all it scores; a long prefill reads ~pairs/64).
    """
    if ratio == 0:
        return 0
    return ssum(_tile_reads(g, ratio, at_most) for g in groups(rows))


def _tile_reads(r, ratio: int, at_most: int | None) -> Value:
    """:func:`index_k_reads` of one Row, or of a table's columns at once."""
    if at_most is None:
        pairs, last = range_sum(floor_sum, r.q_start, r.q_end, ratio), floordiv(r.q_end, ratio)
    else:
        pairs = range_sum(capped_floor_sum, r.q_start, r.q_end, ratio, at_most)
        last = smin(floordiv(r.q_end, ratio), at_most)
    reads = r.copies * smax(pairs * Fraction(1, QUERY_TILE), last, evaluate=False)
    return total(select(r.q_end == r.q_start, 0, reads))  # a row without queries reads nothing


@cached(4096)  # symbolic sums are slow to build and several ops ask for the same one
def selected_pairs(rows: tuple[Row, ...], ratio: int, at_most: int | None) -> Value:
    """Σ over queries of the global entries attended (or scored): min(⌊(i+1)/m⌋, at_most), ``at_most``: the
    entries one query may reach (a pool or top-k), None: no limit."""
    if ratio == 0:
        return 0
    if at_most is None:
        return ssum(total(g.copies * range_sum(floor_sum, g.q_start, g.q_end, ratio)) for g in groups(rows))
    return ssum(total(g.copies * range_sum(capped_floor_sum, g.q_start, g.q_end, ratio, at_most)) for g in groups(rows))


def window_pairs(rows: tuple[Row, ...], window: int) -> Value:
    """Σ over queries of SWA keys attended: min(i + 1 − swa_start, W)."""
    return ssum(total(g.copies * (window_sum(g.q_end - g.swa_start, window)
                                  - window_sum(g.q_start - g.swa_start, window))) for g in groups(rows))


def kv_entries(op: SparseAttention | Dequantize, rows: tuple[Row, ...]) -> Value:
    """Main-KV entries attention reads (and its unpack dequantises) over ``rows``."""
    if isinstance(op, Dequantize):
        return selected_pairs(rows, op.ratio, op.topk)
    if op.kv_owner is None:
        return 0
    return selected_pairs(rows, op.ratio, None if op.dense_compressed else op.topk)


@cached(4096)
def entry_bytes(layout: str, dim: int) -> Fraction | int:
    """Bytes of ``dim`` values stored as ``layout`` (scales included): one cache entry, or one
    token's tensor; an int when whole, so the counts it multiplies stay ints."""
    return exact(bytes_per_value(layout) * dim)


def flops_precision(fmt: str) -> str:
    """The peak a GEMM over weights stored as ``fmt`` runs at (its element type's)."""
    return _PRECISION[FORMATS[fmt if fmt in FORMATS else canonical_format(fmt)].element]
