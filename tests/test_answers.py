"""Issue 24, deliverables 3–6: op families that sum to the node total, parameter counts against
the model cards, and the smaller answers (formula value, compare units, diff order, simulate header).
Sweep sizing is tested in test_sweep.py, the DOT title in test_dot_costs.py, ask in test_ask.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from helpers import run, run_json
from v41graph import Plan, Request, compile, load_model, parameters
from v41graph.analysis.families import FAMILIES, by_family, family_of
from v41graph.extend import fuse_nodes, register_pass, unregister_pass
from v41graph.passes import PassResult


def test_cost_prefill_128k_families_sum_to_the_node_total_and_name_the_work(capsys):
    s = run_json(capsys, "cost", "--prefill", "128K", "--tp", "8", "--ep", "8")
    fam = s["breakdown"]["by_family"]
    times = {k: v["time_s"] for k, v in fam["families"].items()}
    node_total = sum(s["breakdown"]["by_stage"].values())
    assert abs(sum(times.values()) - node_total) <= 1e-9 * node_total
    assert abs(fam["total_time_s"] - node_total) <= 1e-9 * node_total
    assert "Fused" not in times and set(times) <= set(FAMILIES)
    for family in ("routed experts", "index scoring", "mHC + norms", "attention", "communication"):
        assert times[family] > 0, family
    # flops are the members' own: they add up to the nodes' flops
    status, out, err = run(capsys, "cost", "--prefill", "128K", "--tp", "8", "--ep", "8")
    section = out[out.index("node time by op family"):out.index("nodes by bound")]
    assert "Fused" not in section and "SOL shares" in section and "routed experts" in section


@dataclass(frozen=True)
class _FuseAcross:
    """Fuses layer 3's wq_a (attention) with its q_norm (mHC + norms): one module over two families."""

    name: str = "fuse_across"

    def __call__(self, graph, ctx):
        return PassResult(self.name, fuse_nodes(graph, ("L3.wq_a", "L3.q_norm"), "across"), 1, None)


def test_a_module_over_two_families_is_split_by_its_members_sol_shares():
    from v41graph.costs.counts import CostContext
    from v41graph.costs.hardware import load_hardware
    from v41graph.costs.node import member_costs
    from v41graph.costs.value import sol_time
    m, plan, hw = load_model(), Plan([Request.prefill(4096)]), load_hardware("h200_sxm")
    plain = by_family(m, plan, compile(m, plan))
    register_pass(_FuseAcross(), after="fusion")
    try:
        c = compile(m, plan)
    finally:
        unregister_pass("fuse_across")
    node = c.graph.node("L3.q_norm")
    assert node.op.kind == "Fused" and node.op.members == ("L3.wq_a", "L3.q_norm")
    f = by_family(m, plan, c)
    assert f.split_modules == 1 and "Fused" not in f.families
    total = f.total_time_s
    assert abs(sum(v.time_s for v in f.families.values()) - total) <= 1e-12 * total
    # attention gains the module's time times the Gemm's SOL share, less the Gemm's own time before
    gemm, norm = (float(sol_time(x.cost, hw).time) for x in member_costs(node, CostContext(m, plan, hw.gpus_per_node)))
    module = float(c.graph.annotation("schedule")["L3.q_norm"].sol.time)
    alone = float(compile(m, plan).graph.annotation("schedule")["L3.wq_a"].sol.time)
    moved = f.families["attention"].time_s - plain.families["attention"].time_s
    assert moved == pytest.approx(module * gemm / (gemm + norm) - alone, rel=1e-6)


def test_family_mapping_is_by_place_then_part_then_kind():
    from v41graph.ir.ops import Communication, Gemm, MoeGate, Norm, RoutedExperts
    g = Gemm("w", 1, 1, "fp8")
    assert family_of(g, "L3.wq_a", "encoder") == "attention"
    assert family_of(g, "L3.idx.wq_b", "encoder") == "index scoring"
    assert family_of(g, "L3.cmp.wkv", "encoder") == "compressor"
    assert family_of(g, "L1.engram.proj", "encoder") == "Engram"
    assert family_of(g, "head.proj", "head") == "head"
    assert family_of(g, "D0.wq_a", "dspark") == "DSpark"
    assert family_of(Norm(8), "L3.attn_norm", "encoder") == "mHC + norms"
    assert family_of(MoeGate(1, 1, 1), "L3.moe.gate", "encoder") == "router"
    experts = RoutedExperts(6, 6, 1, 1, "fp4", "up")
    assert family_of(experts, "L3.moe.shared.up", "encoder") == "shared expert"
    assert family_of(experts, "L3.moe.experts.up", "encoder") == "routed experts"
    assert family_of(Communication("all_gather", "engram", 1, 8), "L1.engram.all_gather", "encoder") == "communication"


def test_v4_flash_parameters_match_its_model_card(capsys):
    # the model card's checkpoint: the official one, FP4 experts (on h200 that needs asking for)
    p = run_json(capsys, "memory", "--model", "deepseek-v4-flash", "--checkpoint", "fp4",
                 "--fp4-on-hopper")["parameters"]
    assert abs(p["total"] / 284e9 - 1) < 0.02  # model card: 284B total
    assert abs(p["active"]["decode"]["total"] / 13e9 - 1) < 0.03  # 13B active
    assert p["total"] + p["draft"] == sum(f["parameters"] for f in p["formats"].values())
    assert p["formats"]["fp4_e2m1_ue8m0_g32"]["bytes_per_parameter"] == 0.53125  # 0.5 B + one 1-B scale per 32


def test_v41_flash_active_parameters_decode_16b_prefill_8b_with_bounded_replay(capsys):
    p = parameters(load_model())
    assert abs(p.active["decode"].total / 16e9 - 1) < 0.02  # card: 16B in decode
    assert abs(p.active["prefill_bounded"].total / 8e9 - 1) < 0.05  # card: 8B in prefill, bounded replay
    assert p.active["prefill_bounded"].layers == 21 and p.active["decode"].layers == 40
    # routed experts: 6 of 384 per layer, exactly
    assert p.active["decode"].by_group["routed_experts"] * 384 == p.by_group["routed_experts"] * 6
    layout = run_json(capsys, "layout")
    assert layout["parameters"]["total"] == p.total and layout["parameters"]["active"]["decode"]["total"] == \
        p.active["decode"].total


def test_formula_at_prints_the_value(capsys):
    d = run_json(capsys, "formula", "token_layers", "--replay", "bounded", "--at", "N=1000")
    assert d["value"] == 21 * 1000 + 19 * 128
    status, out, err = run(capsys, "formula", "token_layers", "--replay", "bounded", "--at", "N=1000")
    assert "value at N = 1,000: 23,432" in out
    t = run_json(capsys, "formula", "sol_time", "--at", "N=1000")["value"]
    # formula and cost price one deployment: the smallest mapping that fits (issue 37)
    assert t == pytest.approx(run_json(capsys, "cost", "--prefill", "1000")["critical_path_s"],
                              rel=1e-12)


def test_compare_names_units_and_shows_per_gpu_memory(capsys):
    status, out, err = run(capsys, "compare", "--decode", "64:8K", "--tp", "8", "--ep", "8", "--vs", "tp=4")
    assert status == 0 and "totals (ms)" in out and "memory (GiB)" in out and "by op family (ms)" in out
    assert "_s " not in out and "total_time_s" not in out and "Fused" not in out
    assert "per_gpu_total" in out and "(8 GPUs)" in out
    d = run_json(capsys, "compare", "--decode", "64:8K", "--tp", "8", "--ep", "8", "--vs", "tp=4")
    a, b = d["sides"]
    assert a["memory"]["per_gpu_total_bytes"] < b["memory"]["per_gpu_total_bytes"]  # tp 4 holds more per GPU


def test_diff_is_sorted_by_the_size_of_its_time_delta(capsys):
    d = run_json(capsys, "diff", "--replay", "off,bounded", "--prefill", "1000")
    for kind in ("added", "removed", "changed"):
        sizes = [abs(e["time_delta_s"] or 0.0) for e in d[kind]]
        assert sizes == sorted(sizes, reverse=True), kind


def test_simulate_column_header_is_one_line(capsys):
    status, out, err = run(capsys, "simulate", "--tp", "8", "--ep", "8", "--rate", "2", "--duration", "2")
    lines = out.splitlines()
    i = next(i for i, l in enumerate(lines) if l.lstrip().startswith("rate/s"))
    assert "TTFT p50" in lines[i] and "ITL p50" in lines[i] and "ms" in lines[i]
    assert lines[i + 1].split()[0] == "2.0"  # the next line is a row, not the header's second half
