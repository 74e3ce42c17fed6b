"""A kernel of one's own: a fused "RoPE + quantise" op with its cost rule, rewritten into a lowered
V4.1 graph, scheduled, and visible in the closed forms.

1. The op kind: a frozen dataclass payload (what the node *is*) and a cost rule registered on
   the same rule table the built-in kinds use, so numbers and closed forms both include it.
2. The rewrite: every ``kv_rope → kv_quant`` pair becomes one ``RopeQuantize`` node (it keeps
   the quantiser's id, so the sharding table still answers for it); ``verify()`` checks it.
3. A pass doing that rewrite, registered before ``precision``: ``compile``, ``schedule`` and
   ``closed_form`` then all see the new op, and its report is in the compile result.

    python examples/15_custom_fused_op.py
"""

from dataclasses import dataclass
from typing import ClassVar

import sympy

from v41graph import Plan, Request, closed_form, compile, load_model, lower
from v41graph.ask import by_op
from v41graph.extend import register_op, register_pass, replace_nodes, verify
from v41graph.costs.value import Cost
from v41graph.ir.ops import Op, Quantize, Rope
from v41graph.passes import PassResult
from v41graph.symbols import N


@dataclass(frozen=True)
class RopeQuantize(Op):
    """Rotate ``rope_dims`` of each of ``heads`` heads, then quantise ``dim`` values to ``format``."""

    heads: int
    rope_dims: int
    dim: int
    format: str
    needs: ClassVar = ("x",)


def rope_quantize_cost(op, node, ctx, t):
    # 3 flops per rotated value (two multiplies and an add), 5 per quantised value (abs, group
    # max, divide, round, clamp): t is the node's token count, a number or a sympy symbol
    return Cost.of(flops={"fp32": t * (3 * op.heads * op.rope_dims + 5 * op.dim)})


register_op(RopeQuantize, rope_quantize_cost)


def pairs(graph):
    """(rope, quant) pairs where a RoPE feeds only a quantiser."""
    out = []
    for nid, node in sorted(graph.nodes.items()):
        if isinstance(node.op, Rope) and nid.endswith(".kv_rope"):
            consumers = [e.dst for e in graph.outputs(nid)]
            if len(consumers) == 1 and isinstance(graph.nodes[consumers[0]].op, Quantize):
                out.append((nid, consumers[0]))
    return out


def use_rope_quantize(graph):
    for rope, quant in pairs(graph):
        r, q = graph.nodes[rope].op, graph.nodes[quant].op
        graph = replace_nodes(graph, (rope, quant), RopeQuantize(r.heads, r.rope_dims, q.dim, q.format))
    return graph


@dataclass(frozen=True)
class RewriteReport:
    replaced: int


@dataclass(frozen=True)
class UseRopeQuantize:
    name: str = "rope_quantize"

    def __call__(self, graph, ctx):
        n = len(pairs(graph))
        return PassResult(self.name, use_rope_quantize(graph), n, RewriteReport(n))


model = load_model()
graph = verify(use_rope_quantize(lower(model, Plan([Request.prefill(4096)]))))
kinds = sorted({n.op.kind for n in graph.nodes.values() if n.id.endswith(".kv_quant")})
print(f"rewritten graph: {len(graph.nodes)} nodes, kv_quant nodes are {kinds}, verify() passed")

before = closed_form(model, Plan([Request.prefill(N)]), "flops").expr  # the built-in RoPE and quantiser
register_pass(UseRopeQuantize(), before="precision")
result = compile(model, Plan([Request.prefill(4096)]))
print(f"passes: {', '.join(p.name for p in result.passes)}")
print(f"rope_quantize report: {result.report('rope_quantize')}")
print(f"SOL time at 4096: {result.report('schedule').total_time_s * 1e3:.6f} ms")
slots = result.graph.annotation("schedule")
print(f"L3.kv_quant is {result.graph.node('L3.kv_quant').op.kind}, {float(slots['L3.kv_quant'].sol.time) * 1e9:.3f} ns")

forms = by_op(model, Plan([Request.prefill(N)]), "flops")
print(f"RopeQuantize flops(N) = {forms['RopeQuantize']}")
after = closed_form(model, Plan([Request.prefill(N)]), "flops").expr
# the new op counts 5 flops per quantised value where the built-in quantiser counts 4
print(f"total flops(N) with it − without it = {sympy.expand(after - before)}")
