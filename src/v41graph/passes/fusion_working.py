"""The fusion pass's working state: the graph while groups are fused, the legality of a group
(one token set, convex) and the ids modules keep. Shared by the fusion pass, the measured-module
pass and :func:`v41graph.passes.registry.fuse_nodes`, so a group is legal by one rule everywhere."""

from __future__ import annotations

from array import array
from dataclasses import replace


from ..algebra import is_symbolic
from ..costs.traffic import escaping_writes
from ..ir.graph import Edge, Graph
from ..ir.ops import Fused
from ..ir.rows import token_key
from .fusion_rules import fusion_rules


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
    if not at or not any(_symbolic(s) for s in sets):
        return False
    import sympy  # symbolic sets only: a numeric compile never imports sympy
    from ..symbols import length
    values = {length(k): v for k, v in at}
    return len({tuple(tuple(sympy.sympify(x).subs(values) for x in row) for row in _spans(s)) for s in sets}) == 1


def _symbolic(s) -> bool:
    """A token set (``ir.rows.token_key``: bytes for numeric rows) with a symbolic position."""
    return isinstance(s, tuple) and any(is_symbolic(*row) for row in s)


def _spans(s) -> tuple:
    """A token set as (request, q_start, q_end) tuples, whichever form ``token_key`` gave it."""
    if isinstance(s, bytes):
        values = array("q")
        values.frombytes(s[:-1])
        n = len(values) // 3
        return tuple(zip(values[:n], values[n:2 * n], values[2 * n:]))
    return s


def token_set(rows, memo: dict[int, tuple]) -> tuple:
    """``ir.rows.token_key(rows)``, once per rows tuple (``memo`` holds the tuple: its id stays unique)."""
    hit = memo.get(id(rows))
    if hit is None:
        hit = memo[id(rows)] = (rows, token_key(rows))
    return hit[1]


def _legal(g: "_Working", group: tuple[str, ...], order: dict[str, int], at, conditions: list,
           guards: list | None = None) -> bool:
    """One token set (compared at ``at``: a closed form's point, or ``()``) and convex. ``guards`` collects
    (the input nodes whose rows were compared, whether they ran over one token set): the only part of the
    answer that depends on rows."""
    sets = {g.token_sets(m) for m in group}
    if len(sets) > 1 and any(_symbolic(s) for s in sets):
        conditions.append(tuple(sorted((_spans(s) for s in sets), key=str)))
    one = same_tokens(sets, at)
    if guards is not None:
        guards.append((tuple(g.base.get(m, m) for m in group), one))
    if not one:
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
        self.base: dict[str, str] = {}  # module id → the input node whose rows (and layer…) it carries

    def _index(self) -> None:
        self.ins: dict[str, list[int]] = {nid: [] for nid in self.nodes}
        self.outs: dict[str, list[int]] = {nid: [] for nid in self.nodes}
        for i, e in self.edges.items():
            self.ins.setdefault(e.dst, []).append(i)
            self.outs.setdefault(e.src, []).append(i)

    def token_sets(self, nid: str) -> tuple:
        """(request, q_start, q_end) of each row of ``nid`` (``ir.rows.token_key``); computed once
        per rows tuple (a layer's nodes share one), which the memo keeps alive so its id stays unique."""
        return token_set(self.nodes[nid].rows, self._tokens)

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
        self.base[fid] = self.base.get(group[0], group[0])
        for m in members:
            del self.nodes[m], self.ins[m], self.outs[m], self.rank[m]
        self.nodes[fid], self.ins[fid], self.outs[fid], self.rank[fid] = fused, fused_in, fused_out, rank
        return fid

    def graph(self, base: Graph) -> Graph:
        nodes = sorted(self.nodes.values(), key=lambda n: self.rank[n.id])
        return base.with_nodes(nodes, (self.edges[i] for i in sorted(self.edges)))
