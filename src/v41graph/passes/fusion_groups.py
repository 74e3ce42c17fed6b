"""The fusion pass's group finders: for each rule, the candidate groups of node ids in a graph
(legality — one ledger, convexity — is checked by :mod:`v41graph.passes.fusion`)."""

from __future__ import annotations

from ..ir.graph import Graph
from ..ir.ops import (BlockMax, CandidateSelect, Dequantize, Gemm, MhcCoefficients, MhcCollapse, MhcExpand, Norm,
                      Quantize, Rope, RoutedExperts, SparseAttention, SwiGLU, TopK)


def _consumers(g: Graph, nid: str, cls) -> list[str]:
    return sorted(e.dst for e in g.outputs(nid) if isinstance(g.nodes[e.dst].op, cls))


def _mhc_groups(g: Graph) -> list[tuple[str, ...]]:
    groups = []
    for nid in sorted(g.nodes):
        if not isinstance(g.nodes[nid].op, MhcExpand):
            continue
        coeff, collapse = _consumers(g, nid, MhcCoefficients), _consumers(g, nid, MhcCollapse)
        if len(coeff) != 1 or len(collapse) != 1:
            continue  # Engram or the head sits between this transform and the next sublayer
        norm = _consumers(g, collapse[0], Norm)
        if len(norm) == 1:
            groups.append((nid, coeff[0], collapse[0], norm[0]))
    return groups


def _quant_groups(g: Graph) -> list[tuple[str, ...]]:
    groups = []
    for nid in sorted(g.nodes):
        if isinstance(g.nodes[nid].op, Quantize):
            src = [e.src for e in g.inputs(nid)]
            if len(src) == 1 and len(g.outputs(src[0])) == 1 and not g.nodes[src[0]].op.storage:
                groups.append((src[0], nid))
    return groups


def _score_groups(g: Graph) -> list[tuple[str, ...]]:
    groups = []
    for nid in sorted(g.nodes):
        if g.nodes[nid].op.kind == "IndexScore":
            group = [nid] + _consumers(g, nid, TopK) + _consumers(g, nid, BlockMax)
            for bm in _consumers(g, nid, BlockMax):
                group += _consumers(g, bm, CandidateSelect)
            groups.append(tuple(group))
    return groups


def _swiglu_groups(g: Graph) -> list[tuple[str, ...]]:
    groups = []
    for nid in sorted(g.nodes):
        if isinstance(g.nodes[nid].op, SwiGLU):
            up = [e.src for e in g.inputs(nid) if isinstance(g.nodes[e.src].op, RoutedExperts)]
            down = _consumers(g, nid, RoutedExperts)
            if len(up) == 1 and len(down) == 1 and len(g.outputs(up[0])) == 1:
                groups.append((up[0], nid, down[0]))
    return groups


def _unpack_groups(g: Graph) -> list[tuple[str, ...]]:
    groups = []
    for nid in sorted(g.nodes):
        if isinstance(g.nodes[nid].op, Dequantize):
            attn = _consumers(g, nid, SparseAttention)
            if len(attn) == 1 and len(g.outputs(nid)) == 1:
                groups.append((nid, attn[0]))
    return groups


def _rope_groups(g: Graph) -> list[tuple[str, ...]]:
    groups = []
    for nid in sorted(g.nodes):
        if isinstance(g.nodes[nid].op, Rope):
            src = [e.src for e in g.inputs(nid)]
            if len(src) == 1 and isinstance(g.nodes[src[0]].op, Gemm) and len(g.outputs(src[0])) == 1:
                groups.append((src[0], nid))
    return groups


FINDERS = {"mhc": _mhc_groups, "quant": _quant_groups, "score_topk": _score_groups, "swiglu": _swiglu_groups,
           "kv_unpack": _unpack_groups, "rope": _rope_groups}
