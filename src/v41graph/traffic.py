"""Activation traffic of a set of nodes, read off the graph's edges.

A node reads each external input once and writes its output tensor once (however many
consumers read it). Coefficient tensors (role ``coeff``, O(n²) values) are not activation
traffic. Used by the fusion pass to recompute a fused module's traffic and by reports, so the
mHC figures (4n+4)d / (3n+2)d / (2n+2)d are *derived* from the graph, not restated.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol

from .graph import Edge, Node
from .ops import Fused


class EdgeView(Protocol):
    """What traffic reads: a :class:`~v41graph.graph.Graph`, or the fusion pass's working copy."""

    nodes: Mapping[str, Node]

    def inputs(self, node_id: str) -> tuple[Edge, ...]: ...

    def outputs(self, node_id: str) -> tuple[Edge, ...]: ...


def activation_elements(graph: EdgeView, members: Iterable[str]) -> int:
    """Values per token moved between HBM and the kernel(s) ``members`` when run as one module."""
    group = set(members)
    total = 0
    for nid in group:
        ins = {(e.src, e.role): e.dims for e in graph.inputs(nid) if e.src not in group and e.role != "coeff"}
        total += sum(ins.values())
        op = graph.nodes[nid].op
        if isinstance(op, Fused):  # a module writes each of its members' escaping outputs once
            total += sum(op.writes) + sum(d for _, d in op.reread)
            continue
        outs = [e.dims for e in graph.outputs(nid) if e.dst not in group and e.role != "coeff"]
        if outs:
            total += max(outs)  # one output tensor, written once
    return total


def escaping_writes(graph: EdgeView, members: Iterable[str]) -> tuple[int, ...]:
    """Dims of each member's output tensor that some node outside ``members`` reads."""
    group, writes = set(members), []
    for nid in sorted(group):
        outs = [e.dims for e in graph.outputs(nid) if e.dst not in group and e.role != "coeff"]
        if outs:
            writes.append(max(outs))
    return tuple(writes)


def unfused_elements(graph: EdgeView, members: Iterable[str]) -> int:
    """The same nodes run as separate kernels: each one's inputs and output touch HBM."""
    return sum(activation_elements(graph, [m]) for m in members)
