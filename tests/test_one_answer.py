"""One answer everywhere (issue 37): every command on the same default deployment, one rule for
"fits", and fields that keep one meaning whatever the mapping."""

from __future__ import annotations

import pytest

from helpers import run, run_json

#: the keys that name a deployment (its static bytes are of each command's own workload)
MAPPING_KEYS = ("tp", "dp", "ep", "gpus", "hardware", "chosen", "dp_spelling", "dp_meaning", "line")
DEFAULT = {"tp": 8, "dp": 1, "ep": 8, "gpus": 8, "hardware": "h200_sxm", "chosen": "auto",
           "line": "8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)"}
RECORD_KEYS = {"tp", "dp", "ep", "gpus", "hardware", "chosen", "dp_spelling", "dp_meaning", "line", "static_bytes",
               "budget_bytes", "fits", "shortfall_bytes", "reserve", "reserve_source"}

#: every command that prices or draws a plan, with its defaults (a sweep of one point, in this process)
COMMANDS = {
    "cost": ["cost"],
    "formula": ["formula", "sol_time"],
    "formula-count": ["formula", "token_layers"],
    "ask max-context": ["ask", "max-context"],
    "ask compute-bound": ["ask", "compute-bound"],
    "ask crossover": ["ask", "crossover", "--replay", "off,bounded"],
    "ask derivative": ["ask", "derivative"],
    "ask sensitivity": ["ask", "sensitivity"],
    "memory": ["memory"],
    "compile": ["compile"],
    "simulate": ["simulate"],
    "sweep": ["sweep", "--workers", "1"],
}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `report` writes into the working directory


def test_every_command_defaults_to_the_deployment_cost_picks(capsys):
    """Issue 37 item 1: one default deployment, the same record shape in every command's JSON."""
    records = {name: run_json(capsys, *argv)["deployment"] for name, argv in COMMANDS.items()}
    for name, record in records.items():
        assert set(record) == RECORD_KEYS, name
        assert {k: record[k] for k in DEFAULT} == DEFAULT, name
        assert {k: record[k] for k in MAPPING_KEYS} == {k: records["cost"][k] for k in MAPPING_KEYS}, name
        assert record["fits"] is True and record["budget_bytes"] == 126_900_000_000, name


def test_report_and_dot_print_the_same_deployment_first(capsys, tmp_path):
    report = run_json(capsys, "report", "--out", str(tmp_path / "r"))["deployment"]
    assert {k: report[k] for k in DEFAULT} == DEFAULT
    status, out, err = run(capsys, "dot")
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == f"// deployment: {DEFAULT['line']}"
    assert "tp 8 · ep 8 · dp 1 (8 GPUs)" in out.splitlines()[2]  # the drawing is of that deployment
    for argv in (["formula", "sol_time"], ["memory"], ["compile"]):
        status, out, _ = run(capsys, *argv)
        assert status == 0 and f"deployment: {DEFAULT['line']}" in out.splitlines()[:3]


def test_formula_at_n_equals_cost_at_n(capsys):
    """``formula sol_time --at N=8192`` prices what ``cost --prefill 8192`` prices (66.433 ms on 8 × H200
    tp 8 · ep 8; it was 181.8 ms on one H200, which does not fit)."""
    formula = run_json(capsys, "formula", "sol_time", "--at", "N=8192")
    cost = run_json(capsys, "cost", "--prefill", "8192")
    assert formula["value"] == pytest.approx(cost["total_time_s"], rel=1e-12)
    assert round(formula["value"] * 1e3, 3) == 66.433
    assert formula["deployment"] == cost["deployment"]
    # a mapping given is priced as given, in both
    one = run_json(capsys, "formula", "sol_time", "--at", "N=8192", "--tp", "1")
    assert one["deployment"]["line"] == "1 × h200_sxm: tp 1 (explicit)" and round(one["value"] * 1e3, 1) == 181.8


def test_ask_prices_the_deployment_cost_prices(capsys):
    cost = run_json(capsys, "cost", "--prefill", "8192")
    sens = run_json(capsys, "ask", "sensitivity")
    assert sens["time_s"] == pytest.approx(cost["total_time_s"], rel=1e-12)
    cross = run_json(capsys, "ask", "crossover", "--replay", "off,bounded")
    assert cross["deployment"] == cost["deployment"]


def test_sweep_tp4_over_the_budget_is_invalid_and_off_the_front(capsys):
    """Issue 37 item 2: at tp 4 · ep 4 a 16 × 8K decode batch needs 122.00 GiB of weights and cache, over
    the 118.18 GiB budget (90 % of HBM) that deploy and cost judge by, though under the 131.32 GiB of HBM."""
    out = run_json(capsys, "sweep", "--tp", "4,8", "--ep", "4,8", "--zip", "tp,ep", "--batch", "16", "--pareto",
                   "--workers", "1")
    tp4, tp8 = out["rows"]
    assert "deployment" not in out  # the mappings were given: each row names its own
    assert (tp4["tp"], tp4["fits"], tp4["valid"], tp4["pareto"]) == (4, False, False, False)
    assert round(tp4["static_memory_gib"], 2) == 122.00 and round(tp4["budget_gib"], 2) == 118.18
    assert tp4["per_gpu_memory_gib"] < 141e9 / 2 ** 30  # the raw HBM figure is shown, never called "fits"
    assert tp4["reason"] == ("does not fit: weights + cache 122.00 GiB per GPU over the budget 118.18 GiB "
                             "(90 % of HBM; the decode batch's caches resident)")
    assert (tp8["tp"], tp8["fits"], tp8["valid"], tp8["pareto"]) == (8, True, True, True)


ISSUE_PLAN = ["--prefill", "245", "--decode", "222:128K", "145:884845", "--replay", "bounded"]


@pytest.mark.parametrize("mapping, per_rank", [
    ((), 184 * 40),                                      # auto: 16 × H200 tp 8 · dp 2 · ep 16
    (("--tp", "1"), 22_257),                             # one GPU: the rank is the plan
    (("--tp", "8", "--dp", "2", "--ep", "16"), 184 * 40),
    (("--tp", "8", "--attn-dp", "8", "--ep", "8"), 46 * 40),
])
def test_token_layers_is_the_whole_plans_under_any_mapping(capsys, mapping, per_rank):
    """Issue 37 item 7: ``token_layers`` is the plan's (22,257: 245 prompt tokens under bounded replay,
    21 · 245 + 19 · 128, plus 367 decode tokens × 40 layers) in every mapping; the costed DP rank's
    figure has its own name (rank 0, the busiest by attention work: 184 of the decode requests at dp 2,
    46 at dp 8, one token each through 40 layers)."""
    cost = run_json(capsys, "cost", *ISSUE_PLAN, *mapping)
    compiled = run_json(capsys, "compile", *ISSUE_PLAN, *mapping)
    assert cost["token_layers"] == compiled["token_layers"] == 21 * 245 + 19 * 128 + 367 * 40 == 22_257
    assert cost["token_layers_per_dp_rank"] == compiled["token_layers_per_dp_rank"] == per_rank
    assert cost["deployment"]["line"] == compiled["deployment"]["line"]
    if cost["deployment"]["dp"] > 1:
        assert per_rank == cost["dp_ranks"][0]["tokens"] * 40


def test_formula_token_layers_is_the_plans_on_a_dp_deployment(capsys):
    """512 decodes at 128K need 16 × H200 (tp 8 · dp 2 · ep 16): formula's token_layers is the plan's, 40 B,
    as cost's (its rank's, 40 ⌈B/2⌉, is cost's token_layers_per_dp_rank); the time is the costed rank's."""
    formula = run_json(capsys, "formula", "token_layers", "--decode", "B:L", "--at", "B=512,L=128K")
    cost = run_json(capsys, "cost", "--decode", "512:128K")
    assert formula["deployment"] == cost["deployment"] and cost["deployment"]["dp"] == 2
    assert (formula["expr"], formula["value"]) == ("40*B", cost["token_layers"]) == ("40*B", 40 * 512)
    assert cost["token_layers_per_dp_rank"] == 40 * 256
    time = run_json(capsys, "formula", "sol_time", "--decode", "B:L", "--at", "B=512,L=128K")["value"]
    assert time == pytest.approx(cost["total_time_s"], rel=1e-12)
