"""Interface ③: one cost rule per op kind, computed from the node's ledger rows and formats.

A rule returns what the op itself does — flops, weights, KV and workspace traffic. Activation
traffic (what flows in and out over edges, each output tensor written once) is added for
every node from its edges, so a fused module's traffic is its own external edges and nothing
is charged twice (DESIGN.md decision 5). Rules use :mod:`v41graph.algebra` helpers, so the
same code gives numbers for numeric plans and sympy closed forms for symbolic ones. An op
without a rule raises :class:`~v41graph.errors.CostError`.

Per-GPU shares: attention projections, attention and the indexer divide by ``tp``; routed
experts by ``ep``; everything else is replicated on every GPU.

>>> from v41graph import load_model, lower, Plan, Request
>>> g = lower(load_model(), Plan([Request.prefill(4096)]))
>>> c = node_cost(g, "L3.wq_a", CostContext(load_model(), Plan([Request.prefill(4096)])))
>>> c.flop("fp8") == 2 * 4096 * 5120 * 1280
True
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import singledispatch

from ..algebra import Value, smin, ssum
from .value import Cost
from ..errors import CostError
from ..ir.graph import Graph, Node
from ..ir.ledger import Row, image_tokens
from ..model.config import ModelSpec
from ..ir.ops import (BlockMax, CacheWrite, CandidateSelect, Communication, Compressor, Dequantize, DraftHead,
                  Embedding, EngramGate, EngramHash, EngramLookup, Fused, Gemm, IndexScore, MhcCoefficients,
                  MhcCollapse, MhcExpand, MoeCombine, MoeGate, Norm, Op, Quantize, Rope, RoutedExperts,
                  SparseAttention, SwiGLU, TopK, VisionEncoder)
from ..ir.plan import Plan
from ..model.formats import bytes_per_value
from ..model.formats import FORMATS
from .traffic import module_io
from ..ir.visibility import capped_floor_sum, floor_sum, range_sum, window_sum

_PRECISION = {"e2m1": "fp4", "e4m3": "fp8", "bf16": "bf16", "fp32": "tf32"}
#: stated in every cost report: MoE weight reads are bounded by the experts a batch can touch
EXPERT_ASSUMPTION = "routed expert weights read = min(E, tokens × top_k) distinct experts (uniform routing bound)"


@dataclass(frozen=True)
class CostContext:
    model: ModelSpec
    plan: Plan


def tokens(node: Node, ctx: CostContext) -> Value:
    """The token count a node scales with (its ``count`` over its rows)."""
    if node.count == "q" or node.count == "patch":
        return ssum(r.tokens for r in node.rows)
    if node.count == "kv":
        return ssum(r.kv_tokens for r in node.rows)
    if node.count == "logits":
        return ssum(ctx.plan.requests[r.request].emits_logits for r in node.rows)
    if node.count == "image":
        return ssum(image_tokens(ctx.model, ctx.plan.requests[r.request])[1] for r in node.rows)
    return 0


# ---- attention arithmetic over ledger rows ----------------------------------------------------

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


def _flops_precision(fmt: str) -> str:
    return _PRECISION[FORMATS[fmt].element]


# ---- rules ---------------------------------------------------------------------------------------

@singledispatch
def op_cost(op: Op, node: Node, ctx: CostContext, t: Value) -> Cost:
    if op.storage:
        return Cost()  # storage holds data; reads and writes are charged to its readers and writers
    raise CostError(f"cost: no cost rule for op kind {op.kind} (node {node.id!r})")


@op_cost.register
def _(op: Gemm, node, ctx, t):
    weights = op.groups * op.k * op.n
    return Cost.of(flops={_flops_precision(op.weight_format): 2 * t * weights},
                   bytes={"weights": weights * bytes_per_value(op.weight_format)})


@op_cost.register
def _(op: Embedding, node, ctx, t):
    return Cost.of(bytes={"weights": t * op.dim * 2})  # gathered bf16 rows


@op_cost.register(Norm)
@op_cost.register(Quantize)
def _(op, node, ctx, t):
    return Cost.of(flops={"fp32": 4 * t * op.dim})


@op_cost.register
def _(op: Rope, node, ctx, t):
    return Cost.of(flops={"fp32": 3 * t * op.heads * op.rope_dims})


@op_cost.register
def _(op: Compressor, node, ctx, t):
    return Cost.of(flops={"fp32": 5 * t * op.dim})  # softmax-weighted pooling over each group


@op_cost.register
def _(op: CacheWrite, node, ctx, t):
    if op.role == "swa_kv":
        entries = t
    else:
        entries = ssum(r.new_entries(op.ratio) for r in node.rows)
    return Cost.of(bytes={"kv_write": entries * entry_bytes(op.layout, op.dim)})


@op_cost.register
def _(op: IndexScore, node, ctx, t):
    pairs = selected_pairs(node.rows, op.ratio, op.pool if op.scope == "pool" else None)
    workspace = {"workspace": t * (op.pool // 8) * 4} if op.scope == "pool" else {}
    return Cost.of(flops={"fp8": 2 * op.heads * op.dim * pairs, "fp32": 2 * op.heads * pairs},
                   bytes={"kv_read": pairs * bytes_per_value("index_k_fp4") * op.dim,
                          "act_out": pairs * 4, **workspace})


@op_cost.register(TopK)
@op_cost.register(BlockMax)
@op_cost.register(CandidateSelect)
def _(op, node, ctx, t):
    cap = op.pool if getattr(op, "scope", "all") == "pool" else None
    scored = selected_pairs(node.rows, op.ratio, cap)
    return Cost.of(flops={"fp32": 2 * scored}, bytes={"workspace": scored * 4})


@op_cost.register
def _(op: Dequantize, node, ctx, t):
    entries = kv_entries(op, node.rows)
    # scale × value per element: compute at fp32, never an FP4 GEMM peak. Its bf16 output is an
    # activation (one per entry, see activation_cost), gone when fused into attention.
    return Cost.of(flops={"fp32": 2 * entries * op.dim}, bytes={"kv_read": entries * entry_bytes(op.format, op.dim)})


@op_cost.register
def _(op: SparseAttention, node, ctx, t):
    window = window_pairs(node.rows, op.window)
    selected = kv_entries(op, node.rows)
    # QKᵀ and PV over the shared 512-d latent (K = V), at bf16. The selected main-KV entries come
    # unpacked from its Dequantize (which reads the storage), the SWA keys from its own ring.
    return Cost.of(flops={"bf16": 4 * op.heads * op.head_dim * (window + selected)},
                   bytes={"kv_read": window * entry_bytes(op.swa_layout, op.head_dim)})


@op_cost.register
def _(op: MhcCoefficients, node, ctx, t):
    mix = (2 + op.streams) * op.streams
    return Cost.of(flops={"tf32": 2 * t * op.streams * op.dim * mix,
                          "fp32": t * op.sinkhorn_iters * 4 * op.streams * op.streams},
                   bytes={"weights": mix * op.streams * op.dim * 4})


@op_cost.register
def _(op: MhcCollapse, node, ctx, t):
    return Cost.of(flops={"fp32": 2 * t * op.streams * op.dim})


@op_cost.register
def _(op: MhcExpand, node, ctx, t):
    return Cost.of(flops={"fp32": 2 * t * op.dim * op.streams * (op.streams + 1)})


@op_cost.register
def _(op: MoeGate, node, ctx, t):
    return Cost.of(flops={"bf16": 2 * t * op.dim * op.experts, "fp32": 4 * t * op.experts},
                   bytes={"weights": op.experts * op.dim * 2 + op.experts * 4})


@op_cost.register
def _(op: RoutedExperts, node, ctx, t):
    per_expert = op.weights_per_expert  # each part reads its own weights of the experts touched
    touched = op.experts if op.shared else smin(op.experts, t * op.top_k)
    return Cost.of(flops={_flops_precision(op.weight_format): 2 * t * op.top_k * per_expert},
                   bytes={"weights": touched * per_expert * bytes_per_value(op.weight_format)})


@op_cost.register
def _(op: SwiGLU, node, ctx, t):
    return Cost.of(flops={"fp32": 3 * t * op.top_k * op.inter})  # silu(gate) · up, with the clamp


@op_cost.register
def _(op: MoeCombine, node, ctx, t):
    return Cost.of(flops={"fp32": 2 * t * (op.top_k + 1) * op.dim})


@op_cost.register
def _(op: EngramHash, node, ctx, t):
    return Cost.of(flops={"fp32": 4 * t * op.columns}, bytes={"act_in": t * 4 * 4})


@op_cost.register
def _(op: EngramLookup, node, ctx, t):
    payload = t * op.columns * op.row_dim * bytes_per_value(op.layout)  # 6,336 B per token per module
    if ctx.plan.engram_residency == "host":
        return Cost.of(comm={"host": payload})
    return Cost.of(bytes={"weights": payload})


@op_cost.register
def _(op: EngramGate, node, ctx, t):
    return Cost.of(flops={"fp32": 6 * t * op.streams * op.dim})


@op_cost.register
def _(op: Communication, node, ctx, t):
    p = op.ranks
    top_k = ctx.model.experts_per_token if op.collective == "all_to_all" else 1
    factor = 2 * (p - 1) if op.collective == "all_reduce" else top_k * (p - 1)
    return Cost.of(comm={"nvlink": t * op.dim * 2 * factor / p})


@op_cost.register
def _(op: VisionEncoder, node, ctx, t):
    per_layer = 2 * t * (4 * op.dim * op.dim + 3 * op.dim * op.inter)
    attention = ssum(4 * op.dim * r.tokens * r.tokens // max(1, ctx.plan.requests[r.request].images)
                     for r in node.rows)
    weights = op.layers * (4 * op.dim * op.dim + 3 * op.dim * op.inter) * 2
    return Cost.of(flops={"bf16": op.layers * (per_layer + attention)}, bytes={"weights": weights})


@op_cost.register
def _(op: DraftHead, node, ctx, t):
    return Cost.of(flops={"bf16": 2 * t * op.vocab * op.rank + 2 * t * (op.dim + op.rank)},
                   bytes={"weights": 2 * op.vocab * op.rank * 2})


@op_cost.register
def _(op: Fused, node, ctx, t):
    return sum((op_cost(c, node, ctx, t) for c in op.covers), Cost())


# ---- node level ----------------------------------------------------------------------------------

def _per(graph: Graph, src: str, t: Value) -> Value:
    """How many times a tensor from ``src`` holds its dims: once per token, or per unpacked KV entry."""
    node = graph.nodes[src]
    return kv_entries(node.op, node.rows) if isinstance(node.op, Dequantize) else t


def activation_cost(graph: Graph, node: Node, t: Value) -> Cost:
    """Bytes of the activations a node reads and writes (:func:`v41graph.costs.traffic.module_io`)."""
    if node.op.storage:
        return Cost()
    reads, writes = module_io(graph, [node.id])
    size = lambda ts: ssum(_per(graph, x.src, t) * x.dims * bytes_per_value(x.format) for x in ts)  # noqa: E731
    return Cost.of(bytes={"act_in": size(reads), "act_out": size(writes)})


def _share(op: Op, ctx: CostContext) -> int:
    """How many GPUs split this op's work: routed experts over ep, attention and indexer over tp."""
    if isinstance(op, (RoutedExperts, SwiGLU)) and not op.shared:
        return ctx.plan.ep
    if isinstance(op, (SparseAttention, Dequantize, IndexScore)) or (
            isinstance(op, Gemm) and op.name.startswith(("attn.", "indexer."))):
        return ctx.plan.tp
    return 1


def _per_gpu(cost: Cost, share: int) -> Cost:
    return cost if share == 1 else cost.scaled(Fraction(1, share))


def cost_signature(graph: Graph, node: Node, rows_keys: dict[int, tuple] | None = None) -> tuple:
    """Everything :func:`node_cost` reads: two nodes with one signature have one cost.

    (The op, what it counts, its rows' token positions and requests, and its edges' roles,
    dims and formats — not its id or layer, so the same op over the same tokens in another
    layer shares the result.)
    """
    rows = None if rows_keys is None else rows_keys.get(id(node.rows))
    if rows is None:  # nodes of one layer share one rows tuple: build its key once (``rows_keys``)
        rows = tuple((r.request, r.q_start, r.q_end, r.swa_start, r.kv_start, r.kv_end, r.cached, r.copies)
                     for r in node.rows)
        if rows_keys is not None:
            rows_keys[id(node.rows)] = rows
    ins = tuple(sorted((e.role, e.dims, e.format) for e in graph.inputs(node.id)))
    outs = tuple(sorted((e.role, e.dims, e.format) for e in graph.outputs(node.id)))
    return node.op, node.count, rows, ins, outs


def node_cost(graph: Graph, node_id: str, ctx: CostContext) -> Cost:
    """The per-GPU cost of one node: its op rule plus its activation traffic."""
    node = graph.node(node_id)
    t = tokens(node, ctx)
    if isinstance(node.op, Fused):
        # each covered op keeps its own per-GPU share, so fusing never changes the work; the
        # module's traffic is split only as far as its least-split member is
        work = sum((_per_gpu(op_cost(c, node, ctx, t), _share(c, ctx)) for c in node.op.covers), Cost())
        return work + _per_gpu(activation_cost(graph, node, t), min(_share(c, ctx) for c in node.op.covers))
    return _per_gpu(op_cost(node.op, node, ctx, t) + activation_cost(graph, node, t), _share(node.op, ctx))
