"""Per MoE layer, what the plan's routing implies and the cost pass priced: the tokens ``T`` the
routed experts see, the expected distinct experts read, the busiest expert-parallel rank's
expected token copies against the mean rank's, and their ratio (the imbalance), JSON-ready.

The figures come from :func:`v41graph.costs.expert_loads.load_of` — the same function the cost rules
price with — over each layer's token count as the compiled graph holds it.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.passes import compile_graph
>>> m = load_model("deepseek-v4-flash")
>>> plan = Plan([Request.decode(8192, copies=64)])
>>> s = moe_loads(m, plan, compile_graph(m, plan, check=False).graph)
>>> s["routing"], s["layers"][0]["tokens"], round(s["layers"][0]["distinct_experts"], 2)
('uniform', 64, 199.89)
"""

from __future__ import annotations

from typing import Any

from ...costs.counts import CostContext
from ...costs.node import member_costs
from ...costs.expert_loads import load_of
from ...ir.graph import Graph
from ...ir.ops import RoutedExperts
from ...ir.plan import Plan
from ...model.config import ModelSpec


def moe_loads(model: ModelSpec, plan: Plan, graph: Graph) -> dict[str, Any]:
    """Routing, placement and per-layer loads of the backbone's routed experts (module doc)."""
    ctx = CostContext(model, plan)
    layers = []
    for node in graph.nodes.values():
        if node.layer is None or node.stage == "dspark" or not _routes(node):
            continue
        item = next(c for c in member_costs(node, ctx) if isinstance(c.op, RoutedExperts) and not c.op.shared
                    and c.op.part == "up")
        op, t = item.op, item.tokens
        load = load_of(ctx, op.experts, op.top_k, t)
        mean = t * op.top_k / len(load.ranks)
        layers.append({"layer": node.layer, "tokens": _number(t), "experts": op.experts,
                       "distinct_experts": float(load.distinct(t)),
                       "busiest_rank": load.busiest, "busiest_rank_tokens": float(mean * load.imbalance),
                       "mean_rank_tokens": float(mean), "imbalance": float(load.imbalance),
                       "busiest_rank_distinct": float(load.distinct(t, load.busiest))})
    return {"routing": plan.routing.describe(), "ep": plan.ep, "redundant_experts": plan.ep_redundant,
            "slots_per_rank": (model.n_routed_experts + plan.ep_redundant) // plan.ep,
            "layers": sorted(layers, key=lambda r: r["layer"])}


def _routes(node) -> bool:
    ops = getattr(node.op, "covers", (node.op,))
    return any(isinstance(o, RoutedExperts) and not o.shared and o.part == "up" for o in ops)


def _number(t):
    return int(t) if t == int(t) else float(t)


__all__ = ["moe_loads"]
