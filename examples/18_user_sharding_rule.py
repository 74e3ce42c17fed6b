"""A sharding rule of one's own: how a new op kind splits under TP, and which collective follows.

1. ``Lora``: a low-rank adapter (``dim → rank → dim``) with its cost rule. Compiled under TP4
   before it has a sharding row, the compile stops and names the node and ``register_sharding``.
2. ``register_sharding(Lora, "column", collective="all_gather")``: its work splits over the
   attention TP group; each GPU's flops and weight bytes are a quarter at TP4.
3. Finer rows win over coarser ones: a node-name pattern (``"lora_pinned"``) answers before the
   kind, and an op that carries its own row (``sharding = sharding_rule(...)``) before both.

    python examples/18_user_sharding_rule.py
"""

from dataclasses import dataclass
from typing import ClassVar

from v41graph import PlanError
from v41graph.extend import (GraphBuilder, Mapping, compile_built_graph, register_op, register_sharding, sharding_rule)
from v41graph.algebra import exact
from v41graph.costs.value import Cost
from v41graph.ir.ops import GraphInput, Op
from v41graph.model.sharding import rule_for_node

DIM, RANK, TOKENS = 4096, 64, 1000


@dataclass(frozen=True)
class Lora(Op):
    """x · A · B with A: dim × rank and B: rank × dim, bf16."""

    dim: int
    rank: int
    needs: ClassVar = ("x",)


@dataclass(frozen=True)
class ReplicatedLora(Lora):
    """The same adapter, kept whole on every GPU: the op carries its own sharding row."""

    sharding: ClassVar = sharding_rule("replicated", name="replicated lora", source="kept whole on purpose")


def lora_cost(op, node, ctx, t):
    return Cost.of(flops={"bf16": 2 * t * 2 * op.dim * op.rank}, bytes={"weights": 2 * op.dim * op.rank * 2})


register_op(Lora, lora_cost)  # ReplicatedLora, a subclass, is priced by the same rule


def graph():
    b = GraphBuilder("lora-demo")
    rows = b.rows(TOKENS)
    b.op("L0.input", GraphInput(DIM), rows)
    for name, op in (("lora", Lora(DIM, RANK)), ("lora_pinned", Lora(DIM, RANK)),
                     ("lora_own", ReplicatedLora(DIM, RANK))):
        b.op(f"L0.{name}", op, rows, reads=[("L0.input", "x", DIM, "bf16")], sink=True)
    return b.build()


try:
    compile_built_graph(graph(), "h200_sxm", mapping=Mapping(tp=4))
except PlanError as e:
    print(f"no rule yet: {e}")

register_sharding(Lora, "column", collective="all_gather", source="adapter rank split over attn-TP")
register_sharding("lora_pinned", "replicated", source="this one node kept whole")
for nid in ("L0.lora", "L0.lora_pinned", "L0.lora_own"):
    r = rule_for_node(nid, graph().node(nid).op)
    print(f"{nid}: rule {r.name!r}, split {r.split}, collective after it: {r.collective}")
for tp in (1, 2, 4):
    costs = compile_built_graph(graph(), "h200_sxm", mapping=Mapping(tp=tp)).graph.annotation("cost")
    parts = [f"{n[3:]} flops {exact(costs[n].total_flops):,} weights {exact(costs[n].byte('weights')):,} B"
             for n in ("L0.lora", "L0.lora_pinned", "L0.lora_own")]
    print(f"tp {tp}: " + "; ".join(parts))
