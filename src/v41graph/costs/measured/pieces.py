"""How each kind of piece an :class:`~.op_cost.OpPricer` splits a node into is looked up in the tables:
a GEMM (and the MoE gate, and a shared expert) at its per-GPU (m, n, k), a routed MoE module, an mHC
site, the measured V4 attention module. Each names its key (the exact columns), its point (the curve
axes), its SOL boundaries and the transfers it may take when the key is not measured; the pricer's
``_lookup`` does the rest (:mod:`.collectives` does the same for collectives).

>>> num(Fraction(6, 2)), num(Fraction(1, 4))
(3, 0.25)
"""

from __future__ import annotations

from fractions import Fraction

from ...ir.graph import Graph, Node
from ...ir.ops import MhcCoefficients, MhcExpand, Op, RoutedExperts, SparseAttention
from ...model.formats import FORMATS
from ...model.sharding import mapping_of, rule_for_node
from ..counts import CostContext
from ..node import Covered
from ..rules import op_cost
from . import boundaries as B
from .module_sol import module_signature, module_sol, module_tag
from .modules import model_key
from .tables import ATTENTION, GEMM, MHC, MOE, MOE_DISTRIBUTION, moe_distribution
from .tiers import Part

#: our weight formats under the names the GEMM table keys its dtype by
_GEMM_DTYPE = {"fp8_e4m3_b128x128": "fp8_block", "bf16": "bfloat16"}
#: where a dtype has no table, whose utilisation may stand in (transfer:dtype)
_GEMM_STAND_IN = {"e4m3": "fp8_block", "e2m1": "fp8_block", "fp32": "bfloat16", "bf16": "bfloat16"}
#: our routed-expert formats under the names the MoE table keys its dtype by
_MOE_DTYPE = {"fp8_e4m3_b128x128": "fp8_block", "fp4_e2m1_ue8m0_g32": "w4a8_mxfp4_mxfp8", "bf16": "bfloat16"}
_MOE_STAND_IN = ("fp8_block", "bfloat16")
#: the MoE key columns a transfer:shape may move to the nearest measured value
_MOE_SHAPE = ("hidden_size", "inter_size", "topk", "num_experts")


def num(x):
    """A count as the tables write it: an int where whole, else a float."""
    x = Fraction(x)
    if x.denominator == 1:
        return int(x)
    return float(x)


def describe(op: Op, t) -> tuple[tuple[str, object], ...]:
    """An untimed op's coordinates for messages: its token count and its scalar fields."""
    fields = getattr(op, "__dataclass_fields__", {})
    scalar = []
    for f in fields:
        value = getattr(op, f)
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            scalar.append(f)
    return (("tokens", num(t)),) + tuple((f, getattr(op, f)) for f in scalar)


def gemm_shape(pricer, item: Covered, n, k, node: Node, ctx: CostContext) -> tuple:
    """Per-GPU (m, n, k) of a GEMM: the sharding table's token split on m, its weight split on n
    (column, vocab) or k (row). Should the split not account for the per-GPU flops, the rest
    narrows n, so the lookup always times the work the node is charged."""
    rule = rule_for_node(item.member, item.op)
    mp = mapping_of(pricer.plan)
    m = Fraction(item.tokens) / mp.token_divisor(rule)
    w = mp.weight_divisor(rule)
    if rule.split in ("column", "vocab"):
        n1, k1 = Fraction(n, w), k
    elif rule.split == "row":
        n1, k1 = n, Fraction(k, w)
    else:
        n1, k1 = n, k
    full = op_cost(item.op, node, ctx, item.tokens).total_flops
    rest = 1
    if full:
        per_gpu_share = Fraction(item.cost.total_flops) / full
        split_share = (m * n1 * k1) / (item.tokens * n * k)
        rest = per_gpu_share / split_share
    return m, n1 * rest, k1


def price_gemm(pricer, what: str, fmt: str, m, n, k) -> Part:
    """A GEMM at its table dtype; where none is measured, the stand-in dtype's utilisation (transfer:dtype)."""
    hw = pricer.hw
    point = {"m": num(m), "n": num(n), "k": num(k)}
    dtype = _GEMM_DTYPE.get(fmt)
    stand_in = _GEMM_STAND_IN.get(FORMATS[fmt].element)

    def sol(c):
        return B.gemm_sol(c, hw)

    def true_sol(p):  # the node's own format, not the table's dtype
        return B.gemm_sol({**p, "gemm_dtype": None}, hw, fmt)

    return pricer._lookup(what, GEMM, {"gemm_dtype": dtype or fmt}, point, sol, true_sol,
                          (("dtype", {"gemm_dtype": stand_in}),), tag=("gemm", fmt))


def price_moe(pricer, what: str, group: list[Covered], node: Node, ctx: CostContext) -> Part:
    """Routed experts up → SwiGLU → down as one module, at the per-GPU share of its flops (as moe_tp) and the
    plan's EP and routing; transfers: the table's routing distribution, another dtype, the nearest shape."""
    hw = pricer.hw
    up_item = next(c for c in group if isinstance(c.op, RoutedExperts))
    t = up_item.tokens
    split = Fraction(op_cost(up_item.op, node, ctx, t).total_flops) / up_item.cost.total_flops
    up = up_item.op
    ep = pricer.plan.ep
    key = {"moe_dtype": _MOE_DTYPE.get(up.weight_format, up.weight_format), "hidden_size": up.dim,
           "inter_size": up.inter, "topk": up.top_k, "num_experts": up.experts,
           "moe_tp_size": num(split / ep), "moe_ep_size": ep, "distribution": moe_distribution(pricer.plan.routing)}

    def sol(c):
        return B.moe_sol(c, hw)

    def true_sol(p):  # the node's own format, not the table's dtype
        return B.moe_sol({**key, **p}, hw, up.weight_format)

    stand = []
    if key["distribution"] != MOE_DISTRIBUTION:
        stand.append(("op", {**key, "distribution": MOE_DISTRIBUTION}))
    stand += [("dtype", {**key, "moe_dtype": d}) for d in _MOE_STAND_IN if d != key["moe_dtype"]]
    for d in (key["moe_dtype"], *_MOE_STAND_IN):
        stand.append(("shape", pricer._nearest(MOE, {**key, "moe_dtype": d}, _MOE_SHAPE)))
    return pricer._lookup(what, MOE, key, {"num_tokens": num(t)}, sol, true_sol, stand,
                          tag=("moe", up.weight_format))


def price_mhc(pricer, what: str, group: list[Op], t) -> Part:
    """An mHC site: ``post`` (expand) or ``pre`` (coefficients + collapse) at the nearest measured width;
    V4.1's lagged pre-mix, or a lone coefficient node, reads V4's ``pre`` only as a transfer:op."""
    hw, model = pricer.hw, pricer.model
    op = group[0]
    name = "post" if isinstance(op, MhcExpand) else "pre"
    if name == "pre" and len(group) == 1 and not isinstance(op, MhcCoefficients):
        return Part(what, "sol", 0.0, 0.0)  # a lone collapse: no table times it alone
    key = {"op_name": name, "hidden_size": op.dim, "hc_mult": op.streams, "sinkhorn_iters": model.hc_sinkhorn_iters}

    def sol(c):
        return B.mhc_sol(c, hw)

    def true_sol(p):
        return B.mhc_sol({**key, **p}, hw)

    point = {"num_tokens": num(t)}
    shape = (("shape", pricer._nearest(MHC, key, ("hidden_size",))),)
    tag = ("mhc", tuple(key.items()))
    v4_pre = name == "post" or (len(group) == 2 and not model.lagged_mhc)
    if v4_pre:
        return pricer._lookup(what, MHC, key, point, sol, true_sol, shape, tag=tag)
    own = {**key, "op_name": f"{name}:{model.family}"}
    return pricer._lookup(what, MHC, own, point, sol, true_sol, (("op", key),) + shape, tag=tag)


def price_attention(pricer, what: str, group: list[Covered], node: Node, ctx: CostContext, graph: Graph) -> Part:
    """The V4 attention sublayer as one measured module (CSA or HCA table; an SWA-only layer reads HCA's as a
    transfer:op), at its batch and its one prompt length and start; rows of mixed lengths have no point."""
    model, plan, hw = pricer.model, pricer.plan, pricer.hw
    attn = next(c.op for c in group if isinstance(c.op, SparseAttention))
    rows = node.rows
    shapes = {(r.q_end - r.q_start, r.q_start) for r in rows}
    batch = sum(r.copies for r in rows)
    isl, step = next(iter(shapes)) if len(shapes) == 1 else (None, None)
    decode = isl == 1 and all(plan.requests[r.request].kind == "decode" for r in rows)
    tp = plan.tp
    key = {"model": model_key(model), "gemm_type": "fp8_block", "num_heads": model.num_heads // tp,
           "tp_size": tp, "compress_ratio": attn.ratio}
    phase = "generation" if decode else "context"
    spec = ATTENTION[(phase, "csa" if attn.ratio == 4 else "hca")]
    point = {"batch_size": batch, "isl": isl, "step": step}
    if isl is None:
        return Part(what, "sol", 0.0, 0.0, spec.path, (("rows", "mixed lengths"),))
    # the module's SOL reads its signature, not its layer: one answer for the layers of one kind
    tag = module_tag(node, module_signature(graph, node, ctx.model), ctx, hw)

    def sol(c):
        return module_sol(node, c["batch_size"], c["isl"], c["step"], ctx, hw, tag)

    memo = None if tag is None else ("attention", *tag)
    if attn.ratio == 0:  # SWA-only layer: the HCA module stands in (as AIConfigurator does)
        return pricer._lookup(what, spec, key, point, sol, sol, (("op", {**key, "compress_ratio": 128}),), memo)
    return pricer._lookup(what, spec, key, point, sol, tag=memo)
