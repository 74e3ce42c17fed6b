"""Activation traffic of a set of nodes, read off the graph's edges.

The one rule for what an op moves through HBM besides its own weights and cache traffic: a
node reads each external input once and writes its output tensor once (however many consumers
read it); coefficients and cache / table edges are not activation traffic. The fusion pass
recomputes a fused module's traffic with it and the cost rules turn it into bytes, so the mHC
figures (4n+4)d / (3n+2)d / (2n+2)d are *derived* from the graph, not restated.

RoPE works in place on the rotary slice of each head (64 of 512 dims): run alone it reads and
writes only that slice; fused into the op that produces its input, the module writes the whole
tensor once; fused with the op that consumes it, the module reads the whole input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol

from ..ir.graph import Edge, Node
from ..ir.ops import Dequantize, Fused, Rope
from ..model.formats import bytes_per_value


class EdgeView(Protocol):
    """What traffic reads: a :class:`~v41graph.ir.graph.Graph`, or the fusion pass's working copy."""

    nodes: Mapping[str, Node]

    def inputs(self, node_id: str) -> tuple[Edge, ...]: ...

    def outputs(self, node_id: str) -> tuple[Edge, ...]: ...


#: roles of cache / table traffic: charged by the op rules as KV or weight bytes, not activations
STORAGE_ROLES = ("main_kv", "index_k", "swa_kv", "table", "pool", "state")
#: a fused module's re-reads are of its bf16 residual input
MODULE_FORMAT = "bf16"


@dataclass(frozen=True)
class Tensor:
    """One activation a module moves through HBM: ``dims`` values of ``format`` per unit of ``src``."""

    src: str  # the producing node: its count says per token, or per unpacked KV entry
    dims: int
    format: str


def is_activation(graph: EdgeView, e: Edge) -> bool:
    """An edge is activation traffic unless it carries coefficients (O(n²) values) or cache
    traffic; unpacked main KV (a Dequantize's bf16 output) is an activation though its role is
    main_kv."""
    if e.role == "coeff":
        return False
    return e.role not in STORAGE_ROLES or isinstance(graph.nodes[e.src].op, Dequantize)


def module_io(graph: EdgeView, members: Iterable[str]) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
    """(reads, writes) of ``members`` run as one module: each external input read once per
    member, each member's escaping output written once; a fused node adds its recorded writes
    and re-reads."""
    group = set(members)
    reads: list[Tensor] = []
    writes: list[Tensor] = []
    for nid in sorted(group):
        op = graph.nodes[nid].op
        # RoPE in place: alone it touches only the rotary slice of what it reads and writes
        touched = inside_in = inside_out = None
        if isinstance(op, Rope):
            touched = op.heads * op.rope_dims
            inside_in = any(e.src in group for e in graph.inputs(nid))
            inside_out = any(e.dst in group for e in graph.outputs(nid))
        seen = {}
        for e in graph.inputs(nid):
            if e.src not in group and is_activation(graph, e):
                dims = e.dims if touched is None or inside_out else min(e.dims, touched)
                seen.setdefault((e.src, e.role), Tensor(e.src, dims, e.format))
        reads += seen.values()
        if isinstance(op, Fused):
            writes += [Tensor(nid, d, f) for d, f in op.writes]
            reads += [Tensor(nid, d, MODULE_FORMAT) for _, d in op.reread]
            continue
        outs = [e for e in graph.outputs(nid) if e.dst not in group and is_activation(graph, e)]
        if outs:  # one output tensor, written once however many nodes read it
            e = max(outs, key=lambda e: (e.dims * bytes_per_value(e.format), e.dims))
            dims = e.dims if touched is None or inside_in or inside_out else min(e.dims, touched)
            writes.append(Tensor(nid, dims, e.format))
    return tuple(reads), tuple(writes)


def activation_elements(graph: EdgeView, members: Iterable[str]) -> int:
    """Values per unit moved between HBM and the kernel(s) ``members`` when run as one module."""
    reads, writes = module_io(graph, members)
    return sum(t.dims for t in reads + writes)


def escaping_writes(graph: EdgeView, members: Iterable[str]) -> tuple[tuple[int, str], ...]:
    """(dims, format) of each member's output tensor that some node outside ``members`` reads."""
    return tuple((t.dims, t.format) for t in module_io(graph, members)[1])


def unfused_elements(graph: EdgeView, members: Iterable[str]) -> int:
    """The same nodes run as separate kernels: each one's inputs and output touch HBM."""
    return sum(activation_elements(graph, [m]) for m in members)
