"""Hand-built graphs, first-class: run the passes and the schedule on a graph you built.

:func:`compile_built_graph` takes a :class:`~v41graph.ir.graph.Graph` (from
:class:`~v41graph.ir.graph.GraphBuilder`, or a lowered graph you rewrote), a hardware and a
:class:`~v41graph.model.sharding.Mapping`, verifies it, and runs the precision pass then the
scheduling pass on it — the cost rules, the sharding table and the critical-path schedule the
lowered DeepSeek graphs use. The lowering-specific passes (replay, KV de-duplication, fusion)
are not run unless given in ``passes``: they rewrite patterns of the DeepSeek layers.

Token counts come from the nodes' ledger rows (:meth:`GraphBuilder.rows`); a node that counts
per compressed entry or per image needs a ``model`` (and its plan) to count them.

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
(['precision', 'schedule'], 'h200_sxm')
"""

from __future__ import annotations

from ..costs.hardware import Hardware, load_hardware
from ..errors import GraphError
from ..ir.graph import Graph
from ..ir.plan import Plan, Request
from ..ir.verify import verify
from ..model.config import ModelSpec
from ..model.sharding import Mapping
from ..reuse import refresh
from .base import Compiled, PassContext, Pass, run_pipeline
from .precision import PrecisionAnnotation
from .scheduling import Scheduling

__all__ = ["built_context", "compile_built_graph"]


def built_context(graph: Graph, mapping: Mapping | None = None, model: ModelSpec | None = None,
                  plan: Plan | None = None) -> PassContext:
    """The pass context of a hand-built graph: ``model`` (may be None) and ``plan`` (default: one
    1-token prefill, which only logit and image counts read) under ``mapping``'s degrees."""
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
    """Verify ``graph``, run ``passes`` (default: precision) and the schedule on ``hardware``
    under ``mapping`` (default TP1); see the module doc. The result is the one ``compile`` gives:
    ``.report("schedule")``, and ``cost`` / ``schedule`` side tables on ``.graph``."""
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    ctx = built_context(graph, mapping, model, plan)
    refresh(plan)  # the reuse switches, read when a compile starts (v41graph/reuse.py)
    if check:
        verify(graph)
    pipeline = (PrecisionAnnotation(),) if passes is None else tuple(passes)
    return run_pipeline(graph, ctx, pipeline + (Scheduling(hw),), check=check)
