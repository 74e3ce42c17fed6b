"""OP mode: each node's time from measured tables, part by part, with its tier.

A node is split into the pieces a table can time — a fused mHC module into ``post`` (expand),
``pre`` (coefficients + collapse) and its norm; a measured attention module or routed MoE whole;
a GEMM, gate or collective alone — and each piece is looked up at its *per-GPU* coordinates
(derived from the node's per-GPU cost, so they follow whatever share the mapping gives it).
A miss goes to the allowed transfers (another dtype, the nearest measured shape, a stand-in op),
then to SOL; op mode (strict) makes the first SOL piece an error instead (:mod:`.tiers`).

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.passes import compile
>>> m, plan = load_model("deepseek-v4-flash"), Plan([Request.prefill(8192)], fusion="two-pass")
>>> pricer = OpPricer(CostMode("hybrid"), load_hardware("h200_sxm"), m, plan)
>>> g = compile(m, plan, "h200_sxm").graph
>>> r = pricer.price(g, "L3.wq_b", CostContext(m, plan))  # n = 32768 lies between the grid's 16384 and 51200
>>> r.tier, r.parts[0].table, r.parts[0].coords
('interpolated', 'gemm/sglang/gemm_perf', (('gemm_dtype', 'fp8_block'), ('m', 8192), ('n', 32768), ('k', 1024)))
"""

from __future__ import annotations

from fractions import Fraction

from ...ir.graph import Graph, Node
from ...ir.shapes import Memo
from ...ir.ops import Communication, Fused, Gemm, MhcCoefficients, MhcCollapse, MhcExpand, MoeGate, RoutedExperts
from ...model.formats import BF16
from ..counts import CostContext
from ..hardware import Hardware
from ..node import Covered, member_costs
from ..value import Cost, sol_time
from . import boundaries as B
from .collectives import price_collective
from .layout import find_source, yaml_value
from .pieces import describe, gemm_shape, num, price_attention, price_gemm, price_mhc, price_moe
from .tables import Table, TableSpec, table_of
from .tiers import CostMode, MeasuredMiss, Part, Resolution, coords_text

#: table answers of pieces whose SOL depends on the key, the point and the hardware only (``tag``)
_LOOKUPS = Memo("measured-lookups", 1 << 16)


def _routed(item: Covered) -> bool:
    """A routed expert (the shared expert is a plain GEMM): the MoE module's table times it whole."""
    return isinstance(item.op, RoutedExperts) and not item.op.shared


class OpPricer:
    """Prices nodes from the measured tables of ``hardware`` (its name is the system's)."""

    def __init__(self, mode: CostMode, hardware: Hardware, model, plan):
        self.mode = mode
        self.hw = hardware
        self.model = model
        self.plan = plan
        self.source = find_source(mode.measured_root)
        self.system = hardware.name
        self._tables: dict[str, Table | None] = {}

    # ---- tables ------------------------------------------------------------------------------

    def table(self, spec: TableSpec) -> Table | None:
        if spec.name not in self._tables:
            version = spec.version
            if spec.backend == "nccl":  # the NCCL the system description names
                version = yaml_value(self.source.root, self.system, "nccl_version")
            data = self.source.table(self.system, spec.family, spec.backend, spec.file, version)
            self._tables[spec.name] = None if data is None else table_of(spec, data)
        return self._tables[spec.name]

    def identity(self) -> dict:
        """Which data answered: source, root, system and each table read with its SHA-256."""
        root = str(self.source.root)
        files = {}
        for t in self._tables.values():
            if t is not None:
                files[t.data.path.removeprefix(root).lstrip("/")] = t.data.sha256
        # only a --measured-root is a path of the user's; a packaged source is named by its kind
        shown_root = root if self.source.kind == "root" else self.source.kind
        return {"source": self.source.kind, "root": shown_root, "system": self.system,
                "files": [{"path": p, "sha256": files[p]} for p in sorted(files)]}

    def _lookup(self, what: str, spec: TableSpec, key: dict, point: dict, sol, true_sol=None,
                stand_ins=(), tag: tuple | None = None) -> Part:
        """``key`` at ``point``; else each (transfer kind, key) in ``stand_ins`` the mode allows; else SOL.

        ``tag``: what else ``sol`` and ``true_sol`` depend on (beyond the hardware and the key), when
        they depend on nothing of the node; the answer is then kept across nodes and compiles, keyed
        by every input (docs/architecture.md, "Shapes"). Without a tag it is computed every time."""
        table = self.table(spec)  # read even on a memo hit: identity() lists the tables a compile used
        if tag is None:
            return self._resolve(table, what, spec, key, point, sol, true_sol, stand_ins)
        stand_in_keys = tuple((kind, None if other is None else tuple(other.items())) for kind, other in stand_ins)
        memo = (tag, what, spec, self.mode, self.hw, self.source, tuple(key.items()), tuple(point.items()),
                stand_in_keys)
        hit = _LOOKUPS.get(memo)
        if hit is not None:
            return hit
        return _LOOKUPS.put(memo, self._resolve(table, what, spec, key, point, sol, true_sol, stand_ins))

    def _resolve(self, table, what, spec, key, point, sol, true_sol, stand_ins) -> Part:
        coords = tuple({**key, **point}.items())
        target = true_sol(point) if true_sol else None
        if table is None:
            return Part(what, "sol", 0.0, 0.0, spec.path, coords)
        hit = table.resolve(key, point, sol)
        if hit is not None:
            return Part(what, hit.tier, hit.time, hit.sol, spec.path, coords, hit.distance)
        for kind, other in stand_ins:
            if not self.mode.allows(kind) or other is None:
                continue
            hit = table.resolve(other, point, sol)
            if hit is not None:
                # the stand-in's utilisation applied to this key's own SOL (where its boundary has one)
                t = (target if target is not None else hit.sol) / hit.utilisation
                used = tuple({**other, **point}.items())
                return Part(what, f"transfer:{kind}", t, target or hit.sol, spec.path, used, hit.distance)
        return Part(what, "sol", 0.0, 0.0, spec.path, coords)

    def miss(self, r: Resolution) -> tuple[str, str] | None:
        """What op mode cannot price in ``r``: (the op, its node, op, table and coordinates), or None."""
        miss = next((p for p in r.parts if p.tier == "sol" and p.sol > 0), None)
        if miss is None:
            return None
        if miss.table:
            where = f"table {miss.table} ({self.source.kind}, {self.system}) at {coords_text(miss.coords)}"
        else:
            where = f"no measured table times {miss.what} on {self.system} (at {coords_text(miss.coords)})"
        return miss.what, f"node {r.node!r} ({miss.what}): {where}"

    def check(self, r: Resolution) -> None:
        """Op mode: raise :class:`MeasuredMiss` naming the node, the op, the table and the coordinates."""
        if (what := self.miss(r)) is not None:
            raise MeasuredMiss(f"--cost op: no measured data for {what[1]}")

    # ---- nodes -------------------------------------------------------------------------------

    def price(self, graph: Graph, node_id: str, ctx: CostContext) -> Resolution:
        node = graph.node(node_id)
        if node.op.storage:
            return Resolution(node_id, node.op.kind)
        items = member_costs(node, ctx)
        if all(c.tokens == 0 for c in items):  # no work (the head of a chunk that emits no logits)
            return Resolution(node_id, node.op.kind, (Part("+".join(c.op.kind for c in items), "sol", 0.0, 0.0),))
        parts = [self._fill_sol(self._piece(g, node, ctx, graph), g) for g in self._pieces(node, items)]
        return Resolution(node_id, node.op.kind, tuple(parts))

    def _fill_sol(self, part: Part, group: list[Covered]) -> Part:
        if part.tier != "sol":
            return part
        s = float(sol_time(sum((c.cost for c in group), Cost()), self.hw).time)
        return Part(part.what, "sol", s, s, part.table, part.coords)

    @staticmethod
    def _pieces(node: Node, items: list[Covered]) -> list[list[Covered]]:
        rule = node.op.rule if isinstance(node.op, Fused) else None
        if rule == "measured:dsv4_attention" or any(_routed(c) for c in items):
            return [items]  # one measured module: the attention sublayer, or up → SwiGLU → down
        pre = [c for c in items if isinstance(c.op, (MhcCoefficients, MhcCollapse))]
        if len(pre) == 2:
            return [pre] + [[c] for c in items if c not in pre]
        return [[c] for c in items]

    def _piece(self, group: list[Covered], node: Node, ctx: CostContext, graph: Graph) -> Part:
        what = "+".join(c.op.kind for c in group)
        item = group[0]
        first = item.op
        if isinstance(node.op, Fused) and node.op.rule == "measured:dsv4_attention":
            return price_attention(self, what, group, node, ctx, graph)
        if any(_routed(c) for c in group):
            return price_moe(self, what, group, node, ctx)
        if isinstance(first, (MhcCoefficients, MhcCollapse, MhcExpand)):
            return price_mhc(self, what, [c.op for c in group], item.tokens)
        if isinstance(first, Gemm):
            shape = gemm_shape(self, item, first.groups * first.n, first.k, node, ctx)
            return price_gemm(self, what, first.weight_format, *shape)
        if isinstance(first, RoutedExperts):  # the shared expert: plain GEMMs
            if first.part == "up":
                n, k = 2 * first.inter, first.dim
            else:
                n, k = first.dim, first.inter
            return price_gemm(self, what, first.weight_format, *gemm_shape(self, item, n, k, node, ctx))
        if isinstance(first, MoeGate):
            return price_gemm(self, what, BF16.name, *gemm_shape(self, item, first.experts, first.dim, node, ctx))
        if isinstance(first, Communication):
            return self._collective(what, item)
        return Part(what, "sol", 0.0, 0.0, None, describe(first, item.tokens))  # no table times this op kind

    def _nearest(self, spec: TableSpec, key: dict, shape: tuple[str, ...]) -> dict | None:
        """The measured key nearest ``key`` in the ``shape`` columns (the others equal), for transfer:shape."""
        table = self.table(spec)
        if table is None:
            return None
        return table.nearest(key, shape)

    def _collective(self, what, item: Covered) -> Part:
        """The collective's buffer (its per-GPU bytes on the links over the rule's wire factor) in the tables,
        whose ``message_size`` counts 2-byte elements, priced as SGLang runs it (:mod:`.collectives`)."""
        op = item.op
        wire_bytes = Fraction(item.cost.total_comm) / B.bytes_per_message_byte(op.collective, op.ranks)
        return price_collective(self, what, item, num(wire_bytes / 2))
