"""Lowering state shared by the block builders: the graph builder, the model and plan, the rows
of each layer and the current residual producer (docs/architecture.md, "ir")."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...model.config import LayerSpec, ModelSpec
from ...model.formats import BF16, FP8_E4M3_B32, FP8_E4M3_B128
from ...model.sharding import Mapping, mapping_of
from ..dp import rank_copies, rank_rows
from ..graph import GraphBuilder, Node
from ..ledger import Row, base_rows, draft_rows, image_tokens
from ..rows import tabled
from ..plan import Plan

ACT = BF16.name


#: a named tuple of ledger rows that lowering hands to nodes (see :func:`row_sources`)
SourceKey = tuple
#: the name under which a node carries no rows (storage, or an empty source)
NO_ROWS: SourceKey = ("none",)


def row_sources(model: ModelSpec, plan: Plan) -> dict[SourceKey, tuple[Row, ...]]:
    """Every tuple of rows a node may carry, by name — the only way lengths enter lowering.

    ``("all", i)``: layer (or draft block) ``i``'s rows of every DP rank; ``("rank", i)``: DP
    rank 0's (the same tuple when dp = 1); ``("draft", 0)``: rank 0's rows of the draft stage's
    projection and heads; ``("vision",)``: one row per request with images. A graph lowered from
    these is fixed by the plan's policies and by which of these tuples are one (:func:`coinciding`),
    so a later plan of that shape reuses it with its own rows (:mod:`.template`).
    """
    out: dict[SourceKey, tuple[Row, ...]] = {}
    if tabled(model, plan):  # many requests: one table per layer (ir/ledger_columns.py)
        from ..ledger_columns import base_tables, rank_table  # numpy: only a plan of many requests needs it
        share = rank_copies(plan) if plan.dp > 1 else None
        for k, everyone in base_tables(model, plan).items():
            out[("all", k)] = everyone
            out[("rank", k)] = everyone if share is None else rank_table(plan, everyone, share)
    else:
        rows: dict[int, list[Row]] = {}
        for r in base_rows(model, plan):
            rows.setdefault(r.layer, []).append(r)
        for k, v in rows.items():
            out[("all", k)] = everyone = tuple(v)
            out[("rank", k)] = rank_rows(plan, everyone)
    if plan.dspark == "on":
        out[("draft", 0)] = rank_rows(plan, draft_rows(model, plan, 0))
        for blk in model.draft_blocks:
            out[("all", blk.index)] = everyone = draft_rows(model, plan, blk.block)
            out[("rank", blk.index)] = rank_rows(plan, everyone)
    if any(r.images for r in plan.requests) and model.vision is not None:
        out[("vision",)] = tuple(Row(i, -1, 0, image_tokens(model, r)[0], 0, 0, 0, 0)
                                 for i, r in enumerate(plan.requests) if r.images)
    return out


def coinciding(plan: Plan, sources: dict[SourceKey, tuple[Row, ...]]) -> tuple[tuple[SourceKey, ...], ...]:
    """The row sources that are one tuple, as groups of names in :func:`row_sources`' order: part of a
    shape, since which nodes share rows is (``shapes.rows_slots``).

    Two coincidences, both by construction above: every empty source is the one empty tuple, which is
    also what a node carrying no rows holds (the group led by :data:`NO_ROWS`); with dp = 1 rank 0's
    rows of a layer are every rank's (``dp.rank_rows`` returns its argument; the tables share it), so
    ``("all", i)`` and ``("rank", i)`` are one. Every other source is a tuple or table made afresh (rank
    0 always holds rows of every layer: a plan's first-dealt sequence is its), so no other two coincide.

    >>> from v41graph import load_model
    >>> from v41graph.ir.plan import Plan, Request
    >>> m = load_model()
    >>> one = Plan([Request.prefill(100), Request.decode(900)], dspark="on")
    >>> groups = coinciding(one, row_sources(m, one))  # 40 layers and 3 draft blocks
    >>> len(groups), groups[0], groups[-1]
    (43, (('all', 0), ('rank', 0)), (('all', 42), ('rank', 42)))
    >>> two = one.with_policies(dp=2)  # rank 0 is dealt the prefill: it drafts nothing
    >>> coinciding(two, row_sources(m, two))
    ((('none',), ('draft', 0), ('rank', 40), ('rank', 41), ('rank', 42)),)
    """
    empty = tuple(k for k, v in sources.items() if not len(v))
    groups = [(NO_ROWS, *empty)] if empty else []
    if plan.dp == 1:
        groups += [(("all", k[1]), k) for k, v in sources.items() if k[0] == "rank" and len(v)]
    return tuple(groups)


@dataclass
class LowerContext:
    """Lowering state: the builder, the model and plan, the row sources, and the current residual producer.

    A builder hands a node a source by name (:meth:`node`'s ``rows``), so which source each node carries is
    recorded as it is added (``carried``), the name a template fills it from (:mod:`.template`)."""

    b: GraphBuilder
    model: ModelSpec
    plan: Plan
    sources: dict[SourceKey, tuple[Row, ...]]  # row_sources()
    named: dict[SourceKey, SourceKey]  # each source's name as carried: its coinciding group's first (NO_ROWS: none)
    residual: str = ""
    pre_mix: str | None = None  # producer of the pre-mix the next collapse uses (V4.1)
    carried: list[SourceKey] = field(default_factory=list)  # per node added, in order: the source it carries

    @staticmethod
    def of(model: ModelSpec, plan: Plan, sources: dict[SourceKey, tuple[Row, ...]]) -> "LowerContext":
        """Lowering state over :func:`row_sources`."""
        named = {k: k for k in sources}
        named.update((k, group[0]) for group in coinciding(plan, sources) for k in group)
        return LowerContext(GraphBuilder(model.name), model, plan, sources, named)

    @property
    def mapping(self) -> Mapping:
        return mapping_of(self.plan)

    @staticmethod
    def all_rows(layer: LayerSpec) -> SourceKey:
        """The rows of every DP rank (what the routed experts see)."""
        return ("all", layer.index)

    def moe_rows(self, layer: LayerSpec) -> SourceKey:
        """The MoE's token side: this rank's tokens with EP (each GPU dispatches its own),
        every rank's tokens without (SGLang gathers them before a TP MoE)."""
        return ("rank", layer.index) if self.mapping.dispatches else ("all", layer.index)

    @property
    def weight_format(self) -> str:
        return (FP8_E4M3_B32 if self.model.weight_block == 32 else FP8_E4M3_B128).name

    @property
    def streams(self) -> int:
        return self.model.hc_mult * self.model.hidden_size

    def node(self, nid: str, op, layer: LayerSpec | None, *, rows: SourceKey | None = None, count="q", stage=None,
             sink=False) -> str:
        """Add a node carrying the source named ``rows`` (default: rank 0's rows of ``layer``; a name with no
        rows, or an empty source, carries the empty tuple)."""
        idx = layer.index if layer is not None else None
        name = self.named.get(("rank", idx) if rows is None else rows, NO_ROWS)
        self.carried.append(name)
        return self.b.add(Node(nid, op, idx, stage or (layer.stage if layer else "head"),
                               layer.path if layer else None, () if name == NO_ROWS else self.sources[name],
                               count, sink))

    def chain(self, prefix: str, layer: LayerSpec | None, steps, src: str, dims: int, fmt: str = ACT, **kw) -> str:
        """Add ``steps`` = [(name, op, out_dims, out_format)] in series from ``src``."""
        for name, op, out_dims, out_fmt in steps:
            nid = self.node(f"{prefix}{name}", op, layer, **kw)
            self.b.edge(src, nid, "x", dims, fmt)
            src, dims, fmt = nid, out_dims, out_fmt
        return src
