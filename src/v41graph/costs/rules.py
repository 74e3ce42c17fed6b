"""Interface ③: one cost rule per op kind, computed from the node's ledger rows and formats.

A rule returns what the op itself does — flops, weights, KV and workspace traffic. Activation
traffic (what flows in and out over edges, each output tensor written once) is added for
every node from its edges, so a fused module's traffic is its own external edges and nothing
is charged twice (docs/architecture.md, decision 5). Rules use :mod:`v41graph.algebra` helpers, so the
same code gives numbers for numeric plans and sympy closed forms for symbolic ones. An op
without a rule raises :class:`~v41graph.errors.CostError`.

Per-GPU shares are applied by :mod:`v41graph.costs.node`.

>>> from v41graph import load_model, lower, Plan, Request
>>> from v41graph.costs.node import node_cost
>>> g = lower(load_model(), Plan([Request.prefill(4096)]))
>>> c = node_cost(g, "L3.wq_a", CostContext(load_model(), Plan([Request.prefill(4096)])))
>>> c.flop("fp8") == 2 * 4096 * 5120 * 1280
True
"""

from __future__ import annotations

from fractions import Fraction
from functools import singledispatch

from ..algebra import Value, exact, ssum
from ..errors import CostError
from ..ir.graph import Node
from ..ir.ops import (BlockMax, CacheWrite, CandidateSelect, Communication, Compressor, Dequantize, DraftHead,
                      Embedding, EngramGate, EngramHash, EngramLookup, Fused, Gemm, IndexScore, MhcCoefficients,
                      MhcCollapse, MhcExpand, MoeCombine, MoeGate, Norm, Op, Quantize, Rope, RoutedExperts,
                      SparseAttention, SwiGLU, TopK, VisionEncoder)
from ..model.formats import bytes_per_value
from .counts import (CostContext, entry_bytes, flops_precision, index_k_reads, kv_entries, new_entries, scored_pairs,
                     window_pairs)
from .expert_loads import POWER_LAW_FALLBACK, load_of
from .value import Cost

#: stated in every cost report: what the routed experts read and which rank is priced (costs/expert_loads.py)
EXPERT_ASSUMPTION = ("routed experts: each layer reads the expected distinct experts Σ 1 − (1 − p_e)^T of the "
                     "plan's routing (uniform: E·(1 − (1 − k/E)^T)); under EP the busiest rank's tokens and "
                     "experts are priced")


def expert_assumptions(routing) -> tuple[str, ...]:
    """:data:`EXPERT_ASSUMPTION`, and for power-law routing its fallback where the generator's
    draws are degenerate (:data:`~v41graph.costs.expert_loads.POWER_LAW_FALLBACK`)."""
    return (EXPERT_ASSUMPTION,) + ((POWER_LAW_FALLBACK,) if routing.model == "power-law" else ())


def tokens_only(rule):
    """Mark a cost rule that reads its node only through ``t`` (never the node's rows, id or layer;
    of the context only plan-wide facts: the mapping, Engram residency, GPUs per NVLink domain).
    Equal ``t``, equal cost: the scheduling pass reuses such a cost from an earlier compile with
    the same ``t`` (a length sweep's decoder tail is 128 tokens at every length)."""
    rule.tokens_only = True
    return rule


def reads_tokens_only(op: Op) -> bool:
    """Whether ``op``'s rule (every covered op's, for a fused module) is :func:`tokens_only`."""
    return all(getattr(op_cost.dispatch(type(c)), "tokens_only", False) for c in getattr(op, "covers", (op,)))


@singledispatch
def op_cost(op: Op, node: Node, ctx: CostContext, t: Value) -> Cost:
    if op.storage:
        return Cost()  # storage holds data; reads and writes are charged to its readers and writers
    raise CostError(f"cost: no cost rule for op kind {op.kind} (node {node.id!r})")


@op_cost.register
@tokens_only
def _(op: Gemm, node, ctx, t):
    weights = op.groups * op.k * op.n
    return Cost.of(flops={flops_precision(op.weight_format): 2 * t * weights},
                   bytes={"weights": exact(weights * bytes_per_value(op.weight_format))})


@op_cost.register
@tokens_only
def _(op: Embedding, node, ctx, t):
    return Cost.of(bytes={"weights": t * op.dim * 2})  # gathered bf16 rows


@op_cost.register(Norm)
@op_cost.register(Quantize)
@tokens_only
def _(op, node, ctx, t):
    return Cost.of(flops={"fp32": 4 * t * op.dim})


@op_cost.register
@tokens_only
def _(op: Rope, node, ctx, t):
    return Cost.of(flops={"fp32": 3 * t * op.heads * op.rope_dims})


@op_cost.register
@tokens_only
def _(op: Compressor, node, ctx, t):
    return Cost.of(flops={"fp32": 5 * t * op.dim})  # softmax-weighted pooling over each group


@op_cost.register
def _(op: CacheWrite, node, ctx, t):
    if op.role == "swa_kv":
        entries = t
    else:
        entries = new_entries(node.rows, op.ratio)
    return Cost.of(bytes={"kv_write": entries * entry_bytes(op.layout, op.dim)})


@op_cost.register
def _(op: IndexScore, node, ctx, t):
    pairs = scored_pairs(op, node.rows)
    # q·Kᵀ like a GEMM: K streams once per query tile, not once per query (counts.QUERY_TILE).
    # The logits (one fp32 per pair) are the output edge, charged by activation_cost.
    k_reads = index_k_reads(node.rows, op.ratio, op.pool if op.scope == "pool" else None)
    workspace = {"workspace": t * (op.pool // 8) * 4} if op.scope == "pool" else {}  # the pool's block ids
    return Cost.of(flops={"fp8": 2 * op.heads * op.dim * pairs, "fp32": 2 * op.heads * pairs},
                   bytes={"kv_read": k_reads * entry_bytes("index_k_fp4", op.dim), **workspace})


@op_cost.register(TopK)
@op_cost.register(BlockMax)
def _(op, node, ctx, t):
    return Cost.of(flops={"fp32": 2 * scored_pairs(op, node.rows)})  # logits in and out: edges


@op_cost.register
def _(op: CandidateSelect, node, ctx, t):
    # Works on the block maxima (one per ``block`` positions), and writes ``blocks`` i32 block ids
    # per query into the candidate pool workspace (read back by the reindex layers' scoring).
    blocks = scored_pairs(op, node.rows) * Fraction(1, op.block)
    return Cost.of(flops={"fp32": 2 * blocks}, bytes={"workspace": t * op.blocks * 4})


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
@tokens_only
def _(op: MhcCoefficients, node, ctx, t):
    mix = op.mixes
    return Cost.of(flops={"tf32": 2 * t * op.streams * op.dim * mix,
                          "fp32": t * op.sinkhorn_iters * 4 * op.streams * op.streams},
                   bytes={"weights": mix * op.streams * op.dim * 4})


@op_cost.register
@tokens_only
def _(op: MhcCollapse, node, ctx, t):
    return Cost.of(flops={"fp32": 2 * t * op.streams * op.dim})


@op_cost.register
@tokens_only
def _(op: MhcExpand, node, ctx, t):
    return Cost.of(flops={"fp32": 2 * t * op.dim * op.streams * (op.streams + 1)})


@op_cost.register
@tokens_only
def _(op: MoeGate, node, ctx, t):
    return Cost.of(flops={"bf16": 2 * t * op.dim * op.experts, "fp32": 4 * t * op.experts},
                   bytes={"weights": op.experts * op.dim * 2 + op.experts * 4})


@op_cost.register
@tokens_only
def _(op: RoutedExperts, node, ctx, t):
    per_expert = op.weights_per_expert  # each part reads its own weights of the experts touched
    if op.shared:
        touched, busiest = op.experts, 1
    else:  # every rank as busy as the busiest: the per-GPU share (÷ GPUs) is the busiest rank's
        load = load_of(ctx, op.experts, op.top_k, t)
        touched, busiest = len(load.ranks) * load.distinct(t, load.busiest), load.imbalance
    return Cost.of(flops={flops_precision(op.weight_format): 2 * t * op.top_k * per_expert * busiest},
                   bytes={"weights": touched * entry_bytes(op.weight_format, per_expert)})


@op_cost.register
@tokens_only
def _(op: SwiGLU, node, ctx, t):
    # a hand-built graph may have no model (passes/built.py): no expert count, so no imbalance to price
    model = ctx.model if ctx else None
    busiest = 1 if op.shared or model is None else load_of(ctx, model.n_routed_experts, op.top_k, t).imbalance
    return Cost.of(flops={"fp32": 3 * t * op.top_k * op.inter * busiest})  # silu(gate) · up, with the clamp


@op_cost.register
@tokens_only
def _(op: MoeCombine, node, ctx, t):
    return Cost.of(flops={"fp32": 2 * t * (op.top_k + 1) * op.dim})


@op_cost.register
@tokens_only
def _(op: EngramHash, node, ctx, t):
    return Cost.of(flops={"fp32": 4 * t * op.columns}, bytes={"act_in": t * 4 * 4})


@op_cost.register
@tokens_only
def _(op: EngramLookup, node, ctx, t):
    payload = t * entry_bytes(op.layout, op.columns * op.row_dim)  # 6,336 B per token per module
    if ctx.plan.engram_residency == "host":
        return Cost.of(comm={"host": payload})
    return Cost.of(bytes={"weights": payload})


@op_cost.register
@tokens_only
def _(op: EngramGate, node, ctx, t):
    return Cost.of(flops={"fp32": 6 * t * op.streams * op.dim})


#: bytes each GPU sends, per byte of the whole tensor, over p ranks: a ring all-reduce sends
#: 2(p−1)/p; reduce-scatter and all-gather (p−1)/p; an all-to-all (p−1)/p of its own tokens' copies
_WIRE = {"all_reduce": lambda p: Fraction(2 * (p - 1), p), "reduce_scatter": lambda p: Fraction(p - 1, p),
         "all_gather": lambda p: Fraction(p - 1, p), "all_to_all": lambda p: Fraction(p - 1, p)}


@op_cost.register
@tokens_only
def _(op: Communication, node, ctx, t):
    p, g = op.ranks, ctx.gpus_per_node or op.ranks
    if op.collective not in _WIRE:
        raise CostError(f"cost: unknown collective {op.collective!r} (node {node.id!r})")
    sent = t * exact(op.copies * op.dim * bytes_per_value(op.payload) * _WIRE[op.collective](p))
    if op.purpose in ("dispatch", "combine"):  # the busiest EP rank receives (and sends back) the most
        sent = sent * load_of(ctx, ctx.model.n_routed_experts, op.copies, t * ctx.plan.dp).imbalance
    if p <= g:
        return Cost.of(comm={"nvlink": sent})
    if op.collective == "all_to_all":  # of the p − 1 peers, g − 1 share this NVLink domain
        return Cost.of(comm={"nvlink": sent * Fraction(g - 1, p - 1), "scaleout": sent * Fraction(p - g, p - 1)})
    return Cost.of(comm={"scaleout": sent})  # a ring across domains runs at its slowest hop


@op_cost.register
def _(op: VisionEncoder, node, ctx, t):
    per_layer = 2 * t * (4 * op.dim * op.dim + 3 * op.dim * op.inter)
    attention = ssum(4 * op.dim * r.tokens * r.tokens // max(1, ctx.plan.requests[r.request].images)
                     for r in node.rows)
    weights = op.layers * (4 * op.dim * op.dim + 3 * op.dim * op.inter) * 2
    return Cost.of(flops={"bf16": op.layers * (per_layer + attention)}, bytes={"weights": weights})


@op_cost.register
@tokens_only
def _(op: DraftHead, node, ctx, t):
    return Cost.of(flops={"bf16": 2 * t * op.vocab * op.rank + 2 * t * (op.dim + op.rank)},
                   bytes={"weights": 2 * op.vocab * op.rank * 2})


@op_cost.register
def _(op: Fused, node, ctx, t):
    return sum((op_cost(c, node, ctx, t) for c in op.covers), Cost())
