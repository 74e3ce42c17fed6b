"""V4 lowering defects of issue 9, each with the number it must give: fp32 compressors, the V4
indexer's own compressor (wkv + wgate d→256, fp32), the per-head q RMS rescale, the head's fused
nodes at the logits count, and ``expert_dtype`` honoured in the inventory and the costs."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from v41graph import Plan, Request, load_model, lower
from v41graph.model.config import model_from_config
from v41graph.passes import compile
from v41graph.costs.counts import CostContext
from v41graph.costs.node import node_cost
from v41graph.errors import ConfigError
from v41graph.ir.ops import Fused
from v41graph.model.config import builtin_config_text
from v41graph.model.inventory import inventory
from v41graph.passes import compile_graph

T = 4096


@pytest.fixture(scope="module")
def v4_costs(v4_flash):
    plan = Plan([Request.prefill(T)], fusion="unfused")
    g = lower(v4_flash, plan)
    return g, (lambda nid: node_cost(g, nid, CostContext(v4_flash, plan)))


def test_v4_compressors_are_fp32_as_the_checkpoint(v4_costs, v4_flash):
    g, cost = v4_costs
    # layer 2 is CSA (ratio 4, overlapped: d → 2·512), layer 3 HCA (ratio 128: d → 512); fp32 weights
    assert cost("L2.cmp.wkv").byte("weights") == 4096 * 1024 * 4
    assert cost("L2.cmp.wkv").flop("tf32") == 2 * T * 4096 * 1024
    assert cost("L3.cmp.wgate").byte("weights") == 4096 * 512 * 4
    inv = {t.name: t for t in inventory(v4_flash).tensors}
    assert inv["layers.2.attn.compressor.wkv.weight"].bytes == 4096 * 1024 * 4


def test_v4_indexer_has_its_own_fp32_compressor(v4_costs, v4_flash):
    g, cost = v4_costs
    # wkv and wgate d → 2·128 (overlapped groups of 4), fp32, over the 4096 new tokens
    for part in ("wkv", "wgate"):
        c = cost(f"L2.idx.{part}")
        assert c.byte("weights") == 4096 * 256 * 4 == 4_194_304
        assert c.flop("tf32") == 2 * T * 4096 * 256
    inv = {t.name: t for t in inventory(v4_flash).tensors}
    assert inv["layers.2.attn.indexer.compressor.wkv.weight"].bytes == 4_194_304
    assert [e.src for e in g.inputs("L2.idx.k_pool")] == ["L2.idx.wkv", "L2.idx.wgate", "L2.store.idx_state"]
    assert "L2.idx.wk" not in g.nodes


def test_v4_rescales_each_head_of_q(v4_costs, flash):
    g, cost = v4_costs
    # q *= rsqrt(mean(q²)) per head over 64 × 512 values: 4 fp32 flops per value, like every norm
    assert cost("L2.q_rescale").flop("fp32") == 4 * T * 64 * 512
    assert [e.src for e in g.inputs("L2.q_rope")] == ["L2.q_rescale"]
    assert "L2.q_rescale" not in lower(flash, Plan([Request.prefill(8)])).nodes  # V4.1 has none


def test_head_nodes_fused_into_the_last_mhc_count_logits(v4_flash):
    plan = Plan([Request.prefill(8192)])  # V4 default: two-pass
    c = compile_graph(v4_flash, plan)
    (fid,) = [n for n, node in c.graph.nodes.items()
              if isinstance(node.op, Fused) and "head.collapse" in node.op.members]
    cost = node_cost(c.graph, fid, CostContext(v4_flash, plan))
    # L42's ffn expand over 8192 tokens: 2·t·d·n·(n+1); the head's collapse 2·1·n·d and norm 4·1·d
    # over the one logits position; hc_head's coefficients are its n pre-weights (hc_head_fn [n, n·d]):
    # 2·1·(n·d)·n at tf32, reading n·n·d fp32 weights
    d, n = 4096, 4
    assert cost.flop("fp32") == 2 * 8192 * d * n * (n + 1) + 2 * n * d + 4 * d
    assert cost.flop("tf32") == 2 * n * d * n


def _with_experts(dtype: str):
    config = json.loads(builtin_config_text("deepseek-v4-flash"))
    config["expert_dtype"] = dtype
    return model_from_config(config, f"v4-flash-{dtype}")


def test_fp8_experts_weigh_the_format_ratio_more_and_cost_more():
    fp4, fp8 = load_model("deepseek-v4-flash"), _with_experts("fp8")
    a = inventory(fp4).bytes_by_group()["routed_experts"]
    b = inventory(fp8).bytes_by_group()["routed_experts"]
    # FP8 e4m3 with one ue8m0 per 128×128 block: 1 + 1/16384 B per value; FP4 e2m1 + ue8m0/32: 17/32
    assert Fraction(b, a) == Fraction(16385, 16384) / Fraction(17, 32)
    assert a == 43 * 256 * 3 * 4096 * 2048 * 17 // 32
    plan = Plan([Request.decode(8192, copies=64)])
    t4 = compile(fp4, plan, "h200_sxm").report("schedule").total_time_s
    t8 = compile(fp8, plan, "h200_sxm").report("schedule").total_time_s
    assert t8 > t4


def test_unknown_expert_dtype_is_a_config_error():
    with pytest.raises(ConfigError, match="config key 'expert_dtype': unknown value 'int3'"):
        _with_experts("int3")


def test_v4_head_coefficients_read_hc_head_fn_only(v4_costs, v4_flash):
    g, cost = v4_costs
    # hc_head_fn is [hc, hc·d] = [4, 16384] fp32: 262,144 B, not the (2+n)·n = 24 rows of a block's hc_fn
    inv = {t.name: t for t in inventory(v4_flash).tensors}
    assert cost("head.coeff").byte("weights") == inv["hc_head_fn"].bytes == 4 * 4 * 4096 * 4
