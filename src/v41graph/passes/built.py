"""Hand-built graphs, first-class: run the passes and the schedule on a graph you built.

:func:`compile_built_graph` takes a :class:`~v41graph.ir.graph.Graph` (from
:class:`~v41graph.ir.graph.GraphBuilder`, or a lowered graph you rewrote), a hardware and a
:class:`~v41graph.model.sharding.Mapping`, verifies it, and runs the precision pass then the
scheduling pass on it — the cost rules, the sharding table and the critical-path schedule the
lowered DeepSeek graphs use. The lowering-specific passes (replay, KV de-duplication, fusion)
are not run unless given in ``passes``: they rewrite patterns of the DeepSeek layers.

Token counts come from the nodes' ledger rows (:meth:`GraphBuilder.rows`); a node that counts
per compressed entry or per image needs a ``model`` (and its plan) to count them.

Before the passes, :class:`UserSharding` reads each node's sharding row under the mapping: a
column / row / vocab split whose group does not divide the op's width (its ``n``, ``k``, ``heads``,
``inter``, ``dim`` or ``vocab``) is refused, and a user row's ``collective=`` becomes a
Communication node after the op (``<id>.<collective>``, priced like the lowered graphs' own),
unless the graph already has that collective reading the op.

>>> from v41graph.ir.graph import GraphBuilder
>>> from v41graph.ir.ops import Gemm, GraphInput, Norm
>>> from v41graph.model.sharding import Mapping
>>> b = GraphBuilder("toy")
>>> rows = b.rows(1000)
>>> b.op("L0.input", GraphInput(4096), rows)                   # the hidden states coming in
'L0.input'
>>> b.op("L0.attn_norm", Norm(4096), rows, reads=[("L0.input", "x", 4096, "bf16")])   # built-in name
'L0.attn_norm'
>>> b.op("L0.wq_b", Gemm("q", 4096, 4096, "bf16"), rows, reads=[("L0.attn_norm", "x", 4096, "bf16")], sink=True)
'L0.wq_b'
>>> c = compile_built_graph(b.build(), "h200_sxm", mapping=Mapping(tp=2))   # wq_b: column over tp
>>> c.graph.annotation("cost")["L0.wq_b"].flop("bf16") == 2 * 1000 * 4096 * 4096 // 2
True
>>> [p.name for p in c.passes], c.report("schedule").hardware
(['sharding', 'precision', 'schedule'], 'h200_sxm')
>>> compile_built_graph(b.build(), "h200_sxm", mapping=Mapping(tp=3))
Traceback (most recent call last):
...
v41graph.errors.PlanError: compile_built_graph mapping: node 'L0.wq_b' (Gemm) splits n = 4096 column-wise over 3 ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..costs.hardware import Hardware, load_hardware
from ..errors import CostError, GraphError, PlanError
from ..ir.graph import Edge, Graph
from ..ir.ops import Communication, Fused
from ..ir.plan import Plan, Request
from ..ir.verify import verify
from ..model.config import ModelSpec
from ..model.sharding import Mapping, mapping_of, rule_for_node
from ..model.user_sharding import sharding_rule
from ..reuse import refresh
from .base import Compiled, PassContext, Pass, PassResult, run_pipeline
from .precision import PrecisionAnnotation
from .scheduling import Scheduling

__all__ = ["RuleCollective", "UserSharding", "built_context", "built_pipeline", "compile_built_graph"]

#: the op field a split divides, first present wins: a GEMM's output (column) or input (row) width,
#: else heads, an intermediate or a hidden width
_WIDTH = {"column": ("n", "heads", "inter", "dim"), "row": ("k", "dim"), "vocab": ("vocab", "n", "dim")}


@dataclass(frozen=True)
class RuleCollective(Communication):
    """The collective a user sharding row names (``collective=``), after its op: priced by the
    Communication rule, under a row of its own (each GPU sends its share already: no split)."""

    sharding: ClassVar = sharding_rule("collective", name="user collective",
                                       source="a user sharding row's collective= (passes/built.py)")


class UserSharding:
    """A hand-built graph's sharding under the mapping: splits that divide, collectives priced
    (see the module doc)."""

    name: str = "sharding"

    def __call__(self, graph: Graph, ctx: PassContext) -> PassResult:
        mapping = mapping_of(ctx.plan)
        nodes, edges, added = dict(graph.nodes), list(graph.edges), []
        for nid in sorted(graph.nodes):
            node = graph.nodes[nid]
            if node.op.storage or isinstance(node.op, Fused):  # a fused module's members were checked unfused
                continue
            rule = rule_for_node(nid, node.op)
            ranks = mapping.weight_divisor(rule) if rule.split in _WIDTH else 1
            if ranks == 1:
                continue
            field = next((f for f in _WIDTH[rule.split] if isinstance(getattr(node.op, f, None), int)), None)
            if field is not None and getattr(node.op, field) % ranks:
                group = f"tp {mapping.tp}" if rule.group == "attn_tp" else f"the MoE group of {ranks}"
                raise PlanError(f"compile_built_graph mapping: node {nid!r} ({node.op.kind}) splits "
                                 f"{field} = {getattr(node.op, field)} {rule.split}-wise over {ranks} GPUs "
                                 f"({group}), which does not divide it")
            if rule.collective and not _followed(graph, nid, rule.collective):
                added.append(_collective(graph, node, rule, ranks, nodes, edges))
        if not added:
            return PassResult(self.name, graph, 0, ())
        return PassResult(self.name, graph.with_nodes(nodes.values(), edges), len(added), tuple(added))


def _followed(graph: Graph, nid: str, collective: str) -> bool:
    """Whether the graph already sends every output of ``nid`` through that collective (built by hand)."""
    outs = graph.outputs(nid)
    return bool(outs) and all(isinstance(graph.nodes[e.dst].op, Communication)
                              and graph.nodes[e.dst].op.collective == collective for e in outs)


def _collective(graph: Graph, node, rule, ranks: int, nodes: dict, edges: list) -> str:
    """Put ``rule``'s collective on ``node``'s outputs (its readers read the collective instead; a
    sink hands its end of the dataflow on), in ``nodes`` and ``edges``; returns the new id."""
    outs = graph.outputs(node.id)
    if outs:
        widest = max(outs, key=lambda e: (e.dims, e.format))
        dims, fmt = widest.dims, widest.format
    else:
        field = next((f for f in ("n", "dim", "inter") if isinstance(getattr(node.op, f, None), int)), None)
        if field is None:
            raise CostError(f"compile_built_graph: node {node.id!r} ({node.op.kind}) is followed by a "
                             f"{rule.collective} (sharding row {rule.name!r}) but has no outputs and no n or dim "
                             "to size it; give it a reader")
        dims, fmt = getattr(node.op, field), "bf16"
    cid = f"{node.id}.{rule.collective}"
    if cid in nodes:
        raise CostError(f"compile_built_graph: node id {cid!r}, the collective after {node.id!r}, is taken")
    nodes[cid] = node.with_fields(id=cid, op=RuleCollective(rule.collective, f"{rule.name} output", dims, ranks, fmt),
                                  count="q", sink=node.sink)
    nodes[node.id] = node.with_fields(sink=False)
    edges[:] = [Edge(cid, e.dst, e.role, e.dims, e.format) if e.src == node.id else e for e in edges]
    edges.append(Edge(node.id, cid, "x", dims, fmt))
    return cid


def built_pipeline(passes: tuple[Pass, ...] | None = None) -> tuple[Pass, ...]:
    """The passes a hand-built graph runs before the schedule: :class:`UserSharding`, then
    ``passes`` (default: the precision pass)."""
    return (UserSharding(), *((PrecisionAnnotation(),) if passes is None else tuple(passes)))


def built_context(graph: Graph, mapping: Mapping | None = None, model: ModelSpec | None = None,
                  plan: Plan | None = None, who: str = "compile_built_graph") -> PassContext:
    """The pass context of a hand-built graph: ``model`` (may be None) and ``plan`` (default: one
    1-token prefill, which only logit and image counts read) under ``mapping``'s degrees; ``who``
    names the entry point in errors."""
    if not isinstance(graph, Graph):
        raise GraphError(f"{who} graph: expected a v41graph Graph (GraphBuilder(...).build(), or a "
                         f"lowered graph), got {graph!r:.80}")
    mapping = mapping or (Mapping(plan.tp, plan.dp, plan.ep) if plan is not None else Mapping())
    if not isinstance(mapping, Mapping):
        raise GraphError(f"compile_built_graph mapping: expected a v41graph.Mapping, got {mapping!r:.80}")
    if plan is None:
        plan = Plan([Request.prefill(1)], tp=mapping.tp, dp=mapping.dp, ep=mapping.ep)
    elif (plan.tp, plan.dp, plan.ep) != (mapping.tp, mapping.dp, mapping.ep):
        raise GraphError(f"compile_built_graph: plan tp/dp/ep {plan.tp}/{plan.dp}/{plan.ep} differ from the "
                         f"mapping's {mapping.tp}/{mapping.dp}/{mapping.ep}")
    if model is None:
        needy = sorted(n.id for n in graph.nodes.values() if n.count in ("entry", "image"))
        if needy:
            raise GraphError(f"compile_built_graph: node {needy[0]!r} counts per {graph.nodes[needy[0]].count}, "
                             "which needs model=")
    return PassContext(model, plan)


def compile_built_graph(graph: Graph, hardware: str | Hardware = "h200_sxm", *, mapping: Mapping | None = None,
                        model: ModelSpec | None = None, plan: Plan | None = None,
                        passes: tuple[Pass, ...] | None = None, check: bool = True) -> Compiled:
    """Verify ``graph``, run the sharding check, ``passes`` (default: precision) and the schedule on ``hardware``
    under ``mapping`` (default TP1); see the module doc. The result is the one ``compile`` gives:
    ``.report("schedule")``, and ``cost`` / ``schedule`` side tables on ``.graph``."""
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    ctx = built_context(graph, mapping, model, plan)  # refuses a graph that is not a Graph
    refresh(plan)  # the reuse switches, read when a compile starts (v41graph/reuse.py)
    if check:
        verify(graph)
    return run_pipeline(graph, ctx, built_pipeline(passes) + (Scheduling(hw),), check=check)
