"""Precision annotation: role × storage format × compute precision × scale layout → bytes.

Contract: writes the ``precision`` side table (node id → :class:`NodePrecision`); never changes
nodes or edges. Before ⇒ after::

    L20.cmp.write --main_kv 512×v41_main_kv--> L20.store.main_kv
    ⇒ precision["L20.cmp.write"].outputs[0].bytes_per_token == 288

Dequantising FP4 main KV before attention is compute: the unpack (``Dequantize``) and attention
compute in bf16, never at an FP4 GEMM peak.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from types import MappingProxyType

from ..ir.graph import Edge, Graph
from ..ir.shapes import SHAPES_KEPT
from ..ir.ops import Gemm, IndexScore, Op, RoutedExperts
from ..model.formats import FORMATS, bytes_per_value, scale_layout
from ..structural import Keyed, memo
from .base import PassResult

_ELEMENT_PRECISION = {"e2m1": "fp4", "e4m3": "fp8", "bf16": "bf16", "fp32": "fp32"}


@dataclass(frozen=True)
class TensorPrecision:
    role: str
    format: str
    scale_layout: str
    dims: int
    bytes_per_value: Fraction

    @property
    def bytes_per_token(self) -> Fraction:
        return self.dims * self.bytes_per_value


@dataclass(frozen=True)
class NodePrecision:
    compute: str  # precision of the arithmetic: fp4 | fp8 | bf16 | fp32 | none
    weight: TensorPrecision | None
    inputs: tuple[TensorPrecision, ...]
    outputs: tuple[TensorPrecision, ...]


@dataclass(frozen=True)
class PrecisionReport:
    nodes: int
    formats: tuple[str, ...]


def _tensor(e: Edge) -> TensorPrecision:
    return TensorPrecision(e.role, e.format, scale_layout(e.format), e.dims, bytes_per_value(e.format))


def compute_precision(op: Op) -> tuple[str, TensorPrecision | None]:
    """The arithmetic precision of an op and its weight tensor, if it has one."""
    if isinstance(op, Gemm):
        w = TensorPrecision("weight", op.weight_format, scale_layout(op.weight_format), op.k * op.n,
                            bytes_per_value(op.weight_format))
        return _ELEMENT_PRECISION[FORMATS[op.weight_format].element], w
    if isinstance(op, RoutedExperts):
        w = TensorPrecision("weight", op.weight_format, scale_layout(op.weight_format), op.weights_per_expert,
                            bytes_per_value(op.weight_format))
        return _ELEMENT_PRECISION[FORMATS[op.weight_format].element], w
    if isinstance(op, IndexScore):
        return "fp8", None  # MXFP4 q·k is upcast in the scoring kernel
    if op.storage:
        return "none", None
    return "bf16", None  # elementwise, reductions, attention (FP4 KV is dequantised: compute)


def _op_precision(op: Op) -> tuple[str, TensorPrecision | None]:
    records = [compute_precision(c) for c in getattr(op, "covers", (op,))]
    weighted = [r for r in records if r[1] is not None]
    if len(weighted) > 1 and len({w.format for _, w in weighted}) == 1:  # expert up + down: one weight set
        return weighted[0][0], replace(weighted[0][1], dims=sum(w.dims for _, w in weighted))
    special = [r for r in records if r[0] != "bf16"]
    return (weighted or special or records)[0]


def node_precision(graph: Graph, nid: str, *, memo: dict | None = None) -> NodePrecision:
    """The precision record of one node.

    A fused module takes its weighted member's precision (members with weights of one format —
    the expert up and down GEMMs — count their weights together), else that of a member whose arithmetic
    is not plain bf16 (fused index scoring stays fp8), else bf16. ``memo`` (a dict the caller
    keeps across nodes) shares the records of equal ops and equal tensors: every layer has the
    same ones, and the records are immutable values.
    """
    op = graph.nodes[nid].op
    if memo is None:
        memo = {}
    if op not in memo:
        memo[op] = _op_precision(op)
    compute, weight = memo[op]
    tensors = []
    for edges in (graph.inputs(nid), graph.outputs(nid)):
        records = []
        for e in edges:
            key = (e.role, e.format, e.dims)
            t = memo.get(key)
            if t is None:
                t = memo[key] = _tensor(e)
            records.append(t)
        tensors.append(tuple(records))
    return NodePrecision(compute, weight, tensors[0], tensors[1])


@dataclass(frozen=True)
class PrecisionAnnotation:
    name: str = "precision"

    def __call__(self, graph: Graph, ctx) -> "PassResult":
        skeleton = graph.skeleton
        table, changed, report = _table(skeleton)
        return PassResult(self.name, graph.annotate("precision", table, shape=_table.key(skeleton)), changed, report)


#: the table of each graph shape: records depend on payloads and edges only, never on rows
@memo("precision tables", SHAPES_KEPT)
def _table(skeleton: Keyed) -> tuple:
    """The precision table of the graph, how many records it changed, and the report."""
    graph = skeleton.value
    table, records = {}, {}
    for nid in sorted(graph.nodes):
        table[nid] = node_precision(graph, nid, memo=records)
    changed = 0 if graph.annotations.get("precision") == table else len(table)
    formats = tuple(sorted({e.format for e in graph.edges}))
    return MappingProxyType(table), changed, PrecisionReport(len(table), formats)
