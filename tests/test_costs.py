"""Cost rules and SOL time (SPEC §5; STYLE.md point 10): closed forms, edge cases, missing rules.

Every expected figure is a literal derived by hand in the comment beside it (model: d = 5120,
q rank 1280, 64 heads × 512, MoE 384 experts top-6 of 3·5120·2304 weights, Engram 24 × 256;
formats: linear FP8 1 + 1/1024 B, experts FP4 1/2 + 1/32 = 17/32 B, Engram FP8 1 + 1/32 B).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from hypothesis import given, settings, strategies as st
import pytest
import sympy

from v41graph import Plan, Request, load_model, lower
from v41graph.chance import untouched
from v41graph.costs import rules as costs
from v41graph.costs.counts import CostContext
from v41graph.costs.hardware import load_hardware
from v41graph.costs.node import node_cost
from v41graph.costs.value import Cost, peak_for, sol_time
from v41graph.errors import CostError
from v41graph.ir.graph import Node
from v41graph.ir.ops import Op
from v41graph.passes import PassContext
from v41graph.passes.replay import ReplayPruning
from v41graph.symbols import N

H200, B200 = load_hardware("h200_sxm"), load_hardware("b200_sxm")
ATTN_FLOPS_PER_PAIR = 4 * 64 * 512  # QKᵀ + PV, 2 flops each, 64 heads over the 512-d latent


@cache
def _model():
    return load_model()


@cache
def _graph(plan: Plan):
    """The lowered graph of ``plan`` with the replay pass applied (rows as the scheduler sees them)."""
    return ReplayPruning()(lower(_model(), plan), PassContext(_model(), plan)).graph


def cost_of(node_id: str, *requests: Request, **policies) -> Cost:
    plan = Plan(requests, **policies)
    return node_cost(_graph(plan), node_id, CostContext(_model(), plan))


# ---- GEMM: 2·m·n·k at the weight precision ----------------------------------------------------------

def test_gemm_symbolic():
    c = cost_of("L3.wq_a", Request.prefill(N))
    assert c.flop("fp8") == 2 * N * 5120 * 1280                       # sympy: 13107200·N
    assert c.byte("weights") == 6_560_000                             # 5120·1280·(1 + 1/1024) = 6553600 + 6400
    assert c.flop("bf16") == 0 and c.flop("fp4") == 0


def test_gemm_numeric():
    c = cost_of("L3.wq_a", Request.prefill(4096))
    assert c.flop("fp8") == 53_687_091_200                            # 2·4096·5120·1280
    assert c.byte("weights") == 6_560_000
    assert c.byte("act_in") == 4096 * 10240                           # bf16 x: 5120 × 2 B per token
    assert c.byte("act_out") == 4096 * 2560                           # bf16 q latent: 1280 × 2 B


def test_grouped_bf16_gemm_and_head():
    # wo_a: 8 groups of 4096 → 1024 in bf16: 2·T·8·4096·1024 = 67108864·T flops, 8·4096·1024·2 B
    c = cost_of("L3.wo_a", Request.prefill(4096))
    assert c.flop("bf16") == 274_877_906_944                          # 67108864·4096
    assert c.byte("weights") == 67_108_864
    # the head scales with the positions that emit logits: one for a prefill
    c = cost_of("head.proj", Request.prefill(4096))
    assert c.flop("bf16") == 1_323_827_200                            # 2·1·5120·129280
    assert c.byte("weights") == 1_323_827_200                         # 5120·129280·2 B


# ---- sparse attention: flops per attended pair ------------------------------------------------------

# N: (L3 pairs m=2, L21 pairs m=1) = selected + window, from test_visibility's hand table:
#   m=2 selected: 0, 4032, 4096, 4160, 90000, 250000; m=1 selected: 1, 8128, 8256, 8385, 176384, 381184
#   window 128: 1, 8128, 8256, 8384, 68672, 119872
ATTN_PAIRS = {
    1: (0 + 1, 1 + 1),
    127: (4032 + 8128, 8128 + 8128),
    128: (4096 + 8256, 8256 + 8256),
    129: (4160 + 8384, 8385 + 8384),
    600: (90000 + 68672, 176384 + 68672),
    1000: (250000 + 119872, 381184 + 119872),
}


@pytest.mark.parametrize("n", sorted(ATTN_PAIRS))
def test_attention_flops_are_pairs(n):
    encoder, decoder = ATTN_PAIRS[n]
    assert cost_of("L3.attn", Request.prefill(n)).flop("bf16") == ATTN_FLOPS_PER_PAIR * encoder
    assert cost_of("L21.attn", Request.prefill(n)).flop("bf16") == ATTN_FLOPS_PER_PAIR * decoder


def test_attention_kv_bytes():
    # N = 1000 on layer 3: 250000 FP4 main-KV entries × 288 B (read by the unpack) + 119872 SWA
    # entries × 528 B (read by attention)
    unpack, c = cost_of("L3.kv_unpack", Request.prefill(1000)), cost_of("L3.attn", Request.prefill(1000))
    assert c.flop("bf16") == 48_479_862_784                           # 131072 · 369872
    assert c.byte("kv_read") == 63_292_416                            # 119872 · 528
    assert unpack.byte("kv_read") == 72_000_000                       # 250000 · 288
    assert unpack.flop("fp32") == 256_000_000                         # 2 · 250000 · 512: scale × value
    assert unpack.flop("bf16") == 0 and unpack.flop("fp4") == 0       # dequantisation is no FP4 GEMM
    # the unpacked entries are a bf16 activation: 250000 × 512 × 2 B written, then read by attention
    assert unpack.byte("act_out") == 256_000_000
    assert unpack.byte("act_in") == 1000 * 512 * 4                    # the Top-K indices (i32)
    # attention: q (64 × 512 bf16) and Top-K per token, plus the unpacked entries
    assert c.byte("act_in") == 1000 * (65_536 + 2048) + 256_000_000


def test_unpack_on_an_swa_only_layer_does_not_exist():
    g = _graph(Plan([Request.prefill(1000)]))
    assert "L1.kv_unpack" not in g.nodes and "L3.kv_unpack" in g.nodes


def test_swa_only_layer_selects_nothing():
    # layer 1 (m = 0, no KV owner) attends its window only: 8256 + 128·872 = 119872 pairs at N = 1000
    assert cost_of("L1.attn", Request.prefill(1000)).flop("bf16") == ATTN_FLOPS_PER_PAIR * 119872


def test_attention_causal_n1_n2_on_m2():
    # N = 1: the only group is open → 0 selected, 1 window key; N = 2: 1 selected, 1 + 2 window keys
    assert cost_of("L3.attn", Request.prefill(1)).flop("bf16") == ATTN_FLOPS_PER_PAIR * (0 + 1)
    assert cost_of("L3.attn", Request.prefill(2)).flop("bf16") == ATTN_FLOPS_PER_PAIR * (1 + 3)


# ---- index scan: full scan at the source, pool-bounded at a Reindex layer ------------------------------

INDEX_FLOPS_PER_ENTRY = 2 * 32 * 128  # 32 index heads × 128-d, fp8


@pytest.mark.parametrize("context, l20, l24", [
    (10_000, 10_001, 10_001),      # below the pool both score every visible position
    (16_383, 16_384, 16_384),      # exactly the pool
    (16_384, 16_385, 16_384),      # one past the pool
    (100_000, 100_001, 16_384),    # layer 20 scans everything; layer 24 only its pool
])
def test_index_scan_vs_pool(context, l20, l24):
    s20 = cost_of("L20.idx.score", Request.decode(context))
    s24 = cost_of("L24.idx.score", Request.decode(context))
    assert s20.flop("fp8") == INDEX_FLOPS_PER_ENTRY * l20
    assert s24.flop("fp8") == INDEX_FLOPS_PER_ENTRY * l24
    assert s20.byte("kv_read") == 68 * l20                          # 128 × e2m1 + 4 ue8m0 = 68 B per entry
    assert s24.byte("kv_read") == 68 * l24
    assert cost_of("L20.idx.topk", Request.decode(context)).flop("fp32") == 2 * l20
    assert cost_of("L24.idx.topk", Request.decode(context)).flop("fp32") == 2 * l24


def test_index_scan_literals_at_100k():
    assert cost_of("L20.idx.score", Request.decode(100_000)).flop("fp8") == 819_208_192   # 8192 · 100001
    assert cost_of("L24.idx.score", Request.decode(100_000)).flop("fp8") == 134_217_728   # 8192 · 16384
    assert cost_of("L24.idx.score", Request.decode(10_000)).flop("fp8") == 81_928_192     # 8192 · 10001


# ---- SOL time -----------------------------------------------------------------------------------------

def test_sol_of_nothing():
    for c in (Cost(), Cost.of(flops={"fp8": 0}, bytes={"weights": 0}, comm={"nvlink": 0})):
        t = sol_time(c, H200)
        assert (t.time, t.bound) == (0, "none")
        assert t.compute == t.memory == t.comm == 0


def test_storage_costs_nothing():
    plan = Plan([Request.prefill(1000)])
    g, ctx = _graph(plan), CostContext(_model(), plan)
    stores = [n for n in g.nodes.values() if n.op.storage]
    assert {"L20.store.main_kv", "L20.store.index_k", "L3.store.swa", "L1.store.engram_table"} <= {n.id for n in stores}
    for n in stores:
        assert node_cost(g, n.id, ctx) == Cost()
        assert sol_time(node_cost(g, n.id, ctx), H200).bound == "none"


def test_sol_single_resources():
    t = sol_time(Cost.of(bytes={"kv_read": 4_800_000_000}), H200)  # 4.8 GB at 4.8 TB/s
    assert (t.time, t.bound, t.compute) == (Fraction(1, 1000), "memory", 0)
    t = sol_time(Cost.of(flops={"bf16": 989 * 10**12}), H200)
    assert (t.time, t.bound) == (1, "compute")
    t = sol_time(Cost.of(comm={"host": 64 * 10**9}), H200)        # PCIe 64 GB/s per direction
    assert (t.time, t.bound) == (1, "comm")
    t = sol_time(Cost.of(comm={"nvlink": 450 * 10**9}), H200)
    assert (t.time, t.bound) == (1, "comm")


def test_sol_is_max_and_compute_adds_over_precisions():
    # 1 s of bf16 + 1 s of fp8 = 2 s compute; 7.2 TB = 1.5 s memory → compute bound at 2 s
    c = Cost.of(flops={"bf16": 989 * 10**12, "fp8": 1979 * 10**12}, bytes={"weights": 7_200 * 10**9})
    t = sol_time(c, H200)
    assert (t.compute, t.memory, t.time, t.bound) == (2, Fraction(3, 2), 2, "compute")
    t = sol_time(c + Cost.of(bytes={"act_in": 2_400 * 10**9}), H200)  # 9.6 TB = 2 s: a tie goes to compute
    assert (t.time, t.bound) == (2, "compute")
    t = sol_time(c + Cost.of(bytes={"act_in": 4_800 * 10**9}), H200)  # 12 TB = 2.5 s
    assert (t.time, t.bound) == (Fraction(5, 2), "memory")


def test_fp4_falls_back_on_hopper():
    assert peak_for(H200, "fp4") == ("fp8", 1_979_000_000_000_000)
    assert peak_for(B200, "fp4") == ("fp4", 9_000_000_000_000_000)
    c = Cost.of(flops={"fp4": 1979 * 10**12})
    assert sol_time(c, H200).time == 1                              # at the fp8 peak
    assert sol_time(c, B200).time == Fraction(1979, 9000)           # 1.979e15 / 9e15


def test_unknown_precision_and_categories_raise():
    with pytest.raises(CostError, match="no peak for precision 'int3'"):
        peak_for(H200, "int3")
    with pytest.raises(CostError, match="int3"):
        sol_time(Cost.of(flops={"int3": 1}), H200)
    with pytest.raises(CostError, match="unknown byte category"):
        Cost.of(bytes={"scratch": 1})
    with pytest.raises(CostError, match="unknown link"):
        Cost.of(comm={"ethernet": 1})


def test_cost_adds():
    c = Cost.of(flops={"fp8": 1}, bytes={"weights": 5}) + Cost.of(flops={"fp8": 2, "bf16": 3}, comm={"host": 7})
    assert (c.flop("fp8"), c.flop("bf16"), c.byte("weights"), c.comm) == (3, 3, 5, (("host", 7),))
    assert (c.total_flops, c.total_bytes, c.total_comm) == (6, 5, 7)


def test_symbolic_sol_of_a_gemm():
    t = sol_time(cost_of("L3.wq_a", Request.prefill(N)), H200)
    assert t.bound is None
    # compute 13107200·N / 1.979e15 = 128·N / 19326171875; memory (6560000 + 12800·N) / 4.8e12
    assert sympy.simplify(t.compute - sympy.Rational(128, 19326171875) * N) == 0
    assert sympy.simplify(t.memory - (6_560_000 + 12_800 * N) / sympy.Integer(4_800 * 10**9)) == 0
    assert t.time.subs(N, 4096) == sympy.Rational(524288, 19326171875)  # compute wins at 4096


# ---- Engram --------------------------------------------------------------------------------------------

def test_engram_lookup_payload():
    # 24 columns × 256 values × (1 + 1/32) B = 6,336 B per token per module
    assert cost_of("L1.engram.lookup", Request.prefill(N)).byte("weights") == 6336 * N
    assert cost_of("L1.engram.lookup", Request.prefill(1000)).byte("weights") == 6_336_000
    assert cost_of("L14.engram.lookup", Request.prefill(1000)).byte("weights") == 6_336_000
    assert cost_of("L1.engram.lookup", Request.decode(5000, copies=8)).byte("weights") == 50_688  # 8 × 6336


def test_engram_host_residency_moves_to_host_link():
    c = cost_of("L1.engram.lookup", Request.prefill(1000), engram_residency="host")
    assert c.byte("weights") == 0
    assert dict(c.comm) == {"host": 6_336_000}
    # on the host link the lookup is comm bound: 6.336 MB / 64 GB/s = 99 µs
    assert sol_time(c, H200).comm == Fraction(6_336_000, 64 * 10**9)


# ---- MoE: weights read = the expected distinct experts of uniform routing ---------------------------

EXPERT_BYTES = 18_800_640  # 3·5120·2304 = 35,389,440 weights × 17/32 B (FP4 + ue8m0 per 32)
UP_BYTES, DOWN_BYTES = 12_533_760, 6_266_880  # w1 + w3 (2·5120·2304) and w2 (5120·2304) × 17/32 B


def experts_cost(prefix: str, *requests: Request) -> Cost:
    """The unfused expert op: up (w1, w3) + SwiGLU + down (w2)."""
    return sum((cost_of(f"{prefix}.{part}", *requests) for part in ("up", "swiglu", "down")), Cost())


def expected_experts(tokens: int, experts: int = 384, k: int = 6) -> float:
    """By hand: one token leaves an expert untouched with probability 1 − k/E (it picks k distinct)."""
    return experts * (1 - (1 - k / experts) ** tokens)


def test_moe_expert_reads():
    assert experts_cost("L5.moe.experts", Request.decode(4096)).byte("weights") == 112_803_840     # 6 experts
    for req, tokens in ((Request.prefill(63), 63), (Request.prefill(64), 64), (Request.prefill(5000), 5000),
                        (Request.decode(4096, copies=64), 64)):
        read = experts_cost("L5.moe.experts", req).byte("weights")
        assert read == pytest.approx(expected_experts(tokens) * EXPERT_BYTES, rel=1e-12)
    assert expected_experts(64) == pytest.approx(243.85, abs=0.005)  # of 384, where min(E, T·k) said all
    assert expected_experts(5000) == pytest.approx(384, abs=1e-9)  # every expert, all but surely
    # each GEMM reads its own weights of the same expected experts, as a closed form in N
    assert cost_of("L5.moe.experts.up", Request.prefill(N)).byte("weights") == \
        UP_BYTES * (384 - 384 * untouched(Fraction(1, 64), N))
    assert cost_of("L5.moe.experts.down", Request.prefill(N)).byte("weights") == \
        DOWN_BYTES * (384 - 384 * untouched(Fraction(1, 64), N))
    assert cost_of("L5.moe.experts.swiglu", Request.prefill(N)).byte("weights") == 0
    # flops: 2 · T · 6 · 35389440 at FP4 (up 2/3, down 1/3), SwiGLU 3 · T · 6 · 2304 at fp32
    assert experts_cost("L5.moe.experts", Request.decode(4096)).flop("fp4") == 424_673_280
    assert cost_of("L5.moe.experts.up", Request.decode(4096)).flop("fp4") == 283_115_520
    assert cost_of("L5.moe.experts.down", Request.decode(4096)).flop("fp4") == 141_557_760
    assert cost_of("L5.moe.experts.swiglu", Request.decode(4096)).flop("fp32") == 41_472


def test_expert_internal_tensors():
    # per routed copy: up writes 2·2304 bf16 values (9,216 B), the SwiGLU 2304 (4,608 B); T = 100, k = 6
    up, swiglu = cost_of("L5.moe.experts.up", Request.prefill(100)), cost_of("L5.moe.experts.swiglu",
                                                                                Request.prefill(100))
    assert up.byte("act_out") == 5_529_600 and swiglu.byte("act_in") == 5_529_600       # 100 · 6 · 9216
    assert swiglu.byte("act_out") == 2_764_800                                          # 100 · 6 · 4608


def test_shared_expert_reads_one():
    # one FP8 expert: 35,389,440 × (1 + 1/1024) = 35,424,000 B whatever the batch
    for req in (Request.decode(4096), Request.prefill(64), Request.prefill(5000)):
        assert experts_cost("L5.moe.shared", req).byte("weights") == 35_424_000


# ---- a missing rule raises, never a silent zero ---------------------------------------------------------

@dataclass(frozen=True)
class Mystery(Op):
    """An op kind nobody wrote a cost rule for."""


@dataclass(frozen=True)
class MysteryStore(Op):
    storage = True


def test_missing_rule_raises():
    plan = Plan([Request.prefill(16)])
    ctx = CostContext(_model(), plan)
    node = Node("X.mystery", Mystery(), None, "encoder", None)
    with pytest.raises(CostError, match="no cost rule for op kind Mystery"):
        costs.op_cost(Mystery(), node, ctx, 16)
    # a storage kind needs no rule: it holds data
    assert costs.op_cost(MysteryStore(), Node("X.store", MysteryStore(), None, "encoder", None), ctx, 16) == Cost()
    # and a graph node whose op has no rule fails node_cost, naming the node
    g = _graph(plan)
    g = g.with_nodes([n if n.id != "L3.q_norm" else Node(n.id, Mystery(), n.layer, n.stage, n.path, n.rows)
                      for n in g.nodes.values()])
    with pytest.raises(CostError, match="L3.q_norm"):
        node_cost(g, "L3.q_norm", ctx)


# ---- one implementation: symbolic equals numeric ------------------------------------------------------

SYMBOLIC_NODES = ("L3.attn", "L3.kv_unpack", "L20.idx.score", "L24.idx.score", "L5.moe.experts.up",
                  "L5.moe.experts.swiglu", "L21.wq_a", "L21.attn", "L21.kv_unpack", "L20.cmp.write",
                  "L1.engram.lookup", "head.proj")


def _as_sympy(v):
    return sympy.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else sympy.Integer(v)


def _entries(items) -> dict:
    return dict(items)


def _same(expr, n: int, value) -> bool:
    """The closed form at ``n`` is exactly the number (``untouched(p, N)`` included: chance.untouched)."""
    return sympy.sympify(expr).subs(N, n) == _as_sympy(value)


@cache
def _symbolic_costs():
    plan = Plan([Request.prefill(N)], decoder_replay="bounded")
    ctx = CostContext(_model(), plan)
    return {n: node_cost(_graph(plan), n, ctx) for n in SYMBOLIC_NODES}


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 20_000))
def test_symbolic_cost_equals_numeric(n):
    plan = Plan([Request.prefill(n)], decoder_replay="bounded")
    g, ctx = _graph(plan), CostContext(_model(), plan)
    for node_id, sym in _symbolic_costs().items():
        num = node_cost(g, node_id, ctx)
        for field in ("flops", "bytes", "comm"):
            s, v = _entries(getattr(sym, field)), _entries(getattr(num, field))
            for key in set(s) | set(v):
                assert _same(s.get(key, 0), n, v.get(key, 0)), (node_id, field, key, n)
        assert _same(sol_time(sym, H200).time, n, sol_time(num, H200).time), node_id
