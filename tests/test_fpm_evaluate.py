"""Held-out evaluation: leave-one-out and holdout CSVs, always beside the two mean baselines."""

from __future__ import annotations

import json
import statistics

import pytest

from helpers import run, run_json
from test_fpm_table import GB200, plain
from v41graph.costs.fpm.evaluate import Errors, evaluate
from v41graph.costs.fpm.load import load_table


@pytest.fixture(scope="module")
def loo():
    return evaluate(load_table(GB200))


def test_gb200_leave_one_out_baselines_match_the_issue(loo):
    # 3.887 and 3.380 are derived by plain arithmetic below (test_..._by_plain_arithmetic and
    # test_gb200_per_phase_mean_by_plain_arithmetic), not copied from the evaluator's output
    assert loo.method == "leave-one-out" and len(loo.rows) == 126
    assert round(loo.all_points["table mean"].mape, 3) == 3.887
    assert round(loo.all_points["per-phase mean"].mape, 3) == 3.380


def test_gb200_leave_one_out_baselines_by_plain_arithmetic():
    ys = [p.observed_ms for p in load_table(GB200).points]
    n, total = len(ys), sum(ys)
    table_mean = statistics.fmean(abs((total - y) / (n - 1) - y) / y * 100 for y in ys)
    assert round(table_mean, 3) == 3.887


def _per_phase_mean_mape(keep) -> float:
    """Leave-one-out MAPE (%) of the per-phase mean over the points ``keep`` selects: each point is
    predicted by the mean of every other point of its phase (prefill or decode)."""
    points = load_table(GB200).points
    errors = []
    for p in filter(keep, points):
        others = [q.observed_ms for q in points if q.phase == p.phase and q is not p]
        errors.append(abs(statistics.fmean(others) - p.observed_ms) / p.observed_ms * 100)
    return statistics.fmean(errors)


def test_gb200_per_phase_mean_by_plain_arithmetic(loo):
    # over all 126 points: 3.380 %; over the 114 in FPM's domain (the 12 corners out, asserted in
    # test_gb200_corner_points_are_out_of_domain), the points FPM is compared on: 3.301 %
    outside = {r.point.key for r in loo.rows if r.answer.tier == "unsupported"}
    assert round(_per_phase_mean_mape(lambda p: True), 3) == 3.380
    assert round(_per_phase_mean_mape(lambda p: p.key not in outside), 3) == 3.301
    assert _per_phase_mean_mape(lambda p: True) == pytest.approx(loo.all_points["per-phase mean"].mape, rel=1e-12)
    assert _per_phase_mean_mape(lambda p: p.key not in outside) == \
        pytest.approx(loo.in_domain["per-phase mean"].mape, rel=1e-12)


def test_gb200_leave_one_out_fpm_figures(loo):
    # Deterministic figures of this predictor on this table (docs/fpm.md quotes them).
    fpm = loo.in_domain["fpm"]
    assert (fpm.count, round(fpm.mape, 3), round(fpm.median, 3), round(fpm.worst, 3)) == (114, 3.693, 3.178, 10.132)
    # derived: test_gb200_per_phase_mean_by_plain_arithmetic
    assert round(loo.in_domain["per-phase mean"].mape, 3) == 3.301
    assert loo.out_of_domain["nearest point"].count == 12
    assert loo.verdict.endswith("FPM beats the table mean but NOT the per-phase mean; it is no better predictor "
                                "than a mean.")


def test_gb200_leave_one_out_point_by_hand(loo):
    # Held out (prefill, batch 1, 8 new, 128 past): its row KV 128 brackets 4..16 and its column
    # 8 brackets KV 0..512; both are one-axis cells, so the prediction is their mean.
    obs = {(p.total_prefill_tokens, p.total_kv_read_tokens): p.observed_ms for p in load_table(GB200).points
           if p.phase == "prefill" and p.batch_size == 1}
    row = obs[4, 128] + (obs[16, 128] - obs[4, 128]) * (8 - 4) / (16 - 4)
    col = obs[8, 0] + (obs[8, 512] - obs[8, 0]) * 128 / 512
    [r] = [r for r in loo.rows if r.point.key == ("prefill", 1, 8, 128)]
    assert r.answer.predicted_ms == pytest.approx((row + col) / 2, rel=1e-12)


def test_gb200_corner_points_are_out_of_domain(loo):
    outside = {r.point.key for r in loo.rows if r.answer.tier == "unsupported"}
    assert ("prefill", 1, 1, 0) in outside and ("decode", 2, 2, 4096) in outside and len(outside) == 12


def test_evaluation_is_deterministic(capsys):
    first = run_json(capsys, "fpm", "evaluate", GB200, "--estimator", "interpolation")
    second = run_json(capsys, "fpm", "evaluate", GB200, "--estimator", "interpolation")
    assert first == second and round(first["in_domain"]["fpm"]["mape"], 3) == 3.693


def test_cli_text_shows_figures_baselines_and_verdict(capsys):
    status, out, err = run(capsys, "fpm", "evaluate", GB200, "--estimator", "interpolation")
    assert status == 0 and err == ""
    assert "method: leave-one-out over 126 points" in out
    assert "table mean       n=126  MAPE  3.887%" in out and "per-phase mean   n=126  MAPE  3.380%" in out
    assert "worst FPM points:" in out and "verdict: FPM MAPE 3.693%" in out and "NOT the per-phase mean" in out


def test_errors_by_hand():
    e = Errors.of([(110.0, 100.0), (90.0, 100.0), (150.0, 200.0), (200.0, 200.0)])
    # errors 10, 10, 25, 0 %; WAPE (10 + 10 + 50 + 0) / 600; p90 between 10 and 25 at 0.7 → 20.5
    assert (e.count, e.mape, e.median, e.worst) == (4, 11.25, 10.0, 25.0)
    assert e.wape == pytest.approx(70 / 600 * 100) and e.p90 == pytest.approx(20.5)


def test_small_table_leave_one_out_by_hand(tmp_path):
    table = load_table(plain(tmp_path, ["decode,1,1,0,10", "decode,1,1,10,20", "decode,1,1,20,40",
                                        "prefill,1,4,0,100"]))
    ev = evaluate(table)
    # Only the middle decode point is inside what the others span: (10 + 40)/2 = 25 → 25 %.
    assert ev.in_domain["fpm"].count == 1 and ev.in_domain["fpm"].mape == 25.0
    # Baselines for it: table mean of the other three (10 + 40 + 100)/3 = 50 → 150 %; decode mean 25 → 25 %.
    assert ev.in_domain["table mean"].mape == pytest.approx(150.0)
    assert ev.in_domain["per-phase mean"].mape == pytest.approx(25.0)
    # The lone prefill point has no other prefill point to average: that baseline answers nothing there.
    assert ev.all_points["per-phase mean"].count == 3 and ev.all_points["table mean"].count == 4
    # 25 % vs 150 % and 25 %: a tie is not a win.
    assert ev.verdict.endswith("FPM beats the table mean but NOT the per-phase mean; it is no better predictor "
                               "than a mean.")


def test_verdicts_by_hand(tmp_path):
    # On the line y = 10 + KV the held-out middle point is predicted exactly (10 + 30/3 = 20, 0 %);
    # both means of the others are (10 + 40)/2 = 25 → 25 %.
    line = evaluate(load_table(plain(tmp_path, ["decode,1,1,0,10", "decode,1,1,10,20", "decode,1,1,30,40"])))
    assert line.in_domain["fpm"].mape == 0.0 and line.in_domain["table mean"].mape == 25.0
    assert line.verdict.endswith("FPM beats both baselines.")
    # A zig-zag: (10 + 10)/2 = 10 against 40 → 75 %; both means of the others are 10 → 75 % too.
    (tmp_path / "z").mkdir()
    zig = evaluate(load_table(plain(tmp_path / "z", ["decode,1,1,0,10", "decode,1,1,10,40", "decode,1,1,20,10"])))
    assert zig.in_domain["fpm"].mape == 75.0
    assert zig.verdict.endswith("FPM does NOT beat either baseline; do not present it as a better predictor "
                                "than a mean.")


def test_holdout_csv_by_hand(tmp_path, capsys):
    folder = plain(tmp_path, ["decode,1,1,0,10", "decode,1,1,20,30", "prefill,1,4,0,100", "prefill,1,8,0,200"])
    csv = tmp_path / "holdout.csv"
    csv.write_text("run,phase,batch_size,total_prefill_tokens,total_kv_read_tokens,observed_ms\n"
                   "a,decode,1,,10,25\n"       # FPM 20 → 20 %; table mean 85 → 240 %; decode mean 20 → 20 %
                   "b,prefill,1,6,0,120\n"     # FPM 150 → 25 %; table mean 85 → 29.17 %; prefill mean 150 → 25 %
                   "c,prefill,2,6,0,100\n", encoding="utf-8")  # batch 2: out of domain
    data = run_json(capsys, "fpm", "evaluate", str(folder), "--holdout", str(csv))
    assert data["method"] == f"holdout {csv}" and data["points"] == 3
    assert data["in_domain"]["fpm"]["count"] == 2 and data["in_domain"]["fpm"]["mape"] == pytest.approx(22.5)
    assert data["in_domain"]["table mean"]["mape"] == pytest.approx((240 + 35 / 120 * 100) / 2)
    assert data["in_domain"]["per-phase mean"]["mape"] == pytest.approx(22.5)
    assert data["out_of_domain"]["nearest point"]["count"] == 1
    assert json.dumps(data)  # JSON-ready all the way down


def test_holdout_errors_are_one_line(tmp_path, capsys):
    status, out, err = run(capsys, "fpm", "evaluate", GB200, "--holdout", str(tmp_path / "none.csv"))
    assert (status, out) == (2, "") and err.count("\n") == 1 and "no such file" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("phase,batch_size,total_prefill_tokens,observed_ms\nprefill,1,4,100\n", encoding="utf-8")
    status, _, err = run(capsys, "fpm", "evaluate", GB200, "--holdout", str(bad))
    assert status == 2 and "missing column 'total_kv_read_tokens'" in err and err.count("\n") == 1
