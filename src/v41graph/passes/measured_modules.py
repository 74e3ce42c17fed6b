"""Measured modules: group the nodes one measured kernel times into one fused node (OP mode only).

Contract: for each module a table can time at the plan's key — the V4 attention sublayer
(:func:`v41graph.costs.measured.modules.attention_group`) and, where the fusion profile left it
apart, the routed MoE (up → SwiGLU → down) — check the group is legal exactly as the fusion pass
does (one token set, convex) and replace it by a :class:`~v41graph.ir.ops.Fused` node whose
``covers`` lists every op it replaced (nested fused members flattened). The scheduling pass then
prices the module once; its members are gone, so nothing is added on top. SOL mode never runs it.

Before ⇒ after::

    L3.wq_a, L3.q_norm, …, L3.attn, L3.wo_a, L3.wo_b  ⇒  L3.dsv4_attention (covers 21 ops)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..algebra import is_symbolic
from ..costs.measured.modules import attention_group, attention_layers, model_key
from ..ir.graph import Graph
from ..ir.ops import Fused
from ..ir.shapes import SHAPES_KEPT, derived
from ..structural import Keyed, by_content, memo
from .base import PassResult
from .fusion import FusionPlan, _apply, _holds, _refresh, plan_answer, settled
from .fusion_working import _legal, _Working
from .fusion_groups import _swiglu_groups


@dataclass(frozen=True)
class ModulesReport:
    modules: dict[str, int]  # rule → modules formed
    nodes_replaced: int


def _flatten(work: _Working, fid: str, counts: dict[str, str]) -> None:
    """A module over fused members covers their ops, each with its own token count and share."""
    node = work.nodes[fid]
    members, covers, kinds = [], [], []
    for m, c in zip(node.op.members, node.op.covers):
        if isinstance(c, Fused):
            members += c.members
            covers += c.covers
            kinds += getattr(c, "counts", ()) or (counts[m],) * len(c.covers)
        else:
            members.append(m)
            covers.append(c)
            kinds.append(counts[m])
    extra = {"counts": tuple(kinds)} if hasattr(node.op, "counts") else {}
    work.nodes[fid] = replace(node, op=replace(node.op, members=tuple(members), covers=tuple(covers), **extra))


@dataclass(frozen=True)
class MeasuredModules:
    """``transfers_op``: whether an SWA-only layer may take the HCA module's place (transfer:op)."""

    transfers_op: bool = True
    name: str = "measured_modules"

    def __call__(self, graph: Graph, ctx) -> PassResult:
        # Which groups fuse is the graph's structure, the model's layers and ``transfers_op``; only
        # the legality of a group across rows tuples reads rows (the plan's guards, as in fusion).
        # A symbolic plan's token sets are decided per regime, never looked up.
        at = getattr(ctx, "at", ())
        numeric = not any(is_symbolic(r.cached, r.new, r.copies) for r in ctx.plan.requests)
        args = (graph.skeleton if numeric else Keyed(None, graph), by_content(ctx.model), self.transfers_op, at)
        plan, key = _planned(*args), _planned.key(*args)
        if plan.layout is None:
            return PassResult(self.name, graph, 0, plan.report)
        shape = derived(key, tuple(one for _, one in plan.guards))
        g = _apply(plan, graph, shape)
        g = _refresh(g, plan.alias, plan.precision, shape, plan.readers)
        if "kv" in g.annotations:  # caches inside a module are written and read by it alone
            g = g.annotate("kv", {k: v for k, v in g.annotations["kv"].items() if k in g.nodes}, shape=shape)
        return PassResult(self.name, g, plan.report.nodes_replaced, plan.report)


#: plans per (graph shape, model content, transfers_op, point): a few each (one per answer of the guards)
@memo("measured-module plans", SHAPES_KEPT, view=plan_answer, holds=_holds)
def _planned(skeleton: Keyed, model: Keyed, transfers_op: bool, at) -> FusionPlan:
    """What the pass does to the graph (a :class:`~v41graph.passes.fusion.FusionPlan`: its modules,
    edges, guards and the refreshed precision table), worked out from nothing."""
    graph, model = skeleton.value, model.value
    groups: list[tuple[str, tuple[str, ...]]] = []
    if model_key(model) is not None:  # only checkpoints the module tables were measured with
        for layer in attention_layers(graph):
            spec = model.layers[layer] if layer < len(model.layers) else None
            if spec is None or (spec.compress_ratio == 0 and not transfers_op):
                continue
            group = attention_group(graph, layer)
            if group:
                groups.append(("measured:dsv4_attention", group))
    groups += [("measured:moe", g) for g in _swiglu_groups(graph)]
    order = {n: i for i, n in enumerate(graph.topological_order())}
    work, counts, replaced, guards = _Working(graph), {}, 0, []
    for rule, group in groups:
        if any(m not in work.nodes for m in group) or not _legal(work, group, order, at, [], guards):
            continue
        member_counts = {m: work.nodes[m].count for m in group}
        fid = work.fuse(group, rule, ())
        order[fid] = min(order[m] for m in group)
        _flatten(work, fid, member_counts)
        counts[rule] = counts.get(rule, 0) + 1
        replaced += len(group)
    plan = settled(work, graph, guards, ModulesReport(dict(sorted(counts.items())), replaced), bool(counts))
    if plan.layout is None:
        return plan
    # (the aliases name every module of the output, the fusion pass's too)
    return replace(plan, precision=_refresh(work.graph(graph), plan.alias).annotations.get("precision"))
