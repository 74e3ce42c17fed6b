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

from dataclasses import dataclass, field, replace
from functools import cached_property

from ..algebra import is_symbolic
from ..costs.traffic import activation_elements, unfused_elements
from ..errors import PlanError
from ..ir.graph import Edge, Graph
from ..ir.ops import Fused
from ..ir.shapes import SHAPES_KEPT, derived, numbered, rows_slots
from ..structural import Keyed, memo
from .base import PassResult, picker
from .fusion_groups import FINDERS
from .fusion_rules import fusion_rules
from .fusion_working import _legal, _Working, same_tokens, token_set

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
    # [0, N)): decided at ``PassContext.at`` if given, else kept apart; closed forms split there
    conditions: tuple[tuple[tuple, ...], ...] = ()


@dataclass(frozen=True)
class _Shell:
    """A module of the output before its rows are known: it carries those of input node ``base``
    (its first member's: the fused node keeps that member's layer, stage, path, rows and count)."""

    id: str
    op: Fused
    base: str
    sink: bool


@dataclass(frozen=True)
class FusionPlan:
    """What fusion does to a graph of one shape, and the row facts it depends on.

    ``guards``: for each group whose legality was decided, the input nodes whose token sets were
    compared and whether they were one — a later graph of the shape gets this plan when its rows
    give the same answers. ``layout``: the output's nodes in order, each an input id kept as it is
    or a module :class:`_Shell`; None when nothing fused.
    """

    guards: tuple[tuple[tuple[str, ...], bool], ...]
    layout: tuple[str | _Shell, ...] | None
    edges: tuple[Edge, ...]
    alias: dict[str, str]  # member → module
    report: FusionReport
    precision: object = None  # the refreshed precision table (structural), once known
    slots: tuple[int, ...] | None = None  # the output's rows slots (``Graph.slots``); None when nothing fused
    readers: dict = field(default_factory=dict, compare=False)  # storage readers before → after fusing

    @cached_property
    def ids(self) -> tuple[str, ...] | None:
        """The output's node ids in order (None when nothing fused)."""
        return None if self.layout is None else tuple(x if type(x) is str else x.id for x in self.layout)

    @cached_property
    def _assembly(self):
        """How :func:`_apply` builds the output: the kept nodes' ids (one C-level fetch), the
        modules, and where each output node sits in (kept nodes + modules)."""
        kept = [x for x in self.layout if type(x) is str]
        modules = [x for x in self.layout if type(x) is not str]
        at_kept, at_module, place = 0, len(kept), []
        for x in self.layout:
            if type(x) is str:
                place.append(at_kept)
                at_kept += 1
            else:
                place.append(at_module)
                at_module += 1
        return picker(kept), tuple(modules), picker(place)

    def holds(self, graph: Graph, at) -> bool:
        memo: dict[int, tuple] = {}
        for refs, one in self.guards:
            if same_tokens({token_set(graph.nodes[r].rows, memo) for r in refs}, at) != one:
                return False
        return True


def _plan(graph: Graph, at, profile: str, rules: tuple[str, ...], finders) -> tuple[FusionPlan, list]:
    """Run the rules on ``graph`` (token sets compared at ``at``): the plan, and the symbolic token-set
    conditions met."""
    order = {n: i for i, n in enumerate(graph.topological_order())}
    counts, before, after, removed, work, mhc, conditions, guards = {}, 0, 0, 0, _Working(graph), None, [], []
    for rule in rules:
        counts[rule] = 0
        for group in finders[rule](graph):
            if any(m not in work.nodes for m in group) or not _legal(work, group, order, at, conditions, guards):
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
    report = FusionReport(profile, counts, removed, mhc, before, after, tuple(conditions))
    return settled(work, graph, guards, report, bool(removed or any(counts.values()))), conditions


def settled(work: _Working, graph: Graph, guards: list, report, fused: bool) -> FusionPlan:
    """The plan (no precision table yet) that a run of rules over ``graph`` left in ``work``
    (``fused``: whether any group fused; the measured-modules pass settles its runs here too)."""
    # Members carrying one rows tuple run over one token set in every graph of the shape (which
    # nodes share a tuple is part of the shape): only groups across tuples depend on the rows.
    slot = dict(zip(graph.nodes, rows_slots(graph.skeleton)))
    guards = tuple(g for g in guards if len({slot[r] for r in g[0]}) > 1)
    if not fused:
        return FusionPlan(guards, None, graph.edges, {}, report)
    layout = tuple(n.id if graph.nodes.get(n.id) is n else _Shell(n.id, n.op, work.base[n.id], n.sink)
                   for n in sorted(work.nodes.values(), key=lambda n: work.rank[n.id]))
    # a kept node carries its own tuple, a module its base member's (``_apply``)
    slots = numbered(slot[x if type(x) is str else x.base] for x in layout)
    if not work.deduplicated:
        work._deduplicate()
    edges = tuple(work.edges[i] for i in sorted(work.edges))
    alias = {m: n.id for n in work.nodes.values() if isinstance(n.op, Fused) for m in n.op.members}
    return FusionPlan(guards, layout, edges, alias, report, slots=slots)


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
        at = getattr(ctx, "at", ())
        # user finders may read anything: only the built-in rules are planned once per shape; and a
        # symbolic plan's token sets are decided per regime (analysis.symbolic.regimes), never looked up
        numeric = not any(is_symbolic(r.cached, r.new, r.copies) for r in ctx.plan.requests)
        if user or not numeric:
            key = None
            plan, _ = _plan(graph, at, profile, rules, {**FINDERS, **{r.name: r.find for r in user}})
        else:
            skeleton = graph.skeleton
            plan, key = _planned(skeleton, profile, at), _planned.key(skeleton, profile, at)
        shape = derived(key, tuple(one for _, one in plan.guards))
        g = _apply(plan, graph, shape)
        return PassResult(self.name, _refresh(g, plan.alias, plan.precision, shape, plan.readers),
                          plan.report.nodes_removed, plan.report)


def _holds(plan: FusionPlan, skeleton: Keyed, *inputs) -> bool:
    """Whether a plan kept for ``skeleton``'s shape holds for its rows (the last of ``inputs``: the point)."""
    return plan.holds(skeleton.value, inputs[-1])


def plan_answer(plan: FusionPlan) -> tuple:
    """What a fusion plan decides (not the first output and readers it keeps for the next graph)."""
    return plan.guards, plan.layout, plan.edges, plan.alias, plan.report, plan.precision, plan.slots


#: plans per (graph shape, profile, point): a few each (one per regime of the replay cut)
@memo("fusion plans", SHAPES_KEPT, view=plan_answer, holds=_holds)
def _planned(skeleton: Keyed, profile: str, at) -> FusionPlan:
    """The built-in rules' plan on the graph, with its precision table (a numeric plan's rows meet no
    symbolic condition: nothing is decided per regime)."""
    graph = skeleton.value
    plan, _ = _plan(graph, at, profile, PROFILE_RULES[profile], FINDERS)
    return replace(plan, precision=_precision(plan, graph))


def _apply(plan: FusionPlan, graph: Graph, shape) -> Graph:
    if plan.layout is None:
        return graph
    have = graph.nodes
    fetch, modules, order = plan._assembly
    made = list(fetch(have))  # the kept nodes as they are, then the modules
    for x in modules:  # each its base member's node with the module's id, op and sink
        made.append(have[x.base].with_fields(id=x.id, op=x.op, sink=x.sink))
    return graph.with_nodes(order(made), plan.edges, shape=shape, ids=plan.ids, slots=plan.slots)


def _precision(plan: FusionPlan, graph: Graph):
    """The precision table after fusing (records depend on payloads and edges, never on rows)."""
    if "precision" not in graph.annotations:
        return None
    return _refresh(_apply(plan, graph, None), plan.alias, None, None).annotations["precision"]


def _refresh(g: Graph, alias: dict[str, str] | None = None, precision=None, shape=None,
             readers: dict | None = None) -> Graph:
    """Keep side tables consistent: drop fused-away ids, annotate fused nodes, remap readers."""
    from .precision import node_precision
    if alias is None:
        alias = {m: nid for nid, n in g.nodes.items() if isinstance(n.op, Fused) for m in n.op.members}
    if "precision" in g.annotations:
        if precision is None:
            table = {k: v for k, v in g.annotations["precision"].items() if k in g.nodes}
            memo: dict = {}
            table.update({nid: node_precision(g, nid, memo=memo) for nid in set(alias.values())})
            precision = table
        g = g.annotate("precision", precision, shape=shape)
    if "kv" in g.annotations:
        table = {}
        for k, v in g.annotations["kv"].items():
            after = _readers(v.readers, alias, readers)
            table[k] = v if after == v.readers else type(v)(v.owner, v.kind, v.bytes, after)  # kv_dedup's record
        g = g.annotate("kv", table, shape=shape)
    return g


def _readers(readers: tuple[str, ...], alias: dict[str, str], memo: dict | None) -> tuple[str, ...]:
    """A storage's readers after fusing: each module once, sorted (``memo``: a plan's, whose
    answers repeat from compile to compile of its shape)."""
    out = None if memo is None else memo.get(readers)
    if out is None:
        out = tuple(sorted({alias.get(r, r) for r in readers}))
        if memo is not None:
            memo[readers] = out
    return out
