"""A dense transformer block built from scratch (not DeepSeek), compiled at TP1 and TP2 on an
H200, with its closed form in the sequence length N.

1. One op kind of one's own — causal attention over the block's own K and V, priced per
   (query, key) pair — with its cost rule and its sharding row (split by heads, like the
   built-in attention core).
2. The block, node by node with ``GraphBuilder``: pre-norm attention (fused QKV projection,
   attention, output projection) and a SwiGLU MLP, each projection pair column- then
   row-split over TP with an all-reduce after the row split — the rows ``register_sharding``
   adds to the table say so (``collective="all_reduce"``), and the builder follows them.
3. ``compile_built_graph`` schedules it; ``built_closed_form`` gives the same figures in N.

    python examples/16_dense_block.py
"""

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from v41graph.extend import (GraphBuilder, Mapping, built_closed_form, compile_built_graph, register_op,
                             register_sharding, verify)
from v41graph.algebra import exact, ssum
from v41graph.costs.value import Cost
from v41graph.ir.ops import Communication, Gemm, GraphInput, Norm, Op, SwiGLU
from v41graph.model.sharding import rule_for_node
from v41graph.symbols import N

D, HEADS, HEAD_DIM, FFN = 2048, 16, 128, 5632  # a 2K-wide block: 16 heads of 128, SwiGLU of 5632


@dataclass(frozen=True)
class CausalAttention(Op):
    """Softmax(QKᵀ)V of ``heads`` heads over the block's own causal keys (dense, no cache)."""

    heads: int
    head_dim: int
    needs: ClassVar = ("x",)


def attention_cost(op, node, ctx, t):
    # query i sees keys 0..i: Σ (i + 1) over [q_start, q_end) pairs; QKᵀ and PV, 2 flops each
    pairs = ssum(exact(r.copies * (r.q_end * (r.q_end + 1) - r.q_start * (r.q_start + 1)) * Fraction(1, 2))
                 for r in node.rows)
    return Cost.of(flops={"bf16": 4 * op.heads * op.head_dim * pairs})


register_op(CausalAttention, attention_cost)
register_sharding(CausalAttention, "column", source="heads over TP, like the built-in attention core")
for name in ("wqkv", "w13", "swiglu"):
    register_sharding(name, "column")
for name in ("wo", "w2"):
    register_sharding(name, "row", collective="all_reduce")
register_sharding("ffn.all_reduce", "collective")  # attn.all_reduce is a built-in row already

STEPS = (("attn_norm", Norm(D), D), ("wqkv", Gemm("wqkv", D, 3 * D, "bf16"), 3 * D),
         ("attention", CausalAttention(HEADS, HEAD_DIM), D), ("wo", Gemm("wo", D, D, "bf16"), D),
         ("ffn_norm", Norm(D), D), ("w13", Gemm("w13", D, 2 * FFN, "bf16"), 2 * FFN),
         ("swiglu", SwiGLU(FFN, 1), FFN), ("w2", Gemm("w2", FFN, D, "bf16"), D))


def block(tokens, tp: int):
    """The block over ``tokens`` new tokens (a number or N), with its all-reduces under ``tp``."""
    b = GraphBuilder("dense-2k")
    rows = b.rows(tokens)
    prev, dims = b.op("L0.input", GraphInput(D), rows), D
    for name, op, out in STEPS:
        prev, dims = b.op(f"L0.{name}", op, rows, reads=[(prev, "x", dims, "bf16")]), out
        rule = rule_for_node(prev, op)
        if rule.collective and tp > 1:  # a row split leaves partial sums: all-reduce them
            where = "attn" if name == "wo" else "ffn"
            prev = b.op(f"L0.{where}.all_reduce", Communication("all_reduce", where, D, tp), rows,
                        reads=[(prev, "x", D, "bf16")])
    b.nodes[prev] = b.nodes[prev].with_fields(sink=True)  # the block's output
    return verify(b.build())


def flops(compiled):
    return exact(sum(c.total_flops for c in compiled.graph.annotation("cost").values()))


def comm(compiled):
    return exact(sum(c.total_comm for c in compiled.graph.annotation("cost").values()))


for tp in (1, 2):
    c = compile_built_graph(block(4096, tp), "h200_sxm", mapping=Mapping(tp=tp))
    costs = c.graph.annotation("cost")
    s = c.report("schedule")
    print(f"tp {tp}: {len(c.graph.nodes)} nodes, flops per GPU {flops(c):,}, comm bytes per GPU {comm(c):,}, "
          f"SOL {s.total_time_s * 1e6:.3f} us")
    print("  per-GPU flops: " + ", ".join(f"{n[3:]} {exact(costs[n].total_flops):,}" for n in
                                            ("L0.wqkv", "L0.attention", "L0.wo", "L0.w13", "L0.w2")))

for metric in ("flops", "comm_bytes"):
    for tp in (1, 2):
        cf = built_closed_form(block(N, tp), metric, "h200_sxm", mapping=Mapping(tp=tp))
        print(f"{metric}(N) at tp {tp} = {cf.expr}")
cf = built_closed_form(block(N, 2), "sol_time", "h200_sxm", mapping=Mapping(tp=2), domain=(1, 131072))
print(f"sol_time(N) at tp 2: {len(cf.pieces)} pieces over N in {list(cf.valid_range)}; "
      f"at 4096: {float(cf(N=4096)) * 1e6:.3f} us")
