"""The sharding table (model/sharding.py): coverage, per-GPU collectives and shares computed by
hand, and the SOL figures it brings within reach of AIConfigurator and AISimulate (issue 9)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from v41graph import Plan, PlanError, Request, load_model, lower
from v41graph.passes import compile
from v41graph.costs.counts import CostContext
from v41graph.costs.node import node_cost
from v41graph.model.gpu_memory import weights_per_gpu
from v41graph.model.inventory import inventory
from v41graph.model.sharding import Mapping, rule_for_node, rule_for_weight

MODELS = ("deepseek-v4.1-flash", "deepseek-v4-flash", "deepseek-v4-flash-0731", "deepseek-v4-pro")


@pytest.mark.parametrize("name", MODELS)
def test_every_node_and_every_weight_has_a_rule(name):
    model = load_model(name)
    # an image needs a vision tower and a prompt that holds its 441 tokens (the image processor's default)
    images = 1 if model.vision is not None else 0
    plan = Plan([Request.prefill(600, images=images), Request.decode(300, copies=4)], tp=2, ep=8, dp=2,
                dspark="on" if model.draft_blocks else "off")
    for nid in lower(model, plan).nodes:
        assert rule_for_node(nid).source  # raises for a node the table does not name
    for t in inventory(model).tensors:
        assert rule_for_weight(t.name).source


def test_a_node_outside_the_table_is_an_error():
    with pytest.raises(PlanError, match="sharding: no rule for node 'L3.mystery'"):
        rule_for_node("L3.mystery")


def test_engine_choices_the_issue_names():
    # wq_a and wkv replicated, wq_b and wo split, the indexer replicated (vLLM [VA]), shared
    # expert and head split, q_rope split with its producer, the indexer's q_quant replicated with its own
    split = {n: rule_for_node(n).split for n in ("wq_a", "wkv", "wq_b", "q_rope", "wo_a", "wo_b", "idx.wq_b",
                                                 "idx.q_quant", "idx.weights_proj", "moe.shared.up", "head.proj")}
    assert split == {"wq_a": "replicated", "wkv": "replicated", "wq_b": "column", "q_rope": "column",
                     "wo_a": "column", "wo_b": "row", "idx.wq_b": "replicated", "idx.q_quant": "replicated",
                     "idx.weights_proj": "replicated", "moe.shared.up": "column", "head.proj": "vocab"}
    tp4 = Mapping(tp=4)  # no EP: the shared and routed experts split over the 4-GPU MoE-TP group
    assert [tp4.work_divisor(rule_for_node(n)) for n in ("moe.shared.up", "moe.experts.up", "head.proj")] == [4, 4, 4]
    ep8 = Mapping(tp=8, ep=8)  # EP: shared expert replicated (SGLang tp_size=1 with an a2a backend)
    assert ep8.weight_divisor(rule_for_node("moe.shared.up")) == 1


@pytest.mark.parametrize("mapping, message", [
    (dict(tp=16), "plan tp: 16 does not divide the 8 wo_a output groups"),
    (dict(tp=3), "plan tp: 3 does not divide the 64 attention heads"),
    (dict(ep=7), "plan ep: 7 does not divide the 256 routed experts"),
    (dict(tp=2, dp=3, ep=4), "plan ep: 4 and tp × dp = 2 × 3 = 6 must divide one another"),
])
def test_mapping_errors_name_the_values(v4_flash, mapping, message):
    with pytest.raises(PlanError, match=message):
        Plan([Request.prefill(10)], **mapping).check(v4_flash)


def _layer_comm(model, plan, layer, gpus_per_node=8):
    g = lower(model, plan)
    ctx = CostContext(model, plan, gpus_per_node)
    return {n.id.split(".", 1)[1]: dict(node_cost(g, n.id, ctx).comm) for n in g.layer_nodes(layer)
            if n.op.kind == "Communication"}


def test_one_moe_layer_at_tp8_ep8_per_gpu_bytes_by_hand(v4_flash):
    # V4-Flash: d = 4096, top-6; prefill of 8192 tokens; 8 GPUs, attention TP 8, EP 8.
    # Attention: wo_b is row-parallel, so a ring all-reduce of 8192 × 4096 bf16 sends 2·7/8 of it.
    # MoE: the attention group of 8 scatters the 8192 tokens, 1024 per GPU; each GPU dispatches its
    # own 1024 tokens' 6 copies, 7/8 of them leave it, at FP8 + one ue8m0 per 32 (4096 + 128 B per
    # copy); the combine returns them bf16; an all-gather re-replicates the 8192 × 4096 bf16 output.
    t, d, k = 8192, 4096, 6
    expected = {
        "attn.all_reduce": {"nvlink": 2 * 7 * t * d * 2 // 8},          # 117,440,512
        "moe.dispatch": {"nvlink": (t // 8) * k * (d + d // 32) * 7 // 8},  # 22,708,224
        "moe.combine_a2a": {"nvlink": (t // 8) * k * d * 2 * 7 // 8},      # 44,040,192
        "moe.all_gather": {"nvlink": 7 * t * d * 2 // 8},                # 58,720,256
    }
    assert expected["moe.dispatch"]["nvlink"] == 22_708_224
    assert _layer_comm(v4_flash, Plan([Request.prefill(t)], tp=8, ep=8), 5) == expected


def test_one_moe_layer_at_tp1_dp8_ep8_per_gpu_bytes_by_hand(v4_flash):
    # DP attention: the one 8192-token request lives on DP rank 0, which holds all its tokens
    # (no attention TP: no all-reduce; attention group of 1: no all-gather). It dispatches its
    # own 8192 tokens' 6 copies, 7/8 of them to the other 7 GPUs, FP8 + scales; combine in bf16.
    t, d, k = 8192, 4096, 6
    expected = {"moe.dispatch": {"nvlink": t * k * (d + d // 32) * 7 // 8},   # 181,665,792
                "moe.combine_a2a": {"nvlink": t * k * d * 2 * 7 // 8}}        # 352,321,536
    assert _layer_comm(v4_flash, Plan([Request.prefill(t)], dp=8, ep=8), 5) == expected


def test_an_all_to_all_across_nodes_uses_the_scale_out_fabric(v4_flash):
    # EP 16 over 8-GPU nodes: of a GPU's 15 peers, 7 are in its NVLink domain, 8 behind its NIC
    t, d, k = 4096, 4096, 6
    sent = Fraction(t * k * (d + d // 32) * 15, 16)
    comm = _layer_comm(v4_flash, Plan([Request.prefill(t)], dp=16, ep=16), 5)
    assert comm["moe.dispatch"] == {"nvlink": sent * 7 / 15, "scaleout": sent * 8 / 15}


def test_routed_experts_are_split_over_every_gpu(v4_flash):
    # EP 8: each GPU computes 1/8 of the 8192 × 6 routed copies; its weights are 1/8 of the
    # 256 experts touched ((1 − 6/256)^8192 is 0 on chance.untouched's grid). FP4 e2m1 + ue8m0/32 = 17/32 B.
    plan = Plan([Request.prefill(8192)], tp=8, ep=8)
    c = node_cost(lower(v4_flash, plan), "L5.moe.experts.up", CostContext(v4_flash, plan))
    assert c.flop("fp4") == 2 * 8192 * 6 * 2 * 4096 * 2048 // 8
    assert c.byte("weights") == 256 * 2 * 4096 * 2048 * Fraction(17, 32) / 8


def _weight_bytes_read(compiled):
    return sum(c.byte("weights") for c in compiled.graph.annotations["cost"].values())


def test_v41_gb200_tp4_decode_reads_exactly_the_weights_it_touches(flash):
    # V4.1-Flash, one decode at 96 tokens, tp 4 (MoE-TP 4, no EP), by hand per GPU:
    d, q, heads, hd, olora, groups, vocab = 5120, 1280, 64, 512, 1024, 8, 129280
    inter, experts, k, ik, ih = 2304, 384, 6, 128, 32
    fp8, fp4 = Fraction(1025, 1024), Fraction(17, 32)  # e4m3 + ue8m0 per 32×32 block; e2m1 + ue8m0 per 32
    attention = (q * d * fp8 + q * heads * hd * fp8 / 4 + d * hd * fp8        # wq_a, wq_b/4, wkv
                 + groups * (heads * hd // groups) * olora * 2 / 4 + groups * olora * d * fp8 / 4)  # wo_a, wo_b
    mhc = 2 * 24 * 4 * d * 4                                                   # hc_attn_fn, hc_ffn_fn (fp32)
    gate = experts * d * 2 + experts * 4                                      # bf16 weight + fp32 bias
    shared = 3 * d * inter * fp8 / 4                                          # w1, w3, w2 over MoE-TP 4
    routed = k * 3 * d * inter * fp4 / 4                                      # the 6 experts touched, /4
    per_layer = 40 * (attention + mhc + gate + shared + routed)
    compressors = 3 * 2 * d * hd * 4 + d * hd * 2                             # ratio 2 wkv+wgate fp32; ratio 1 bf16
    index_keys = 4 * hd * ik * 2                                              # wk 512→128 bf16 at each KV source
    indexers = 8 * (q * ih * ik * fp8 + d * ih * 2)                           # wq_b fp8, weights_proj bf16
    engram = 2 * (24 * 256 * Fraction(33, 32) / 4 + 24 * 256 * 5 * d * fp8)  # rows looked up /4, wkv
    head = d * vocab * 2 / 4 + d * 2 / 4                                      # vocab-parallel head; one embed row
    expected = per_layer + compressors + index_keys + indexers + engram + head
    compiled = compile(flash, Plan([Request.decode(96)], tp=4), "gb200")
    assert _weight_bytes_read(compiled) == expected
    # the same attention weights the inventory holds per GPU under the table (less attn_sink, never read)
    held = weights_per_gpu(flash, Mapping(tp=4))["attention"]
    assert held - 40 * 64 * 4 // 4 == 40 * attention


def test_v41_gb200_tp4_decode_is_within_20_percent_of_aisimulate(flash):
    # AISimulate's V4.1 model of the GB200 study (TP4, MoE TP4, EP1): SOL 0.495 ms at 1:96
    t = compile(flash, Plan([Request.decode(96)], tp=4), "gb200").report("schedule").total_time_s
    assert abs(t / 0.495e-3 - 1) < 0.20


@pytest.mark.parametrize("requests, mapping, aic_ms", [
    ([Request.prefill(8192)], {}, 160.310),
    ([Request.prefill(8192)], dict(tp=8, ep=8), 70.259),
    ([Request.decode(8192, copies=64)], {}, 30.867),
    ([Request.decode(8192, copies=64)], dict(tp=8, ep=8), 4.500),
])
def test_aiconfigurator_sol_workloads_within_20_percent(v4_flash, requests, mapping, aic_ms):
    # AIConfigurator 0.12.0 SOL, DeepSeek-V4-Flash FP4 experts on h200_sxm (issue 9's table);
    # v41graph with its defaults (V4 → two-pass fusion)
    t = compile(v4_flash, Plan(requests, **mapping), "h200_sxm").report("schedule").total_time_s
    assert abs(t * 1e3 / aic_ms - 1) < 0.20
