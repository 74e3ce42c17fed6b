"""Every serving answer on the most measured basis that covers it, the SOL ceiling beside it (DESIGN.md
decision 11, issue 34 item 2): deploy and simulate default to hybrid where the measured kernel tables
cover the GPU, simulate to the runtime basis where a whole-forward table of the deployment exists, and
off SOL both put the same question on SOL beside the forecast as forecast / SOL."""

from __future__ import annotations

import argparse

import pytest
from helpers import run, run_json

from v41graph.cli.options.cost_options import serving_cost_mode
from v41graph.costs.measured.tiers import TRANSFERS

# V4-Flash on 2 H200s (FP4 experts: the FP8 ones do not fit), a short question
DEPLOY = ("deploy", "--model", "deepseek-v4-flash", "--gpus", "2", "--isl", "2000", "--osl", "50", "--ttft", "2s",
          "--tpot", "80ms", "--requests", "30", "--check", "1", "--checkpoint", "fp4", "--fp4-on-hopper")
SIM = ("simulate", "--rate", "1,4", "--duration", "20", "--prompt", "1024", "--output", "16")


def _args(**kw):
    return argparse.Namespace(**{"cost": None, "measured_root": None, "transfers": TRANSFERS, **kw})


def test_the_default_ladder():
    """FPM admitted → runtime where a table of this GPU and mapping exists → hybrid → SOL; --cost overrides."""
    hybrid = serving_cost_mode(_args(), "h200_sxm")
    assert (hybrid.basis, hybrid.mode.mode, hybrid.chosen, hybrid.why) == (
        "hybrid", "hybrid", "default", "measured kernel tables cover h200_sxm")
    runtime = serving_cost_mode(_args(), "gb300", runtime_table="aisimulate-gb300-off-v1")
    assert (runtime.basis, runtime.mode, runtime.chosen) == ("runtime", None, "default")
    assert "(aisimulate-gb300-off-v1)" in runtime.why
    assert serving_cost_mode(_args(), "gb300", fpm_covers=True, runtime_table="t").basis == "fpm"
    given = serving_cost_mode(_args(cost="sol"), "h200_sxm", runtime_table="t")
    assert (given.basis, given.mode.mode, given.chosen, given.why) == ("sol", "sol", "--cost", None)


@pytest.fixture(scope="module")
def deploy_default(tmp_path_factory):
    from v41graph.cli.main import main
    import contextlib
    import io
    import json
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*DEPLOY, "--json", "-o", str(tmp_path_factory.mktemp("d") / "o")]) == 0
    return json.loads(out.getvalue())


def test_deploy_defaults_to_hybrid_on_h200(deploy_default):
    basis = deploy_default["basis"]
    assert {k: basis[k] for k in ("name", "mode", "chosen", "why")} == {
        "name": "hybrid", "mode": "hybrid", "chosen": "default", "why": "measured kernel tables cover h200_sxm"}
    assert 0 < basis["coverage"]["measured_or_interpolated"] <= 1


def test_deploy_puts_each_pick_on_sol_beside_its_forecast(deploy_default):
    pick = deploy_default["picks"]["aggregated"]
    a, c = pick["analytic"], pick["sol_ceiling"]
    assert set(c) == {"tokens_per_s_per_gpu", "tpot_s", "ttft_s", "ratio"}
    assert c["tpot_s"] <= a["tpot_s"] and c["ttft_s"] <= a["ttft_s"]  # SOL is a lower bound of time…
    assert c["tokens_per_s_per_gpu"] >= a["tokens_per_s_per_gpu"]      # …and a ceiling of throughput
    assert c["ratio"] == {"tokens_per_s_per_gpu": a["tokens_per_s_per_gpu"] / c["tokens_per_s_per_gpu"],
                          "tpot": a["tpot_s"] / c["tpot_s"], "ttft": a["ttft_s"] / c["ttft_s"]}
    assert c["ratio"]["tpot"] > 1.2  # the measured kernels are well above peak


def test_deploy_text_says_the_basis_why_and_the_ceiling(tmp_path, capsys):
    status, out, err = run(capsys, *DEPLOY, "-o", str(tmp_path / "o"))
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith("hybrid: measured kernel tables, then transfers, then SOL — ")
    assert lines[0].endswith("(default for serving answers: the most realistic basis that covers the plan — measured "
                             "kernel tables cover h200_sxm; --cost overrides)")
    assert sum(line.startswith("  SOL ceiling (analytic, forecast / SOL): tokens/s per GPU ") for line in lines) >= 1


def test_deploy_cost_sol_is_sol(tmp_path, capsys):
    d = run_json(capsys, *DEPLOY, "--cost", "sol", "-o", str(tmp_path / "o"))
    assert (d["basis"]["mode"], d["basis"]["chosen"]) == ("sol", "--cost")
    assert all(p is None or "sol_ceiling" not in p for p in d["picks"].values())


def test_simulate_on_gb300_tp4_defaults_to_the_runtime_basis(capsys):
    d = run_json(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--rate", "1", "--duration", "20",
                 "--prompt", "300", "--output", "8")
    assert d["cost_basis"] == "runtime" and (d["basis"]["name"], d["basis"]["chosen"]) == ("runtime", "default")
    assert d["basis"]["why"] == ("a whole-forward table of this GPU and mapping exists (aisimulate-gb300-off-v1) and "
                                 "no FPM table is admitted")
    assert d["runtime"]["fit"]["table"] == "aisimulate-gb300-off-v1"
    _check_ceiling(d["rates"])


def test_simulate_on_gb200_tp4_stays_hybrid_the_table_is_vllms(capsys):
    status, out, _ = run(capsys, "simulate", "--hardware", "gb200", "--tp", "4", "--rate", "1", "--duration", "5",
                         "--prompt", "300", "--output", "8")
    assert status == 0 and out.startswith("hybrid: ")
    assert ("measured kernel tables cover gb200; the whole-forward table of gb200 TP4 "
            "(aisimulate-gb200-calibration-v1) is vllm's, not SGLang's; --cost overrides)") in out.splitlines()[0]


def _check_ceiling(rows):
    for r in rows:
        c = r["sol_ceiling"]
        assert c["ttft_p50_s"] <= r["ttft_s"]["p50"] and c["itl_p50_s"] <= r["itl_s"]["p50"]
        assert c["ratio"] == {"ttft_p50": r["ttft_s"]["p50"] / c["ttft_p50_s"],
                              "itl_p50": r["itl_s"]["p50"] / c["itl_p50_s"],
                              "throughput": r["throughput_tok_s"] / c["throughput_tok_s"]}


def test_simulate_hybrid_default_has_the_sol_ceiling_per_rate_and_sol_has_none(capsys):
    d = run_json(capsys, *SIM, "--tp", "8", "--ep", "8")
    assert (d["basis"]["mode"], d["basis"]["chosen"]) == ("hybrid", "default") and len(d["rates"]) == 2
    _check_ceiling(d["rates"])
    sol = run_json(capsys, *SIM, "--tp", "8", "--ep", "8", "--cost", "sol")
    assert all("sol_ceiling" not in r for r in sol["rates"])
    # the ceiling is the same arrivals on SOL step costs: exactly what --cost sol gives
    for r, s in zip(d["rates"], sol["rates"]):
        c = r["sol_ceiling"]
        assert (c["ttft_p50_s"], c["itl_p50_s"], c["throughput_tok_s"]) == (s["ttft_s"]["p50"], s["itl_s"]["p50"],
                                                                             s["throughput_tok_s"])
    status, out, _ = run(capsys, *SIM, "--tp", "8", "--ep", "8")
    lines = out.splitlines()
    i = lines.index("SOL ceiling (the same arrivals on SOL step costs; forecast / SOL):")
    assert lines[i + 1].startswith("  rate 1.0/s: forecast TTFT p50 ") and " · SOL " in lines[i + 1]
