"""Questions answered by solving (analysis/symbolic/solvers.py, analysis/symbolic/calculus.py,
cli/ask.py) and graph diff
(analysis/diff.py). Every answer is checked on both sides by the commands that measure it
(``memory``, ``cost``), never by the solver itself."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sympy

from helpers import run, run_json
from v41graph import Plan, Request, closed_form, load_model
from v41graph.ask import right_derivative, sensitivity, ttft_by_op_rate
from v41graph.costs.hardware import load_hardware
from v41graph.passes import compile
from v41graph.symbols import N


def _fits(capsys, n: int) -> bool:
    data = run_json(capsys, "memory", "--context", str(n), "--hardware", "h200_sxm", "--tp", "8", "--ep", "8",
                    "--allow-past-max-position")
    return data["memory_per_gpu"]["fits"]


def test_max_context_fits_and_one_more_does_not(capsys):
    data = run_json(capsys, "ask", "max-context", "--hardware", "h200_sxm", "--tp", "8", "--ep", "8")
    n = data["checks"]["memory_only"]
    assert isinstance(n, int) and n > 0 and data["exact"] is True
    assert _fits(capsys, n) and not _fits(capsys, n + 1)
    # one request's cache holds more than the model's 1,048,576 positions: the answer is the limit,
    # headlined; the memory-only figure comes second
    assert n > 1_048_576 and data["value"] == data["checks"]["max_position"] == 1_048_576
    assert data["checks"]["bound_by"] == "max_position" and data["checks"]["within_max_position"] is False
    status, out, err = run(capsys, "ask", "max-context", "--hardware", "h200_sxm", "--tp", "8", "--ep", "8")
    # the checkpoint the weights are (V4.1 on h200: FP4, with its caveat) below the deployment line
    assert (status, err) == (0, "") and out.startswith("deployment: 8 × h200_sxm: tp 8 · ep 8 (explicit)\n"
                                                       "checkpoint: deepseek-ai/DeepSeek-V4.1-Flash (fp4 experts")
    assert out.splitlines()[2].startswith("max-context: 1048576  (exact; the model's max_position")
    assert f"memory alone would hold {n:,} tokens" in out.splitlines()[2]


def _total(capsys, n: int, replay: str) -> float:
    # crossover is a closed form in N on the deployment `cost` picks (8 × H200 tp 8 · ep 8): cost the same mapping
    return run_json(capsys, "cost", "--prefill", str(n), "--replay", replay, "--tp", "8", "--ep", "8")["total_time_s"]


def test_crossover_is_checked_on_both_sides(capsys):
    data = run_json(capsys, "ask", "crossover", "--replay", "off,bounded", "--metric", "sol_time", "--ratio", "1.2")
    n = data["value"]
    assert data["bracket"] == [n - 1, n]
    # the sympy root of off(N) = 1.2 × bounded(N) on the closed-form pieces lies in the bracket (on 8 × H200 a
    # quadratic branch: its root is a surd)
    assert data["exact"] is True and n - 1 < sympy.sympify(data["checks"]["root"]) <= n
    assert _total(capsys, n, "off") >= 1.2 * _total(capsys, n, "bounded")
    assert _total(capsys, n - 1, "off") < 1.2 * _total(capsys, n - 1, "bounded")


def test_crossover_at_ratio_one_answers_from_n_1(capsys):
    # off and bounded replay are the same forward at N = 1: a ratio of 1 is reached at once
    data = run_json(capsys, "ask", "crossover", "--replay", "off,bounded", "--ratio", "1.0")
    assert (data["value"], data["exact"], data["checks"]["ratio_at"]) == (1, True, 1.0)
    status, out, err = run(capsys, "ask", "crossover", "--replay", "off,bounded", "--ratio", "1.0")
    # the deployment's header comes first (the smallest that fits, as `cost` and `formula`)
    answer = next(line for line in out.splitlines() if line.startswith("crossover:"))
    assert (status, err) == (0, "") and answer.startswith("crossover: 1  (exact; from N = 1")


def test_crossover_needs_two_plans(capsys):
    status, out, err = run(capsys, "ask", "crossover", "--metric", "sol_time")
    assert status == 2 and out == "" and err.count("\n") == 1 and "two comma-separated" in err


def test_token_layers_derivative_under_bounded_replay_is_a_piecewise(capsys):
    cf = closed_form(load_model(), Plan([Request.prefill(N)], decoder_replay="bounded"), "token_layers")
    d = right_derivative(cf.expr, N)
    indicator = sympy.Piecewise((1, N < 128), (0, True))  # [N < 128]
    assert d == sympy.Piecewise((40, N < 128), (21, True))
    assert d == sympy.piecewise_fold(21 + 19 * indicator)
    for n in (1, 64, 127, 128, 129, 5000):  # the forward difference at integers
        assert cf(N=n + 1) - cf(N=n) == d.subs(N, n)
    status, out, err = run(capsys, "ask", "derivative", "--metric", "token_layers", "--replay", "bounded")
    assert (status, err) == (0, "") and "f'(N) = Piecewise((40, N < 128), (21, True))" in out


def test_compute_bound_batch_checked_by_the_schedule(capsys):
    data = run_json(capsys, "ask", "compute-bound", "--context", "8192")
    b = data["value"]
    assert data["exact"] is True and sympy.ceiling(sympy.Rational(data["checks"]["root"])) == b

    def resources(batch: int) -> dict:
        # the mapping ask chose (auto: the smallest that fits one request at 8K)
        return run_json(capsys, "cost", "--decode", f"{batch}:8192", "--tp", "8", "--ep", "8")["resources_s"]
    at, before = resources(b), resources(b - 1)
    assert at["compute"] >= at["memory"] and before["compute"] < before["memory"]


def test_bandwidth_sensitivity_matches_a_finite_difference():
    model, plan, hw = load_model(), Plan([Request.decode(8192, copies=64)]), load_hardware("h200_sxm")
    s = sensitivity(model, plan, hw)
    assert s["elasticity_bandwidth"] < -0.5  # a 64-request decode step is mostly memory-bound
    step = hw.hbm_bandwidth // 10_000
    faster = compile(model, plan, replace(hw, hbm_bandwidth=hw.hbm_bandwidth + step)).report("schedule")
    slope = (faster.total_time_s - s["time_s"]) / step
    assert abs(slope - s["dT_d_bandwidth_s_per_Bps"]) <= 1e-3 * abs(s["dT_d_bandwidth_s_per_Bps"])
    assert -1 <= s["elasticity_bandwidth"] + s["elasticity_peak"] <= 0


def test_ttft_rate_by_op_family_adds_up_to_the_closed_form_slope():
    model, plan = load_model(), Plan([Request.prefill(N)], decoder_replay="bounded")
    rates = ttft_by_op_rate(model, plan)
    cf = closed_form(model, plan, "sol_time")
    total = sum(r.subs(N, 8192) for r in rates.values())
    # central difference: exact at 8192 for the quadratic terms; floors count at their mean rate
    slope = (cf(N=8192 + 32) - cf(N=8192 - 32)) / 64
    assert abs(float(total) - float(slope)) <= 1e-6 * abs(float(slope))
    assert {"Fused[kv_unpack]", "Fused[mhc]", "Gemm"} <= set(rates)


def test_diff_of_replay_policies(capsys):
    data = run_json(capsys, "diff", "--replay", "off,bounded", "--prefill", "1000")
    a = compile(load_model(), Plan([Request.prefill(1000)]), "h200_sxm").graph
    b = compile(load_model(), Plan([Request.prefill(1000)], decoder_replay="bounded"), "h200_sxm").graph
    assert [e["id"] for e in data["removed"]] == sorted(set(a.nodes) - set(b.nodes)) == ["L20.hc_ffn.mega"]
    assert sorted(e["id"] for e in data["added"]) == sorted(set(b.nodes) - set(a.nodes))  # listed by |Δt|
    sa, sb = a.annotation("schedule"), b.annotation("schedule")
    attn = next(e for e in data["changed"] if e["id"] == "L30.attn")
    assert attn["what"] == ["tokens"]
    assert attn["time_delta_s"] == float(sb["L30.attn"].sol.time) - float(sa["L30.attn"].sol.time) < 0
    total = sum(float(s.sol.time) for s in sb.values()) - sum(float(s.sol.time) for s in sa.values())
    assert abs(data["total_time_delta_s"] - total) <= 1e-12
    status, out, err = run(capsys, "diff", "--replay", "off,bounded", "--prefill", "1000", "--limit", "1")
    assert (status, err) == (0, "") and "added 4  removed 1  changed" in out and "… 3 more added" in out


def test_sensitivity_cli_text_and_json_agree(capsys):
    data = run_json(capsys, "ask", "sensitivity", "--prefill", "4096")
    status, out, err = run(capsys, "ask", "sensitivity", "--prefill", "4096")
    assert (status, err) == (0, "")
    assert f"elasticity_bandwidth: {data['elasticity_bandwidth']}\n" in out
    assert data["time_s"] == run_json(capsys, "cost", "--prefill", "4096")["total_time_s"]


def test_two_plans_vary_the_one_pair_and_share_the_rest():
    """Issue 36, item 5: which option varies between ``ask crossover``'s (and ``diff``'s) two plans is analysis's."""
    from v41graph.analysis.symbolic.ask_answers import plan_policies, two_plans
    from v41graph.errors import PlanError
    from v41graph.model.mapping import Mapping
    m = Mapping(tp=4, ep=8, dp=2)
    assert plan_policies("off", "unfused", m) == {"decoder_replay": "off", "fusion": "unfused", "tp": 4, "ep": 8,
                                                  "dp": 2}
    a, b = two_plans("ask", ("x", "y"), ("bounded",), ("default",), m)
    assert (a[0], b[0], a[1] == b[1], a[1]["decoder_replay"], a[1]["fusion"]) == ("x", "y", True, "bounded", None)
    a, b = two_plans("ask", ("x",), ("off",), ("unfused", "single-pass"), m)
    assert (a[0], b[0], a[1]["fusion"], b[1]["fusion"]) == ("x", "x", "unfused", "single-pass")
    for pairs in ((("x",), ("off",), ("default",)), (("x", "y"), ("off", "bounded"), ("default",))):
        with pytest.raises(PlanError, match=r"^diff: give exactly one of --model, --replay, --fusion two"):
            two_plans("diff", *pairs, m)


def test_prompt_plan_and_plans_diff_are_what_ask_and_diff_run(capsys):
    """Issue 36, item 5: the plans asked of and diff's two compiles are analysis's; diff --json is their diff."""
    import json

    from v41graph.analysis.diff import plans_diff
    from v41graph.analysis.symbolic.ask_answers import plan_policies, prompt_plan
    from v41graph.model.mapping import Mapping
    policies = plan_policies("bounded", "unfused", Mapping(tp=2))
    symbolic, numeric = prompt_plan(policies), prompt_plan(policies, 512)
    assert (symbolic.requests, numeric.requests) == ((Request.prefill(N),), (Request.prefill(512),))
    assert (numeric.decoder_replay, numeric.fusion, numeric.tp) == ("bounded", "unfused", 2)
    m = load_model()
    off, bounded = plan_policies("off", "default", Mapping()), plan_policies("bounded", "default", Mapping())
    d = plans_diff((m, off), (m, bounded), "h200_sxm", 512)
    assert [e["id"] for e in d["removed"]] == ["L20.hc_ffn.mega"] and len(d["added"]) == 4
    printed = run_json(capsys, "diff", "--replay", "off,bounded", "--prefill", "512")
    assert {k: printed[k] for k in d} == json.loads(json.dumps(d))
