"""The SOL gap (fpm gap) and serving from FPM tables (simulate --cost fpm, the serving check)."""

from __future__ import annotations

import math

import pytest
from helpers import run, run_json
from test_fpm_table import plain

from v41graph import CostError, load_model
from v41graph.analysis.forwards.fpm_gap import elasticity, sol_gap
from v41graph.analysis.forwards.fpm_reference import sol_reference
from v41graph.analysis.forwards.fpm_serving_check import (
    CORE_STANDIN,
    OBSERVED,
    error_pct,
    isolated_trace,
    serving_check,
)
from v41graph.analysis.forwards.fpm_step_cost import FpmStepCoster
from v41graph.analysis.serving.step_cost import Piece
from v41graph.costs.fpm.load import load_table
from v41graph.costs.fpm.select import choose
from v41graph.costs.hardware import load_hardware

OFF = "aisimulate-gb300-off-v1"


@pytest.fixture(scope="module")
def off_coster():
    table, model = load_table(OFF), load_model()
    sol = sol_reference(table.identity, model=model)
    return FpmStepCoster(table, model, load_hardware("gb300"), tp=4, allow_unadmitted=True,
                         estimator=choose(table, sol).chosen, sol=sol)


# --------------------------------------------------------------------------- the SOL gap


def test_elasticity_by_hand():
    # observed = 3 * sol^0.5: the slope of log observed on log sol is 0.5
    sol = [1.0, 4.0, 16.0]
    assert elasticity(sol, [3 * s ** 0.5 for s in sol]) == pytest.approx(0.5, abs=1e-12)
    assert elasticity([1.0, 1.2], [5.0, 9.0]) is None  # SOL spans less than 1.5x: no slope


def test_gap_rows_and_summary_by_hand(tmp_path):
    t = load_table(plain(tmp_path, ["prefill,1,4,0,100", "prefill,1,8,0,100", "decode,1,1,0,50"]))
    g = sol_gap(t, lambda q: q.total_prefill_tokens * 2.0)
    assert [r.efficiency for r in g.rows] == [2 / 50, 8 / 100, 16 / 100]
    pre = g.summary[0]
    assert (pre.phase, pre.batch, pre.points, pre.median_efficiency) == ("prefill", 1, 2, 0.12)
    assert pre.elasticity == 0.0  # the measured time did not move while the SOL doubled


def test_gap_cli_on_gb300_states_basis_and_efficiency(capsys):
    data = run_json(capsys, "fpm", "gap", OFF)
    g = data["tables"][0]
    assert g["bases"] == ["sol"] and len(g["rows"]) == 124 and data["plot"] is None
    for r in g["rows"]:
        assert r["efficiency"] == pytest.approx(r["sol_ms"] / r["observed_ms"], rel=1e-12)
    status, out, _ = run(capsys, "fpm", "gap", OFF)
    assert status == 0 and "efficiency = SOL / measured" in out and "SGLang native DeviceTimer" in out


def test_gap_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    path = tmp_path / "gap.png"
    status, out, _ = run(capsys, "fpm", "gap", OFF, "--plot", str(path))
    assert status == 0 and path.stat().st_size > 10_000 and f"wrote PNG to {path}" in out


# --------------------------------------------------------------------------- FPM step costs


def test_step_coster_prices_decode_at_past_kv_and_prefill_from_the_table(off_coster):
    t = off_coster.table
    at = {p.key: p.observed_ms for p in t.points}
    # a decode of context 129 (prompt 128 + 1 emitted token) runs with past KV 128
    assert off_coster.forward_s((), off_coster.decode_key(1, 129)) == at[("decode", 1, 1, 128)] / 1000
    assert off_coster.forward_s((Piece(128, 0, 128),), (0, 0)) == at[("prefill", 1, 128, 0)] / 1000


def test_step_coster_refuses_with_the_failure_category(off_coster):
    with pytest.raises(CostError, match=r"cannot cost a step \(unsupported\): the plan mixes"):
        off_coster.forward_s((Piece(8, 0, 8),), (1, 100))
    with pytest.raises(CostError, match=r"\(outside measured domain\)"):
        off_coster.forward_s((), (1, 5000))
    tp8 = FpmStepCoster(off_coster.table, off_coster.model, off_coster.hardware, tp=8, allow_unadmitted=True)
    with pytest.raises(CostError, match=r"\(identity mismatch\): identity differs: tp \(table 4, query 8\)"):
        tp8.forward_s((), (1, 100))


def test_serving_check_means_are_the_step_costs_of_the_standin(off_coster):
    c = serving_check(off_coster, "off")
    out, prompts = CORE_STANDIN["output"], CORE_STANDIN["prompts"]
    # by hand: each request alone is one prefill (P new), out - 1 decodes at past KV P .. P + out - 2, then under
    # the overlap scheduler (the default) one more decode step before SGLang learns of the finish (past KV P + out - 1)
    steps = []
    for p in prompts:
        steps.append(off_coster.forward_s((Piece(p, 0, p),), (0, 0)))
        steps += [off_coster.forward_s((), (1, p + i + 1)) for i in range(out)]
    forward = sum(steps) / len(steps) * 1000
    assert c["metrics"]["forward_ms"]["v41graph"] == pytest.approx(forward, rel=1e-12)
    # TTFT: the prefill, then the first decode step, whose end emits the token; TPOT: token k leaves when step
    # k + 1 ends, the last one with the extra step, so the out - 1 gaps are the decodes after the first
    prefill = [off_coster.forward_s((Piece(p, 0, p),), (0, 0)) for p in prompts]
    decodes = [[off_coster.forward_s((), (1, p + i + 1)) for i in range(out)] for p in prompts]
    ttft = sum(f + d[0] for f, d in zip(prefill, decodes)) / len(prompts) * 1000
    assert c["metrics"]["ttft_ms"]["v41graph"] == pytest.approx(ttft, rel=1e-12)
    tpot = sum(sum(d[1:]) / (out - 1) for d in decodes) / len(prompts) * 1000
    assert c["metrics"]["tpot_ms"]["v41graph"] == pytest.approx(tpot, rel=1e-12)
    off = serving_check(off_coster, "off", overlap=False)  # the token at the prefill's end: today's v41graph before
    assert off["metrics"]["ttft_ms"]["v41graph"] == pytest.approx(sum(prefill) / len(prompts) * 1000, rel=1e-12)
    assert off["metrics"]["tpot_ms"]["v41graph"] == pytest.approx(
        sum(sum(d[:-1]) / (out - 1) for d in decodes) / len(prompts) * 1000, rel=1e-12)
    without_extra = [f for p, d in zip(prefill, decodes) for f in (p, *d[:-1])]  # no step after the last token
    assert off["metrics"]["forward_ms"]["v41graph"] == pytest.approx(sum(without_extra) / len(without_extra) * 1000,
                                                                     rel=1e-12)
    assert (c["emission"], off["emission"]) == ("overlap", "step_end")
    # the TTFT error against the observed 365.3 ms: -50.2 % with the token at the prefill's end, -8.6 % one step late
    assert round(off["metrics"]["ttft_ms"]["v41graph_error_pct"], 1) == -50.2
    assert round(c["metrics"]["ttft_ms"]["v41graph_error_pct"], 1) == -8.6
    # acceptance: the native forward interval of the core scope within 5 %
    obs = OBSERVED[("off", "core")]["forward_ms"]
    assert abs(error_pct(c["metrics"]["forward_ms"]["v41graph"], obs)) < 5
    assert c["metrics"]["ttft_ms"]["aisimulate_error_pct"] == pytest.approx((393.7 - 365.3) / 365.3 * 100)


def test_isolated_trace_spaces_requests_apart():
    assert [(a.t, a.prompt) for a in isolated_trace((127, 128), 4, 60.0)] == [(0.0, 127), (60.0, 128)]


def test_simulate_cost_fpm_cli(capsys):
    status, out, err = run(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--cost", "fpm")
    assert (status, out) == (2, "") and err.count("\n") == 1 and "--allow-unadmitted" in err
    status, out, err = run(capsys, "simulate", "--hardware", "h200_sxm", "--tp", "8", "--ep", "8", "--serving-check")
    assert status == 2 and "needs --cost fpm" in err  # hybrid by default there: nothing measured to check against
    data = run_json(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--cost", "fpm", "--allow-unadmitted",
                    "--serving-check")
    assert data["fpm"]["table"] == OFF and set(data["metrics"]) == {"forward_ms", "ttft_ms", "tpot_ms"}
    on = run_json(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--cost", "fpm", "--allow-unadmitted",
                  "--fpm-replay", "bounded", "--serving-check")
    assert on["fpm"]["table"] == "aisimulate-gb300-on-v1" and on["metrics"]["forward_ms"]["observed"] is None
    assert "report/README.md" in on["why_no_observation"]
    assert math.isfinite(on["metrics"]["forward_ms"]["v41graph"])
    assert data["basis"] == {"name": "FPM", "mode": "fpm", "chosen": "--cost",
                             "identity": f"{OFF} (gb300 TP4, decoder replay off, not admitted)"}
    assert (data["deployment"]["tp"], data["deployment"]["gpus"]) == (4, 4)


def test_simulate_cost_fpm_text_starts_with_the_basis_and_deployment(capsys):
    status, out, _ = run(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--cost", "fpm",
                         "--allow-unadmitted", "--rate", "1", "--duration", "2", "--prompt", "512", "--output", "8")
    lines = out.splitlines()
    assert status == 0
    assert lines[0] == (f"FPM: whole-forward measured table — identity {OFF} "
                        "(gb300 TP4, decoder replay off, not admitted)")
    assert lines[1].startswith("deployment: 4 × gb300: tp 4")


def test_serving_default_is_fpm_only_where_an_admitted_table_covers_the_plan():
    import argparse

    from v41graph.cli.options.cost_options import serving_cost_mode
    from v41graph.analysis.serving.step_basis import admitted_table
    from v41graph.costs.measured.tiers import TRANSFERS
    args = argparse.Namespace(cost=None, measured_root=None, transfers=TRANSFERS)
    assert serving_cost_mode(args, "gb300", fpm_covers=True) == ("fpm", None, "default",
                                                                 "an admitted whole-forward table covers it")
    assert [admitted_table(gpu, 4) for gpu in ("gb200", "gb300")] == [None, None]  # none is admitted yet
    assert serving_cost_mode(argparse.Namespace(**{**vars(args), "cost": "fpm"}), "gb300") == ("fpm", None, "--cost",
                                                                                                None)
