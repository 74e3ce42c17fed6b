"""The SOL time of a measured attention module at a table's grid point, kept across compiles.

Interpolating a module's table (:mod:`.tables`) asks for the module's SOL time at the grid
points around the node's own (``batch_size`` requests of ``isl`` new tokens after ``step``
cached): the same node over those rows. A serving run compiles a hundred step shapes that ask
for the same few grid points, so the answer is kept, keyed by everything the member costs read:
the module (its op, layer, stage, path), the point, the model's content, the plan's policies
(the mapping, routing, residency…), the GPUs per NVLink domain, the hardware's content and the
user sharding rows. A module whose members count logits or images (they read the plan's
requests) is computed every time.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.graph import Node
from ...ir.ledger import Row
from ...model.user_sharding import generation
from ...reuse import Memo, content_digest
from ..counts import CostContext
from ..hardware import Hardware
from ..node import member_costs
from ..value import Cost, sol_time

_MODULE_SOL = Memo("measured module SOL at grid points", 1 << 14)
#: the counts of :func:`v41graph.costs.counts.tokens_of` that read the plan's requests, not only the rows
_READS_REQUESTS = frozenset(("logits", "image"))


def module_sol(node: Node, batch: int, isl: int, step: int, ctx: CostContext, hw: Hardware) -> float:
    """SOL seconds of ``node``'s ops over ``batch`` requests of ``isl`` new tokens after ``step`` cached."""
    site = replace(node, count="q", rows=(Row(0, node.layer, step, step + isl, 0, step, step + isl, step, 0, batch),))

    def compute() -> float:
        return float(sol_time(sum((m.cost for m in member_costs(site, ctx)), Cost()), hw).time)

    if _READS_REQUESTS.intersection(getattr(node.op, "counts", ()) or (node.count,)):
        return compute()
    key = (node.op, node.layer, node.stage, node.path, batch, isl, step, content_digest(ctx.model),
           ctx.plan.policies, ctx.gpus_per_node, content_digest(hw), generation())
    hit = _MODULE_SOL.get(key, compute)
    return hit if hit is not None else _MODULE_SOL.put(key, compute())
