"""OP mode on a tiny table in a temporary --measured-root: exact hit, bracketed interpolation
(computed by hand), a held value with its distance, and a strict miss."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from helpers import run

from v41graph import Plan, Request, load_model
from v41graph.costs.counts import CostContext
from v41graph.costs.hardware import load_hardware
from v41graph.costs.measured.op_cost import OpPricer
from v41graph.costs.measured.tiers import CostMode, MeasuredMiss
from v41graph.passes import compile_graph

H200 = {"fp8": 1979 * 10**12, "hbm": 4800 * 10**9}
N, K = 32768, 1024  # V4-Flash wq_b: q_lora 1024 → 64 heads × 512
T1024, T4096 = 0.05, 0.15  # ms, the tiny table's two sites


def _sol_wq_b(m: int) -> Fraction:
    """SOL of y[m, 32768] = x[m, 1024] · W with FP8 128×128-block weights on H200, by hand."""
    flops = Fraction(2 * m * N * K, H200["fp8"])
    weights = N * K * (1 + Fraction(1, 128 * 128))  # e4m3 values + one ue8m0 scale per block
    acts = m * K * 2 + m * N * 2  # bf16 in and out
    return max(flops, (weights + acts) / H200["hbm"])


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    base = tmp_path_factory.mktemp("measured")
    (base / "h200_sxm.yaml").write_text("data_dir: data/h200_sxm  # relative to systems_dir\n")
    d = base / "data" / "h200_sxm" / "gemm" / "sglang" / "0.5.14"
    d.mkdir(parents=True)
    (d / "gemm_perf.csv").write_text("gemm_dtype,m,n,k,latency\n"
                                     f"fp8_block,1024,{N},{K},{T1024}\n"
                                     f"fp8_block,4096,{N},{K},{T4096}\n")
    return base


def _price(root, prompt: int, node: str, mode: str = "hybrid"):
    m = load_model("deepseek-v4-flash")
    plan = Plan([Request.prefill(prompt)], fusion="two-pass")
    graph = compile_graph(m, plan, check=False).graph
    pricer = OpPricer(CostMode(mode, measured_root=str(root)), load_hardware("h200_sxm"), m, plan)
    return pricer, pricer.price(graph, node, CostContext(m, plan))


def test_exact_hit(root):
    _, r = _price(root, 1024, "L3.wq_b")
    (part,) = r.parts
    assert (part.tier, part.time, part.table) == ("measured", T1024 / 1000, "gemm/sglang/gemm_perf")
    assert dict(part.coords) == {"gemm_dtype": "fp8_block", "m": 1024, "n": N, "k": K}


def test_bracketed_interpolation_by_hand(root):
    _, r = _price(root, 2048, "L3.wq_b")
    u1 = _sol_wq_b(1024) / Fraction(T1024 / 1000)
    u2 = _sol_wq_b(4096) / Fraction(T4096 / 1000)
    w = (math.log2(2048) - math.log2(1024)) / (math.log2(4096) - math.log2(1024))  # 0.5: halfway in log2(m)
    expected = float(_sol_wq_b(2048) / (Fraction(1 - w) * u1 + Fraction(w) * u2))
    assert r.tier == "interpolated"
    assert r.time == pytest.approx(expected, rel=1e-12)


def test_held_beyond_the_range_with_distance(root):
    _, r = _price(root, 8192, "L3.wq_b")
    (part,) = r.parts
    u2 = _sol_wq_b(4096) / Fraction(T4096 / 1000)
    assert part.tier == "held"
    assert part.distance == (("m", 4096, 8192),)
    assert part.time == pytest.approx(float(_sol_wq_b(8192) / u2), rel=1e-12)


def test_strict_miss_names_op_table_and_coordinates(root):
    pricer, r = _price(root, 2048, "L3.wo_a", mode="op")  # a bf16 GEMM: no bfloat16 rows in the tiny table
    assert r.tier == "sol"
    with pytest.raises(MeasuredMiss) as err:
        pricer.check(r)
    assert str(err.value) == ("--cost op: no measured data for node 'L3.wo_a' (Gemm): table gemm/sglang/gemm_perf "
                              "(root, h200_sxm) at gemm_dtype=bfloat16, m=2048, n=8192, k=4096")


def test_hybrid_falls_back_to_sol_and_flags_it(root):
    _, r = _price(root, 2048, "L3.wo_a", mode="hybrid")
    (part,) = r.parts
    assert part.tier == "sol" and part.time == part.sol > 0


def test_held_across_shapes_keeps_the_distance(root):
    _, r = _price(root, 2048, "L3.wq_a")  # 4096 → 1024: n and k outside the tiny table's single (n, k)
    (part,) = r.parts
    assert part.tier == "held" and part.distance == (("n", N, 1024), ("k", K, 4096))


def test_cli_op_mode_miss_is_one_line(root, capsys):
    status, out, err = run(capsys, "cost", "--model", "deepseek-v4-flash", "--fusion", "two-pass", "--prefill", "256",
                           "--cost", "op", "--measured-root", str(root))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("v41graph: error: --cost op: no measured data for node ")


def test_measured_root_must_have_the_layout(tmp_path, capsys):
    status, _, err = run(capsys, "cost", "--prefill", "64", "--cost", "hybrid", "--measured-root", str(tmp_path))
    assert status == 2 and "expected the aiconfigurator layout" in err and err.count("\n") == 1
