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
from ...ir.ops import (Communication, Fused, Gemm, MhcCoefficients, MhcCollapse, MhcExpand, MoeGate, Op,
                       RoutedExperts, SparseAttention)
from ...model.formats import BF16, FORMATS
from ...model.sharding import mapping_of, rule_for_node
from ..counts import CostContext
from ..hardware import Hardware
from ..node import Covered, member_costs
from ..rules import op_cost
from ..value import Cost, sol_time
from . import boundaries as B
from .layout import find_source, yaml_value
from .module_sol import module_signature, module_sol, module_tag
from .modules import model_key
from .collectives import price_collective
from .tables import ATTENTION, GEMM, MHC, MOE, MOE_DISTRIBUTION, Table, TableSpec, moe_distribution, table_of
from .tiers import CostMode, MeasuredMiss, Part, Resolution, coords_text

_GEMM_DTYPE = {"fp8_e4m3_b128x128": "fp8_block", "bf16": "bfloat16"}
#: where a dtype has no table, whose utilisation may stand in (transfer:dtype)
_GEMM_STAND_IN = {"e4m3": "fp8_block", "e2m1": "fp8_block", "fp32": "bfloat16", "bf16": "bfloat16"}
_MOE_DTYPE = {"fp8_e4m3_b128x128": "fp8_block", "fp4_e2m1_ue8m0_g32": "w4a8_mxfp4_mxfp8", "bf16": "bfloat16"}
_MOE_STAND_IN = ("fp8_block", "bfloat16")
_MOE_SHAPE = ("hidden_size", "inter_size", "topk", "num_experts")


def _num(x):
    x = Fraction(x)
    return int(x) if x.denominator == 1 else float(x)


def _describe(op: Op, t) -> tuple[tuple[str, object], ...]:
    """An untimed op's coordinates for messages: its token count and its scalar fields."""
    fields = getattr(op, "__dataclass_fields__", {})
    scalar = [f for f in fields if isinstance(getattr(op, f), (int, str)) and not isinstance(getattr(op, f), bool)]
    return (("tokens", _num(t)),) + tuple((f, getattr(op, f)) for f in scalar)


#: table answers of pieces whose SOL depends on the key, the point and the hardware only (``tag``)
_LOOKUPS = Memo("measured-lookups", 1 << 16)


class OpPricer:
    """Prices nodes from the measured tables of ``hardware`` (its name is the system's)."""

    def __init__(self, mode: CostMode, hardware: Hardware, model, plan):
        self.mode, self.hw, self.model, self.plan = mode, hardware, model, plan
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
        files = {t.data.path.removeprefix(root).lstrip("/"): t.data.sha256
                 for t in self._tables.values() if t is not None}
        return {"source": self.source.kind, "root": root if self.source.kind == "root" else self.source.kind,
                "system": self.system,
                "files": [{"path": p, "sha256": files[p]} for p in sorted(files)]}

    def _lookup(self, what: str, spec: TableSpec, key: dict, point: dict, sol, true_sol=None,
                stand_ins=(), tag: tuple | None = None) -> Part:
        """``key`` at ``point``; else each (transfer kind, key) in ``stand_ins`` the mode allows; else SOL.

        ``tag``: what else ``sol`` and ``true_sol`` depend on (beyond the hardware and the key), when
        they depend on nothing of the node; the answer is then kept across nodes and compiles, keyed
        by every input (docs/architecture.md, "Shapes"). Without a tag it is computed every time."""
        table = self.table(spec)  # read even on a memo hit: identity() lists the tables a compile used
        memo = None if tag is None else (
            tag, what, spec, self.mode, self.hw, self.source, tuple(key.items()), tuple(point.items()),
            tuple((kind, None if other is None else tuple(other.items())) for kind, other in stand_ins))
        hit = None if memo is None else _LOOKUPS.get(memo)
        if hit is not None:
            return hit
        part = self._resolve(table, what, spec, key, point, sol, true_sol, stand_ins)
        return part if memo is None else _LOOKUPS.put(memo, part)

    def _resolve(self, table, what, spec, key, point, sol, true_sol, stand_ins) -> Part:
        coords = tuple({**key, **point}.items())
        target = true_sol(point) if true_sol else None
        if table is not None:
            hit = table.resolve(key, point, sol)
            if hit is not None:
                return Part(what, hit.tier, hit.time, hit.sol, spec.path, coords, hit.distance)
            for kind, other in stand_ins:
                if not self.mode.allows(kind) or other is None:
                    continue
                hit = table.resolve(other, point, sol)
                if hit is not None:
                    t = (target if target is not None else hit.sol) / hit.utilisation
                    used = tuple({**other, **point}.items())
                    return Part(what, f"transfer:{kind}", t, target or hit.sol, spec.path, used, hit.distance)
        return Part(what, "sol", 0.0, 0.0, spec.path, coords)

    def miss(self, r: Resolution) -> tuple[str, str] | None:
        """What op mode cannot price in ``r``: (the op, its node, op, table and coordinates), or None."""
        miss = next((p for p in r.parts if p.tier == "sol" and p.sol > 0), None)
        if miss is None:
            return None
        where = (f"table {miss.table} ({self.source.kind}, {self.system}) at {coords_text(miss.coords)}" if miss.table
                 else f"no measured table times {miss.what} on {self.system} (at {coords_text(miss.coords)})")
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
        if rule == "measured:dsv4_attention" or any(isinstance(c.op, RoutedExperts) and not c.op.shared
                                                    for c in items):
            return [items]  # one measured module: the attention sublayer, or up → SwiGLU → down
        pre = [c for c in items if isinstance(c.op, (MhcCoefficients, MhcCollapse))]
        if len(pre) == 2:
            return [pre] + [[c] for c in items if c not in pre]
        return [[c] for c in items]

    def _piece(self, group: list[Covered], node: Node, ctx: CostContext, graph: Graph) -> Part:
        what = "+".join(c.op.kind for c in group)
        first, t = group[0].op, group[0].tokens
        if isinstance(node.op, Fused) and node.op.rule == "measured:dsv4_attention":
            return self._attention(what, group, node, ctx, graph)
        if any(isinstance(c.op, RoutedExperts) and not c.op.shared for c in group):
            return self._moe(what, group, node, ctx)
        if isinstance(first, (MhcCoefficients, MhcCollapse, MhcExpand)):
            return self._mhc(what, [c.op for c in group], t)
        if isinstance(first, Gemm):
            return self._gemm(what, first.weight_format, *self._shape(group[0], first.groups * first.n, first.k,
                                                                      node, ctx))
        if isinstance(first, RoutedExperts):  # the shared expert: plain GEMMs
            n, k = (2 * first.inter, first.dim) if first.part == "up" else (first.dim, first.inter)
            return self._gemm(what, first.weight_format, *self._shape(group[0], n, k, node, ctx))
        if isinstance(first, MoeGate):
            return self._gemm(what, BF16.name, *self._shape(group[0], first.experts, first.dim, node, ctx))
        if isinstance(first, Communication):
            return self._collective(what, group[0])
        return Part(what, "sol", 0.0, 0.0, None, _describe(first, t))  # no table times this op kind

    def _shape(self, item: Covered, n, k, node: Node, ctx: CostContext) -> tuple:
        """Per-GPU (m, n, k) of a GEMM: the sharding table's token split on m, its weight split on n
        (column, vocab) or k (row). Should the split not account for the per-GPU flops, the rest
        narrows n, so the lookup always times the work the node is charged."""
        rule, mp = rule_for_node(item.member, item.op), mapping_of(self.plan)
        m, w = Fraction(item.tokens) / mp.token_divisor(rule), mp.weight_divisor(rule)
        n1, k1 = (Fraction(n, w), k) if rule.split in ("column", "vocab") else (n, Fraction(k, w)) \
            if rule.split == "row" else (n, k)
        full = op_cost(item.op, node, ctx, item.tokens).total_flops
        rest = (Fraction(item.cost.total_flops) / full) / ((m * n1 * k1) / (item.tokens * n * k)) if full else 1
        return m, n1 * rest, k1

    def _gemm(self, what, fmt, m, n, k) -> Part:
        point = {"m": _num(m), "n": _num(n), "k": _num(k)}
        dtype = _GEMM_DTYPE.get(fmt)
        stand_in = _GEMM_STAND_IN.get(FORMATS[fmt].element)
        sol = lambda c: B.gemm_sol(c, self.hw)  # noqa: E731
        true = lambda p: B.gemm_sol({**p, "gemm_dtype": None}, self.hw, fmt)  # noqa: E731
        return self._lookup(what, GEMM, {"gemm_dtype": dtype or fmt}, point, sol, true,
                            (("dtype", {"gemm_dtype": stand_in}),), tag=("gemm", fmt))

    def _moe(self, what, group: list[Covered], node, ctx) -> Part:
        up = next(c for c in group if isinstance(c.op, RoutedExperts))
        t = up.tokens
        split = Fraction(op_cost(up.op, node, ctx, t).total_flops) / up.cost.total_flops
        up = up.op
        ep = self.plan.ep
        key = {"moe_dtype": _MOE_DTYPE.get(up.weight_format, up.weight_format), "hidden_size": up.dim,
               "inter_size": up.inter, "topk": up.top_k, "num_experts": up.experts,
               "moe_tp_size": _num(split / ep), "moe_ep_size": ep, "distribution": moe_distribution(self.plan.routing)}
        sol = lambda c: B.moe_sol(c, self.hw)  # noqa: E731
        true = lambda p: B.moe_sol({**key, **p}, self.hw, up.weight_format)  # noqa: E731
        stand = [("op", {**key, "distribution": MOE_DISTRIBUTION})] if key["distribution"] != MOE_DISTRIBUTION else []
        stand += [("dtype", {**key, "moe_dtype": d}) for d in _MOE_STAND_IN if d != key["moe_dtype"]]
        stand += [("shape", self._nearest(MOE, {**key, "moe_dtype": d}, _MOE_SHAPE))
                  for d in (key["moe_dtype"], *_MOE_STAND_IN)]
        return self._lookup(what, MOE, key, {"num_tokens": _num(t)}, sol, true, stand, tag=("moe", up.weight_format))

    def _nearest(self, spec: TableSpec, key: dict, shape: tuple[str, ...]) -> dict | None:
        """The measured key nearest ``key`` in the ``shape`` columns (the others equal), for transfer:shape."""
        table = self.table(spec)
        return None if table is None else table.nearest(key, shape)

    def _mhc(self, what, group, t) -> Part:
        op = group[0]
        name = "post" if isinstance(op, MhcExpand) else "pre"
        if name == "pre" and len(group) == 1 and not isinstance(op, MhcCoefficients):
            return Part(what, "sol", 0.0, 0.0)  # a lone collapse: no table times it alone
        m = self.model
        key = {"op_name": name, "hidden_size": op.dim, "hc_mult": op.streams, "sinkhorn_iters": m.hc_sinkhorn_iters}
        sol = lambda c: B.mhc_sol(c, self.hw)  # noqa: E731
        # V4.1's lagged pre-mix and a lone coefficient node are not the measured V4 "pre" kernel
        v4_pre = name == "post" or (len(group) == 2 and not m.lagged_mhc)
        true = lambda p: B.mhc_sol({**key, **p}, self.hw)  # noqa: E731
        shape = (("shape", self._nearest(MHC, key, ("hidden_size",))),)
        if v4_pre:
            return self._lookup(what, MHC, key, {"num_tokens": _num(t)}, sol, true, shape,
                                tag=("mhc", tuple(key.items())))
        return self._lookup(what, MHC, {**key, "op_name": f"{name}:{self.model.family}"}, {"num_tokens": _num(t)}, sol,
                            true, (("op", key),) + shape, tag=("mhc", tuple(key.items())))

    def _collective(self, what, item: Covered) -> Part:
        """The collective's buffer (its per-GPU bytes on the links over the rule's wire factor) in the tables,
        whose ``message_size`` counts 2-byte elements, priced as SGLang runs it (:mod:`.collectives`)."""
        op = item.op
        size = _num(Fraction(item.cost.total_comm) / B.bytes_per_message_byte(op.collective, op.ranks) / 2)
        return price_collective(self, what, item, size)

    def _attention(self, what, group, node: Node, ctx: CostContext, graph: Graph) -> Part:
        attn = next(c.op for c in group if isinstance(c.op, SparseAttention))
        rows = node.rows
        shape = {(r.q_end - r.q_start, r.q_start) for r in rows}
        batch = sum(r.copies for r in rows)
        (isl, step), = shape if len(shape) == 1 else ((None, None),)
        decode = isl == 1 and all(self.plan.requests[r.request].kind == "decode" for r in rows)
        tp = self.plan.tp
        key = {"model": model_key(self.model), "gemm_type": "fp8_block", "num_heads": self.model.num_heads // tp,
               "tp_size": tp, "compress_ratio": attn.ratio}
        phase = "generation" if decode else "context"
        spec = ATTENTION[(phase, "csa" if attn.ratio == 4 else "hca")]
        point = {"batch_size": batch, "isl": isl, "step": step}
        if isl is None:
            return Part(what, "sol", 0.0, 0.0, spec.path, (("rows", "mixed lengths"),))
        # the module's SOL reads its signature, not its layer: one answer for the layers of one kind
        tag = module_tag(node, module_signature(graph, node, ctx.model), ctx, self.hw)
        sol = lambda c: module_sol(node, c["batch_size"], c["isl"], c["step"], ctx, self.hw, tag)  # noqa: E731
        memo = None if tag is None else ("attention", *tag)
        if attn.ratio == 0:  # SWA-only layer: the HCA module stands in (as AIConfigurator does)
            return self._lookup(what, spec, key, point, sol, sol, (("op", {**key, "compress_ratio": 128}),), memo)
        return self._lookup(what, spec, key, point, sol, tag=memo)
