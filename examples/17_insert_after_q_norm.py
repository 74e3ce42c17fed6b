"""A new op after every ``q_norm`` of V4.1, priced under TP8 / EP8, with its share by op family.

1. The op kind: ``QScale`` multiplies each of the ``dim`` query-latent values by a learned scale
   (1 flop per value); its cost rule goes on the rule table the built-in kinds use.
2. Its sharding: it sits on the replicated low-rank query path (``wq_a → q_norm``), so every GPU
   of the attention group runs it on all of its rank's tokens — one row on the sharding table.
   Without that row the compile stops and names the node and ``register_sharding``.
3. A pass that ``insert_after``s one ``QScale`` after every attention ``q_norm`` (the indexer's
   ``idx.q_norm`` is left alone), registered before ``precision``: ``compile`` and ``by_op`` see it.

    python examples/17_insert_after_q_norm.py
"""

from dataclasses import dataclass
from typing import ClassVar

from v41graph import Plan, PlanError, Request, compile, load_model
from v41graph.ask import by_op
from v41graph.extend import (Node, insert_after, register_op, register_pass, register_sharding)
from v41graph.costs.value import Cost
from v41graph.ir.ops import Op
from v41graph.passes import PassResult
from v41graph.symbols import N


@dataclass(frozen=True)
class QScale(Op):
    """Multiply each of ``dim`` values per token by its own learned scale."""

    dim: int
    needs: ClassVar = ("x",)


register_op(QScale, lambda op, node, ctx, t: Cost.of(flops={"fp32": t * op.dim}))


def add_qscale(graph):
    for nid in sorted(n for n in graph.nodes if n.endswith(".q_norm") and not n.endswith(".idx.q_norm")):
        norm = graph.nodes[nid]
        scale = Node(nid.replace("q_norm", "q_scale"), QScale(norm.op.dim), norm.layer, norm.stage, norm.path,
                     rows=norm.rows, count=norm.count)
        graph = insert_after(graph, nid, scale)
    return graph


@dataclass(frozen=True)
class AddQScale:
    name: str = "q_scale"

    def __call__(self, graph, ctx):
        out = add_qscale(graph)
        return PassResult(self.name, out, len(out.nodes) - len(graph.nodes), None)


model = load_model()
plan = Plan([Request.prefill(8192)], tp=8, ep=8)
register_pass(AddQScale(), before="precision")
try:
    compile(model, plan)
except PlanError as e:
    print(f"without a sharding rule: {e}")

register_sharding(QScale, "replicated", source="runs on the replicated q-latent path, like q_norm")
result = compile(model, plan)
print(f"q_scale pass inserted {result.passes[0].changed} nodes")
schedule = result.report("schedule")
print(f"SOL time at 8192, tp 8 ep 8: {schedule.total_time_s * 1e3:.6f} ms")
print(f"QScale time, all layers: {schedule.by_op['QScale'] * 1e6:.3f} us")

forms = by_op(model, Plan([Request.prefill(N)], tp=8, ep=8), "flops")
total = sum(forms.values())
print(f"QScale flops(N) per GPU = {forms['QScale']}")
print(f"QScale share of flops at N = 8192: {float(forms['QScale'].subs(N, 8192) / total.subs(N, 8192)):.3e}")
for kind in sorted(forms, key=lambda k: -forms[k].subs(N, 8192))[:3]:
    print(f"  {kind}: {float(forms[kind].subs(N, 8192) / total.subs(N, 8192)):.4f}")
