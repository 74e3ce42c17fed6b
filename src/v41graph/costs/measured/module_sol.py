"""The SOL time of a measured attention module at a table's grid point, kept across compiles.

Interpolating a module's table (:mod:`.tables`) asks for the module's SOL time at the grid
points around the node's own (``batch_size`` requests of ``isl`` new tokens after ``step``
cached): the same node over those rows. A serving run compiles a hundred step shapes that ask
for the same few grid points, so the answer is kept, keyed by everything the member costs read:
the module's cost signature (:func:`v41graph.costs.node.static_signature`: what it covers, its
counts, the compress ratio an entry count reads and its members' sharding rows — not its layer
nor the owner layer of a cache it covers, so the 43 layers' modules of one kind share one
answer), the point, the model's content, the plan's policies (the mapping, routing,
residency…), the GPUs per NVLink domain, the hardware's content and the user sharding rows. A
module whose members count logits or images (they read the plan's requests) is computed every time.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.graph import Graph, Node
from ...ir.ledger import Row
from ...ir.shapes import SHAPES_KEPT
from ...model.user_sharding import generation
from ...reuse import Memo, content_digest
from ...structural import Keyed, by_content, memo
from ..counts import REQUEST_COUNTS, CostContext
from ..hardware import Hardware
from ..node import member_costs, signature_number, static_signature
from ..value import Cost, sol_time

_MODULE_SOL = Memo("measured module SOL at grid points", 1 << 14)


def module_signature(graph: Graph, node: Node, model) -> int:
    """The number of ``node``'s static cost signature on ``model`` (kept per graph shape)."""
    return _signature(graph.skeleton, node.id, by_content(model), generation())


#: per graph shape and module (and model, user sharding rows): its signature, numbered per session
#: (a cost rule registered later empties this memo: costs/registry.py)
@memo("measured module signatures", SHAPES_KEPT << 8)
def _signature(skeleton: Keyed, node_id: str, model: Keyed, _generation: int) -> int:
    graph = skeleton.value
    return signature_number(static_signature(graph, graph.nodes[node_id], model.value)[0])


def module_tag(node: Node, signature: int, ctx: CostContext, hw: Hardware) -> tuple | None:
    """What a module's SOL depends on besides the point (None: it reads the plan's requests)."""
    if REQUEST_COUNTS.intersection(getattr(node.op, "counts", ()) or (node.count,)):
        return None
    return (signature, content_digest(ctx.model), ctx.plan.policies, ctx.gpus_per_node, content_digest(hw),
            generation())


def module_sol(node: Node, batch: int, isl: int, step: int, ctx: CostContext, hw: Hardware,
               tag: tuple | None) -> float:
    """SOL seconds of ``node``'s ops over ``batch`` requests of ``isl`` new tokens after ``step``
    cached (``tag``: :func:`module_tag` of the node, or None: computed every time)."""
    site = replace(node, count="q", rows=(Row(0, node.layer, step, step + isl, 0, step, step + isl, step, 0, batch),))

    def compute() -> float:
        return float(sol_time(Cost.sum(m.cost for m in member_costs(site, ctx)), hw).time)

    if tag is None:
        return compute()
    key = (tag, batch, isl, step)
    hit = _MODULE_SOL.get(key, compute)
    return hit if hit is not None else _MODULE_SOL.put(key, compute())
