"""Lowering state shared by the block builders: the graph builder, the model and plan, the rows
of each layer and the current residual producer (docs/architecture.md, "ir")."""

from __future__ import annotations

from dataclasses import dataclass

from ...model.config import LayerSpec, ModelSpec
from ...model.formats import BF16, FP8_E4M3_B32, FP8_E4M3_B128
from ...model.sharding import Mapping, mapping_of
from ..graph import GraphBuilder, Node
from ..ledger import Row
from ..plan import Plan

ACT = BF16.name


@dataclass
class Ctx:
    """Lowering state: the builder, the model and plan, and the current residual producer."""

    b: GraphBuilder
    model: ModelSpec
    plan: Plan
    rows: dict[int, tuple[Row, ...]]
    residual: str = ""
    pre_mix: str | None = None  # producer of the pre-mix the next collapse uses (V4.1)
    global_rows: dict[int, tuple[Row, ...]] | None = None  # every DP rank's rows (``rows``: rank 0's)

    @property
    def mapping(self) -> Mapping:
        return mapping_of(self.plan)

    def all_rows(self, layer: LayerSpec) -> tuple[Row, ...]:
        """The rows of every DP rank (what the routed experts see)."""
        return (self.global_rows or self.rows).get(layer.index, ())

    def moe_rows(self, layer: LayerSpec) -> tuple[Row, ...]:
        """The MoE's token side: this rank's tokens with EP (each GPU dispatches its own),
        every rank's tokens without (SGLang gathers them before a TP MoE)."""
        return self.rows.get(layer.index, ()) if self.mapping.ep > 1 else self.all_rows(layer)

    @property
    def weight_format(self) -> str:
        return (FP8_E4M3_B32 if self.model.weight_block == 32 else FP8_E4M3_B128).name

    @property
    def streams(self) -> int:
        return self.model.hc_mult * self.model.hidden_size

    def node(self, nid: str, op, layer: LayerSpec | None, *, rows=None, count="q", stage=None, sink=False) -> str:
        idx = layer.index if layer is not None else None
        return self.b.add(Node(nid, op, idx, stage or (layer.stage if layer else "head"),
                               layer.path if layer else None,
                               rows if rows is not None else self.rows.get(idx, ()), count, sink))

    def chain(self, prefix: str, layer: LayerSpec | None, steps, src: str, dims: int, fmt: str = ACT, **kw) -> str:
        """Add ``steps`` = [(name, op, out_dims, out_format)] in series from ``src``."""
        for name, op, out_dims, out_fmt in steps:
            nid = self.node(f"{prefix}{name}", op, layer, **kw)
            self.b.edge(src, nid, "x", dims, fmt)
            src, dims, fmt = nid, out_dims, out_fmt
        return src
