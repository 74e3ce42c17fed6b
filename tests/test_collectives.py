"""Collectives as SGLang runs them: the count per layer of its V4 forward, and the algorithm and table per size.

SGLang's ``DeepseekV4DecoderLayer.forward`` (sgl-project/sglang python/sglang/srt/models/deepseek_v4.py):
``wo_b`` is a ``RowParallelLinear(reduce_results=attn_tp_size > 1)`` (one all-reduce over attn-TP); the MoE
(``DeepseekV2MoE``) without an a2a backend ends in ``tensor_model_parallel_all_reduce``; with DeepEP it
dispatches and combines, and under attn-TP > 1 the tokens are split before it and ``attn_tp_all_gather``-ed
after (``SGLANG_DSV4_FIX_TP_ATTN_A2A_SCATTER``, default on); under DP attention without an a2a backend,
``dp_gather_partial`` gathers every rank's tokens first.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from v41graph import Plan, Request, load_model
from v41graph.costs.hardware import load_hardware
from v41graph.costs.measured import boundaries as B
from v41graph.costs.measured.layout import VENDORED, extra_root
from v41graph.costs.measured.tiers import CostMode
from v41graph.errors import PlanError
from v41graph.ir.ops import Communication
from v41graph.passes import compile

PREFILL, DECODE = [Request.prefill(8192)], [Request.decode(8192, copies=64)]
#: per layer, SGLang's V4 forward at 8 GPUs: (tp, dp, ep, a2a) → the collectives, in graph order
EXPECTED = {
    (8, 1, 8, "none"): ["attn.all_reduce", "moe.all_reduce"],
    (8, 1, 8, "deepep"): ["attn.all_reduce", "moe.dispatch", "moe.combine_a2a", "moe.all_gather"],
    (8, 1, 1, "deepep"): ["attn.all_reduce", "moe.all_reduce"],  # no EP: nothing to dispatch
    (1, 8, 8, "deepep"): ["moe.dispatch", "moe.combine_a2a"],  # DP attention: no attn-TP collective
    (1, 8, 8, "none"): ["moe.dp_gather", "moe.all_reduce"],
}


def _collectives(graph, layer: int) -> list[str]:
    return [nid.split(".", 1)[1] for nid in graph.topological_order()
            if graph.nodes[nid].layer == layer and isinstance(graph.nodes[nid].op, Communication)]


@pytest.mark.parametrize("requests", [PREFILL, DECODE], ids=["prefill", "decode"])
@pytest.mark.parametrize("mapping", list(EXPECTED), ids=lambda m: "tp{} dp{} ep{} {}".format(*m))
def test_collectives_per_layer_are_sglangs_v4_forward(requests, mapping):
    tp, dp, ep, a2a = mapping
    m = load_model("deepseek-v4-flash")
    graph = compile(m, Plan(requests, tp=tp, dp=dp, ep=ep, moe_a2a=a2a), "h200_sxm").graph
    for layer in range(m.num_layers):
        assert _collectives(graph, layer) == EXPECTED[mapping], layer


def test_without_an_a2a_backend_the_shared_expert_is_tp_split_over_the_group():
    m = load_model("deepseek-v4-flash")
    for a2a, shape in (("none", (8192, 2 * 2048 // 8, 4096)), ("deepep", (8192 // 8, 2 * 2048, 4096))):
        c = compile(m, Plan(PREFILL, tp=8, ep=8, moe_a2a=a2a), "h200_sxm",
                    cost=CostMode("hybrid", measured_root=str(VENDORED)))
        coords = dict(c.graph.annotation("schedule")["L3.moe.shared"].op.parts[0].coords)
        assert (coords["m"], coords["n"], coords["k"]) == shape, a2a


def test_moe_a2a_is_checked():
    with pytest.raises(PlanError, match=r"plan moe_a2a: unknown value 'nccl' \(expected one of deepep, none\)"):
        Plan(PREFILL, moe_a2a="nccl")


def _part(plan, node, root=str(VENDORED)):
    c = compile(load_model("deepseek-v4-flash"), plan, "h200_sxm", cost=CostMode("hybrid", measured_root=root))
    part = c.graph.annotation("schedule")[node].op.parts[0]
    return part, dict(part.coords)


def test_all_reduce_reads_sglangs_custom_all_reduce_rows_in_elements_eager_in_prefill_graph_in_decode():
    # 8192 tokens × 4096 bf16 values = 33,554,432 elements (64 MiB): SGLang's call falls back to NCCL above
    # 8 MiB, and the collector timed that very call; prefill runs eager, decode inside a CUDA graph
    part, coords = _part(Plan(PREFILL, tp=8, ep=8, moe_a2a="none"), "L3.attn.all_reduce")
    assert part.table == "comm/sglang/custom_allreduce_perf" and part.tier == "measured"
    assert (coords["backend"], coords["message_size"]) == ("sglang_eager", 8192 * 4096)
    assert round(part.time * 1e3, 4) == 0.3442  # the row at 33,554,432 elements, 8 GPUs, eager
    part, coords = _part(Plan(DECODE, tp=8, ep=8, moe_a2a="none"), "L3.moe.all_reduce")
    assert (coords["backend"], coords["message_size"]) == ("sglang_graph", 64 * 4096)
    assert round(part.time * 1e3, 4) == 0.0149


def test_a_table_row_counts_elements():
    # an all-reduce row of n half elements moves 2n bytes: ring 2(p-1)/p of them per GPU over NVLink
    hw = load_hardware("h200_sxm")
    n = 33554432
    t = B.collective_sol({"op_name": "all_reduce", "nccl_dtype": "half", "num_gpus": 8, "message_size": n}, hw)
    assert t == pytest.approx(float(Fraction(2 * 7, 8) * 2 * n / hw.nvlink_bandwidth))


def test_deepep_stands_in_from_nccl_where_no_deepep_table_answers():
    part, coords = _part(Plan(PREFILL, tp=8, ep=8), "L3.moe.dispatch")  # the vendored slice has no DeepEP table
    assert (part.tier, part.table, coords["op_name"]) == ("transfer:op", "comm/nccl/nccl_perf", "alltoall")


@pytest.mark.skipif(extra_root() is None, reason="the DeepEP tables ship with aiconfigurator-core (measured extra)")
@pytest.mark.parametrize("requests, mode, tokens", [(PREFILL, "normal", 1024), (DECODE, "ll", 8)],
                         ids=["prefill", "decode"])
def test_deepep_normal_in_prefill_low_latency_in_decode(requests, mode, tokens):
    for node, phase in (("L3.moe.dispatch", "dispatch"), ("L3.moe.combine_a2a", "combine")):
        part, coords = _part(Plan(requests, tp=8, ep=8), node, root=None)
        assert part.table == f"comm/sglang/wideep_deepep_{mode}_perf" and part.tier == "measured"
        # each attn-TP rank dispatches its eighth of the tokens, top-6 copies of 4096 values
        assert coords["num_token"] == tokens and (coords["num_topk"], coords["hidden_size"]) == (6, 4096)
        assert coords.get(f"{phase}_sms", 20) == 20  # DeepEP's default SM budget (normal mode)


def test_cli_names_the_a2a_backend_and_refuses_an_unknown_one(capsys):
    from helpers import run, run_json

    data = run_json(capsys, "cost", "--decode", "64:8K", "--tp", "8", "--ep", "8", "--moe-a2a", "none")
    assert data["deployment"]["line"].startswith("8 × h200_sxm: tp 8 · ep 8 · no a2a (MoE all-reduce) (explicit)")
    code, out, err = run(capsys, "cost", "--decode", "64:8K", "--tp", "8", "--ep", "8", "--moe-a2a", "nccl")
    assert code == 2 and out == "" and "--moe-a2a: invalid choice: 'nccl'" in err
