"""Op families: the one mapping from an op (and where it sits) to what a reader calls it.

A serving engineer asks "how much of the step is routed experts, index scoring, attention, mHC?",
not "how much is ``Fused``". Every node — and every member of a fused module, through the fused
node's ``covers`` record — belongs to exactly one family of :data:`FAMILIES`. A fused module's time
is split over the families it covers by its members' SOL shares (each member's own SOL time over
the sum of its members'), so the families of a schedule sum to its node total and ``Fused`` is
never a family. Bytes and flops are the members' own; the module's activation traffic (which no
member owns) is split by the same shares.

>>> from v41graph import Plan, Request, compile, load_model
>>> m, plan = load_model(), Plan([Request.prefill(8192)], decoder_replay="bounded")
>>> f = by_family(m, plan, compile(m, plan))
>>> list(f.families)[:4], "Fused" in f.families
(['embedding', 'attention', 'index scoring', 'compressor'], False)
>>> abs(sum(v.time_s for v in f.families.values()) - f.total_time_s) <= 1e-9 * f.total_time_s
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce
from operator import add

from ..costs.counts import CostContext
from ..costs.hardware import Hardware, load_hardware
from ..costs.node import member_costs
from ..costs.value import sol_time
from ..ir.ops import (BlockMax, CacheWrite, CandidatePool, CandidateSelect, Communication, Compressor,
                      CompressorState, Dequantize, DraftHead, Embedding, EngramGate, EngramHash, EngramLookup,
                      EngramTable, Fused, Gemm, GlobalKVStore, IndexKStore, IndexScore, MhcCoefficients, MhcCollapse,
                      MhcExpand, MoeCombine, MoeGate, Norm, Quantize, Rope, RoutedExperts, SparseAttention, SwaRing,
                      SwiGLU, TopK, VisionEncoder)

#: every family, in the order tables list them (model input → layer → MoE → extras → output)
FAMILIES = ("embedding", "attention", "index scoring", "compressor", "mHC + norms", "router", "routed experts",
            "shared expert", "Engram", "communication", "head", "DSpark", "vision", "other")

#: how a fused module's time is split, stated wherever families are shown
SPLIT_RULE = "fused modules split over the families they cover by their members' SOL shares"

# Where a node sits decides first (a collective is communication wherever it runs; the draft, the
# vision tower and the output head are families of their own whatever op they run), then the
# part of the layer its id names (a Gemm of the indexer is index scoring, a norm of the
# compressor is the compressor's), then the op kind.
_STAGES = {"dspark": "DSpark", "vision": "vision", "head": "head"}
_PREFIXES = (("head.", "head"), ("vision.", "vision"), ("D.", "DSpark"), ("embed", "embedding"))
_DRAFT_BLOCK = re.compile(r"D\d+\.")
_PARTS = ((".engram.", "Engram"), (".idx.", "index scoring"), (".cmp.", "compressor"),
          (".moe.experts.", "routed experts"), (".moe.shared.", "shared expert"))
_KINDS = {
    Embedding: "embedding",
    Gemm: "attention", Rope: "attention", Quantize: "attention", Dequantize: "attention",
    SparseAttention: "attention", CacheWrite: "attention", SwaRing: "attention", GlobalKVStore: "attention",
    IndexScore: "index scoring", TopK: "index scoring", BlockMax: "index scoring",
    CandidateSelect: "index scoring", IndexKStore: "index scoring", CandidatePool: "index scoring",
    Compressor: "compressor", CompressorState: "compressor",
    Norm: "mHC + norms", MhcCoefficients: "mHC + norms", MhcCollapse: "mHC + norms", MhcExpand: "mHC + norms",
    MoeGate: "router", RoutedExperts: "routed experts", SwiGLU: "routed experts", MoeCombine: "routed experts",
    EngramHash: "Engram", EngramLookup: "Engram", EngramGate: "Engram", EngramTable: "Engram",
    VisionEncoder: "vision", DraftHead: "DSpark",
}


def family_of(op, node_id: str, stage: str | None = None) -> str:
    """The family of one op (a node's, or one member of a fused module's) with its id and stage.

    >>> from v41graph.ir.ops import Gemm, Norm
    >>> family_of(Gemm("wq_b", 0, 0, "fp8"), "L3.idx.wq_b", "encoder"), family_of(Norm(0), "L3.q_norm", "encoder")
    ('index scoring', 'mHC + norms')
    """
    if isinstance(op, Communication):
        return "communication"
    if stage in _STAGES:
        return _STAGES[stage]
    for prefix, family in _PREFIXES:
        if node_id.startswith(prefix):
            return family
    if _DRAFT_BLOCK.match(node_id):
        return "DSpark"
    for part, family in _PARTS:
        if part in node_id:
            return family
    return next((f for cls, f in _KINDS.items() if isinstance(op, cls)), "other")


@dataclass(frozen=True)
class FamilyFigures:
    """One family's per-GPU node time (s), flops and bytes, summed over the nodes it holds."""

    time_s: float
    flops: float
    bytes: float


@dataclass(frozen=True)
class FamilyBreakdown:
    """Families (only those with work, in :data:`FAMILIES` order), the node total they sum to,
    how many fused modules were split over several families, and the rule that split them."""

    families: dict[str, FamilyFigures]
    total_time_s: float
    split_modules: int
    rule: str = SPLIT_RULE

    def as_dict(self) -> dict:
        return {"families": {k: {"time_s": v.time_s, "flops": v.flops, "bytes": v.bytes}
                             for k, v in self.families.items()},
                "total_time_s": self.total_time_s, "split_modules": self.split_modules, "rule": self.rule}


def node_time(slot) -> float:
    """A scheduled node's time: its measured one (OP / hybrid) where it has one, else its SOL time."""
    return slot.op.time if slot.op is not None else float(slot.sol.time)


def _shares(node, ctx: CostContext, hw: Hardware) -> list[tuple[str, float, object]]:
    """(family, SOL share, member cost) of each op a fused node covers; equal shares if all are 0."""
    members = member_costs(node, ctx)
    sols = [float(sol_time(m.cost, hw).time) for m in members]
    whole = sum(sols)
    weights = [s / whole for s in sols] if whole > 0 else [1 / len(members)] * len(members)
    return [(family_of(m.op, m.member, node.stage), w, m.cost) for m, w in zip(members, weights)]


def node_parts(model, plan, compiled, hardware: Hardware | str | None = None):
    """Each scheduled node, in schedule order, as ``(node id, time, parts)``: ``parts`` the families it
    holds as ``(family, share, time, flops, bytes)`` — one of share 1 for a plain node, one per member
    for a fused module (split by its members' SOL shares, its unowned activation traffic alike)."""
    graph = compiled.graph
    slots, costs = graph.annotation("schedule"), graph.annotation("cost")
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware or compiled.report("schedule").hardware)
    ctx = CostContext(model, plan, hw.gpus_per_node)
    memo: dict = {}  # equal fused ops over equal rows split alike (the scheduling pass prices them once)
    for nid in slots:
        node, t = graph.nodes[nid], node_time(slots[nid])
        cost = costs[nid]
        if not isinstance(node.op, Fused):
            yield nid, t, [(family_of(node.op, nid, node.stage), 1.0, t, float(cost.total_flops),
                            float(cost.total_bytes))]
            continue
        key = (node.op, node.rows, node.count, node.stage, node.layer)
        shares = memo.get(key)
        if shares is None:
            shares = memo[key] = _shares(node, ctx, hw)
        traffic = float(cost.total_bytes) - sum(float(c.total_bytes) for _, _, c in shares)
        yield nid, t, [(family, w, t * w, float(c.total_flops), float(c.total_bytes) + traffic * w)
                       for family, w, c in shares]


def by_family(model, plan, compiled, hardware: Hardware | str | None = None) -> FamilyBreakdown:
    """Time, flops and bytes of a scheduled graph by op family (see the module doc)."""
    acc: dict[str, list[float]] = {}
    split = 0
    times = []
    for _, t, parts in node_parts(model, plan, compiled, hardware):
        times.append(t)
        split += len({f for f, w, _, _, _ in parts if w > 0}) > 1
        for family, _, share, flops, nbytes in parts:
            _add(acc, family, share, flops, nbytes)
    families = {f: FamilyFigures(*acc[f]) for f in FAMILIES if f in acc}
    return FamilyBreakdown(families, reduce(add, times, 0.0), split)


def _add(acc: dict[str, list[float]], family: str, t: float, flops: float, nbytes: float) -> None:
    row = acc.setdefault(family, [0.0, 0.0, 0.0])
    row[0] += t
    row[1] += flops
    row[2] += nbytes
