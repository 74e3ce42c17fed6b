"""Fusion: replace legal groups of nodes by fused modules and recompute their traffic.

Contract: for the plan's fusion profile, find groups by the rule table, check each group is
legal (members share one ledger — never across the replay cut —, and the group is convex:
no path leaves it and comes back), replace it by one :class:`~v41graph.ir.ops.Fused` node whose
in/out edges are the group's external edges. Flops are conserved (the fused node covers its
members' ops); bytes only go down (internal edges no longer touch HBM). Before ⇒ after::

    L3.hc_attn.expand → L3.hc_ffn.coeff, L3.hc_ffn.collapse → L3.ffn_norm
    ⇒ L3.hc_attn.mega   (single-pass: (2n+2)d values per token instead of (4n+4)d)

Rules: ``mhc`` (two-pass or single-pass Mega-mHC: the expand of one sublayer with the
coefficients, collapse and pre-norm of the next; single-pass needs V4.1's lagged pre-mix),
``quant`` (quantisation into the op that produces its input), ``score_topk`` (index scoring
with Top-K and, on the candidate source, block-max and candidate selection), ``swiglu`` (expert
up GEMM → SwiGLU → down GEMM as one module, keeping the ``moe.experts`` / ``moe.shared`` ids:
the 2·inter and inter values per routed copy stay on chip) ``kv_unpack`` (the FP4 main-KV
unpack into attention, keeping the ``attn`` id: attention reads the FP4 entries directly) and
``rope`` (a query RoPE into the epilogue of the GEMM that produces it, keeping the RoPE's id:
the query is written once, already rotated; a RoPE followed by a quantisation goes with
``quant`` first, which runs earlier).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..algebra import is_symbolic
from ..costs.traffic import activation_elements, escaping_writes, unfused_elements
from ..errors import PlanError
from ..ir.graph import Edge, Graph
from ..ir.ops import Fused
from .base import PassResult
from .fusion_groups import FINDERS
from .fusion_rules import fusion_rules

PROFILE_RULES = {"unfused": (), "two-pass": ("mhc", "quant", "score_topk", "swiglu", "kv_unpack", "rope"),
                 "single-pass": ("mhc", "quant", "score_topk", "swiglu", "kv_unpack", "rope")}


@dataclass(frozen=True)
class FusionReport:
    profile: str
    groups: dict[str, int]
    nodes_removed: int
    mhc_elements_per_transform: int | None  # values per token of one fused residual transform
    elements_before: int
    elements_after: int
    # token sets whose equality depends on the plan's symbols (e.g. [N − Min(128, N), N) vs
    # [0, N)): decided at ``Context.at`` if given, else kept apart; closed forms split there
    conditions: tuple[tuple[tuple, ...], ...] = ()


def _fused_id(rule: str, group: tuple[str, ...]) -> str:
    """Ids that readers of the fused graph keep: the attention's, the expert op's, the mHC's."""
    if rule == "mhc":
        return group[0].replace(".expand", ".mega")
    if rule == "quant":
        return group[-1] + "+"
    if rule == "score_topk":
        return group[0] + "+"
    if rule in ("swiglu", "measured:moe"):
        return group[0].removesuffix(".up")  # L5.moe.experts.up → L5.moe.experts
    if rule.startswith("measured:"):  # a measured module (passes.measured_modules): L3.dsv4_attention
        return f"{group[0].split('.', 1)[0]}.{rule.split(':', 1)[1]}"
    user = next((r for r in fusion_rules() if r.name == rule), None)
    return user.fused_id(group) if user else group[-1]  # kv_unpack: L29.attn; rope: L29.q_rope


def same_tokens(sets: set[tuple], at: tuple[tuple[str, int], ...]) -> bool:
    """Do these token sets (tuples of (request, q_start, q_end)) coincide? Symbolic sets that
    differ in form are compared at ``at`` (a point of the regime being compiled); with no
    point, only identical forms coincide."""
    if len(sets) == 1:
        return True
    if not at or not any(is_symbolic(*row) for s in sets for row in s):
        return False
    import sympy  # symbolic sets only: a numeric compile never imports sympy
    from ..symbols import length
    values = {length(k): v for k, v in at}
    return len({tuple(tuple(sympy.sympify(x).subs(values) for x in row) for row in s) for s in sets}) == 1


def _legal(g: "_Working", group: tuple[str, ...], order: dict[str, int], ctx, conditions: list) -> bool:
    sets = {g.token_sets(m) for m in group}
    if len(sets) > 1 and any(is_symbolic(*row) for s in sets for row in s):
        conditions.append(tuple(sorted(sets, key=str)))
    if not same_tokens(sets, getattr(ctx, "at", ())):
        return False  # members run over different token sets (e.g. across the replay cut)
    members, last = set(group), max(order[m] for m in group)
    stack = [e.dst for m in group for e in g.outputs(m) if e.dst not in members]
    seen = set()
    while stack:  # convexity: nothing outside the group may lead back into it
        n = stack.pop()
        if n in members:
            return False
        if n in seen or order[n] > last:
            continue
        seen.add(n)
        stack.extend(e.dst for e in g.outputs(n))
    return True


class _Working:
    """The graph while groups are fused: nodes by id, edges by their position, adjacency by id.

    Fusing a group touches only its members' edges, so the rule loop costs O(Σ group degree)
    instead of rebuilding the :class:`Graph` (O(edges)) per group; :meth:`graph` builds it once.
    Node and edge positions are those of the input graph (a module takes its earliest member's), so
    the result is what rebuilding after every group gave: same ids, node order and edge order.
    Offers the ``nodes`` / ``inputs`` / ``outputs`` reads that :mod:`v41graph.costs.traffic` uses.
    """

    def __init__(self, graph: Graph):
        self.nodes = dict(graph.nodes)
        self.rank = {nid: i for i, nid in enumerate(graph.nodes)}
        self.edges = dict(enumerate(graph.edges))
        self._index()
        self.deduplicated = False
        self._tokens: dict[int, tuple[tuple, tuple]] = {}

    def _index(self) -> None:
        self.ins: dict[str, list[int]] = {nid: [] for nid in self.nodes}
        self.outs: dict[str, list[int]] = {nid: [] for nid in self.nodes}
        for i, e in self.edges.items():
            self.ins.setdefault(e.dst, []).append(i)
            self.outs.setdefault(e.src, []).append(i)

    def token_sets(self, nid: str) -> tuple:
        """(request, q_start, q_end) of each row of ``nid``; computed once per rows tuple (a layer's
        nodes share one), which the memo keeps alive so its id stays unique."""
        rows = self.nodes[nid].rows
        hit = self._tokens.get(id(rows))
        if hit is None:
            hit = self._tokens[id(rows)] = (rows, tuple((r.request, r.q_start, r.q_end) for r in rows))
        return hit[1]

    def inputs(self, nid: str) -> tuple[Edge, ...]:
        return tuple(self.edges[i] for i in self.ins.get(nid, ()))

    def outputs(self, nid: str) -> tuple[Edge, ...]:
        return tuple(self.edges[i] for i in self.outs.get(nid, ()))

    def _deduplicate(self) -> None:
        # Rebuilding the graph kept the first edge of each (src, dst, role) everywhere; keeping
        # first-of-key commutes with renaming members, so doing it once up front is the same.
        seen: set[tuple[str, str, str]] = set()
        total = len(self.edges)
        for i, e in list(self.edges.items()):
            if (e.src, e.dst, e.role) in seen:
                del self.edges[i]
            else:
                seen.add((e.src, e.dst, e.role))
        if len(self.edges) < total:  # some edge went: rebuild the adjacency
            self._index()
        self.deduplicated = True

    def fuse(self, group: tuple[str, ...], rule: str, reread: tuple[tuple[str, int], ...], fid: str = "") -> str:
        """Replace ``group`` by one :class:`Fused` node (id ``fid`` or the rule's); returns its id."""
        members = set(group)
        head = self.nodes[group[0]]
        fid = fid or _fused_id(rule, group)
        op = Fused(rule, group, tuple(self.nodes[m].op for m in group), reread, escaping_writes(self, group),
                   tuple(self.nodes[m].count for m in group))
        fused = replace(head, id=fid, op=op, sink=any(self.nodes[m].sink for m in group))
        if not self.deduplicated:
            self._deduplicate()
        fused_in, fused_out, keys = [], [], set()
        for i in sorted({i for m in group for i in (*self.ins[m], *self.outs[m])}):
            e = self.edges.pop(i)
            src_in, dst_in = e.src in members, e.dst in members
            if src_in and dst_in:
                continue  # internal: no longer a tensor in HBM
            e2 = Edge(fid if src_in else e.src, fid if dst_in else e.dst, e.role, e.dims, e.format)
            if (e2.src, e2.dst, e2.role) in keys:  # two members read the same tensor: one edge
                (self.outs[e.src] if dst_in else self.ins[e.dst]).remove(i)
                continue
            keys.add((e2.src, e2.dst, e2.role))
            self.edges[i] = e2  # same position: the outside end's adjacency list stays as it is
            (fused_out if src_in else fused_in).append(i)
        rank = min(self.rank[m] for m in group)
        for m in members:
            del self.nodes[m], self.ins[m], self.outs[m], self.rank[m]
        self.nodes[fid], self.ins[fid], self.outs[fid], self.rank[fid] = fused, fused_in, fused_out, rank
        return fid

    def graph(self, base: Graph) -> Graph:
        nodes = sorted(self.nodes.values(), key=lambda n: self.rank[n.id])
        return base.with_nodes(nodes, (self.edges[i] for i in sorted(self.edges)))


@dataclass(frozen=True)
class Fusion:
    name: str = "fusion"

    def __call__(self, graph: Graph, ctx) -> "PassResult":
        profile = ctx.plan.fusion_for(ctx.model)
        if profile == "single-pass" and not ctx.model.lagged_mhc:
            raise PlanError(f"plan fusion: 'single-pass' mHC needs the previous block's coefficients (V4.1); "
                            f"model {ctx.model.name!r} ({ctx.model.family}) computes them in the same pass — "
                            f"use 'two-pass'")
        user = fusion_rules() if profile != "unfused" else ()  # user rules after the built-in ones
        rules = PROFILE_RULES[profile] + tuple(r.name for r in user)
        finders = {**FINDERS, **{r.name: r.find for r in user}}
        order = {n: i for i, n in enumerate(graph.topological_order())}
        counts, before, after, removed, work, mhc, conditions = {}, 0, 0, 0, _Working(graph), None, []
        for rule in rules:
            counts[rule] = 0
            for group in finders[rule](graph):
                if any(m not in work.nodes for m in group) or not _legal(work, group, order, ctx, conditions):
                    continue
                reread = ()
                if rule == "mhc" and profile == "two-pass":
                    reread = (("x", graph.nodes[group[1]].op.streams * graph.nodes[group[1]].op.dim),)
                before += unfused_elements(work, group)
                fid = work.fuse(group, rule, reread)
                order[fid] = min(order[m] for m in group)  # a module sits where its first member sat
                after += activation_elements(work, [fid])
                if rule == "mhc" and mhc is None:
                    mhc = activation_elements(work, [fid])
                counts[rule] += 1
                removed += len(group) - 1
        g = work.graph(graph) if sum(counts.values()) else graph
        report = FusionReport(profile, counts, removed, mhc, before, after, tuple(conditions))
        return PassResult(self.name, _refresh(g), removed, report)


def _refresh(g: Graph) -> Graph:
    """Keep side tables consistent: drop fused-away ids, annotate fused nodes, remap readers."""
    from .precision import node_precision
    alias = {m: nid for nid, n in g.nodes.items() if isinstance(n.op, Fused) for m in n.op.members}
    if "precision" in g.annotations:
        table = {k: v for k, v in g.annotations["precision"].items() if k in g.nodes}
        memo: dict = {}
        table.update({nid: node_precision(g, nid, memo=memo) for nid in set(alias.values())})
        g = g.annotate("precision", table)
    if "kv" in g.annotations:
        g = g.annotate("kv", {k: replace(v, readers=tuple(sorted({alias.get(r, r) for r in v.readers})))
                              for k, v in g.annotations["kv"].items()})
    return g
