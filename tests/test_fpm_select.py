"""FPM estimators and their leave-one-out selection: by hand, on the GB200 table, in the CLI."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from helpers import run, run_json
from test_fpm_table import GB200, plain

from v41graph.costs.fpm.estimators import CANDIDATES, estimate, huber_fit
from v41graph.costs.fpm.evaluate import evaluate
from v41graph.costs.fpm.load import load_table
from v41graph.costs.fpm.predict import Query, predict
from v41graph.costs.fpm.select import choose
from v41graph.costs.fpm.table import Point


@pytest.fixture(scope="module")
def gb200():
    return load_table(GB200)


@pytest.fixture(scope="module")
def gb200_selection(gb200):
    return choose(gb200)


def test_huber_fit_ignores_one_outlier_and_least_squares_does_not():
    x = np.column_stack([np.ones(6), np.arange(6.0)])
    y = 3.0 + 2.0 * np.arange(6.0)
    y[5] += 50.0
    assert [round(float(c), 3) for c in huber_fit(x, y)] == [3.0, 2.0]
    ls = np.linalg.lstsq(x, y, rcond=None)[0]
    assert abs(ls[1] - 2.0) > 5  # the outlier tilts least squares by 50 * (5 - 2.5) / 17.5 = 7.14


def test_estimates_by_hand():
    part = [Point("prefill", 1, n, 0, 100.0 + n) for n in (1, 2, 4, 8)]
    other = [Point("prefill", 2, 4, 0, 300.0)]
    assert estimate("phase mean", part + other, part, 1, "prefill", 3, 0) == (4 * 100 + (1 + 2 + 4 + 8) + 300) / 5
    assert estimate("phase-batch mean", part + other, part, 1, "prefill", 3, 0) == 103.75
    assert estimate("robust fit", part + other, part, 1, "prefill", 3, 0) == pytest.approx(103.0, abs=1e-6)
    assert estimate("interpolation", part, part, 1, "prefill", 3, 0, interpolated=102.5) == 102.5
    # SOL ratio: median observed/SOL of the partition times the query's SOL
    ratios = statistics.median((100.0 + n) / (n / 10) for n in (1, 2, 4, 8))
    assert estimate("sol ratio", part, part, 1, "prefill", 3, 0, sol_point=lambda p: p.total_prefill_tokens / 10,
                    sol_query=0.3) == pytest.approx(ratios * 0.3)
    assert estimate("sol ratio", part, part, 1, "prefill", 3, 0) is None  # no SOL: it does not compete
    with pytest.raises(ValueError, match="fpm estimator: must be one of"):
        estimate("median", part, part, 1, "prefill", 3, 0)


def test_a_linear_table_chooses_the_robust_fit_at_zero_error(tmp_path):
    # time = 100 + 0.5 * past KV exactly: robust fit and interpolation are exact, the means are not;
    # the tie goes to the earlier candidate (robust fit)
    rows = [f"decode,1,1,{k},{100 + k / 2}" for k in (0, 8, 16, 24, 32, 40)]
    s = choose(load_table(plain(tmp_path, rows)))
    assert s.chosen == {"decode": "robust fit"} and s.scored == {"decode": 4}  # the two edges leave the domain
    assert s.errors["decode"]["robust fit"].mape == pytest.approx(0, abs=1e-9)
    assert s.errors["decode"]["interpolation"].mape == pytest.approx(0, abs=1e-9)
    # phase mean held out at k=8: the others average (100 + 108 + 112 + 116 + 120) / 5
    k8 = abs((100 + 108 + 112 + 116 + 120) / 5 - 104) / 104 * 100
    assert s.errors["decode"]["phase mean"].worst >= k8 and "(next: interpolation 0.000%)" in s.why["decode"]


def test_a_leave_one_out_reads_each_points_reference_once(tmp_path):
    # the folds ask for every point's SOL again and again; each distinct query is read from the reference once
    rows = [f"decode,1,1,{k},{100 + k / 2 + (k % 16) / 4}" for k in (0, 8, 16, 24, 32, 40)]
    table = load_table(plain(tmp_path, rows))
    asked = []

    def sol(query):  # no ``key``: a caller's own reference, never memoised by choose
        asked.append(query)
        return 1.0 + query.total_kv_read_tokens / 100

    s = choose(table, sol)
    assert "sol ratio" in s.candidates and s.scored == {"decode": 4}
    assert sorted(q.total_kv_read_tokens for q in asked) == [0, 8, 16, 24, 32, 40]  # every point once, none twice
    asked.clear()
    e = evaluate(table, reference=sol, estimator={"decode": "sol ratio"}, sol=sol)
    assert len(asked) == len({q for q in asked}) == 6 and e.in_domain["fpm"].count == 4


def test_gb200_chosen_estimator_is_no_worse_than_the_per_phase_mean(gb200, gb200_selection):
    measured = [p for p in gb200.points if not p.failure]

    def phase_mean_error(p):  # leave-one-out per-phase mean, by hand
        others = [q.observed_ms for q in measured if q.phase == p.phase and q is not p]
        return abs(statistics.fmean(others) - p.observed_ms) / p.observed_ms * 100
    all_points = statistics.fmean(phase_mean_error(p) for p in measured)
    assert round(all_points, 3) == 3.380  # the project's own count, derived here
    s = gb200_selection
    scored = [p for p in measured if predict(gb200, Query.of(p), allow_unadmitted=True,
                                             points=[q for q in gb200.points if q is not p]).predicted_ms is not None]
    in_domain = statistics.fmean(phase_mean_error(p) for p in scored)
    assert s.overall["phase mean"].mape == pytest.approx(in_domain, rel=1e-12)
    assert s.combined.count == len(scored) == 114
    assert s.combined.mape <= in_domain and s.combined.mape <= all_points
    for phase, name in s.chosen.items():  # the chosen one is the minimum of its phase
        assert s.errors[phase][name].mape == min(e.mape for e in s.errors[phase].values())


def test_evaluate_json_lists_every_candidate_and_the_choice(capsys):
    data = run_json(capsys, "fpm", "evaluate", GB200)
    sel = data["selection"]
    assert sel["candidates"] == list(CANDIDATES) and set(sel["errors"]) == {"prefill", "decode"}
    for per in sel["errors"].values():
        assert set(per) == set(CANDIDATES)
        assert all({"mape", "median", "p90", "worst"} <= set(e) for e in per.values())
    assert data["estimator"] == sel["chosen"]
    assert data["in_domain"]["fpm"]["mape"] == pytest.approx(sel["combined"]["mape"], rel=1e-12)


def test_evaluate_text_shows_candidates_chosen_and_why(capsys):
    status, out, err = run(capsys, "fpm", "evaluate", GB200)
    assert status == 0 and err == ""
    assert "estimator candidates, leave-one-out over 126 points" in out
    for c in CANDIDATES:
        assert f"  {c:<16} n=" in out
    assert out.count("<- chosen") == 2 and "chosen: " in out and "lowest leave-one-out MAPE" in out


def test_predict_uses_the_chosen_estimator_and_says_so(capsys, gb200_selection):
    data = run_json(capsys, "fpm", "predict", GB200, "--phase", "prefill", "--batch", "1", "--new-tokens", "6",
                    "--past-kv", "0", "--allow-unadmitted")
    assert data["estimator"] == gb200_selection.chosen["prefill"] and data["selection"]["chosen"]
    forced = run_json(capsys, "fpm", "predict", GB200, "--phase", "prefill", "--batch", "1", "--new-tokens", "6",
                      "--past-kv", "0", "--allow-unadmitted", "--estimator", "interpolation")
    assert (forced["tier"], forced["estimator"]) == ("interpolated", "interpolation")


def test_replay_off_plan_on_the_replay_on_table_is_refused_naming_the_field(capsys):
    data = run_json(capsys, "fpm", "predict", "aisimulate-gb300-on-v1", "--phase", "decode", "--batch", "1",
                    "--past-kv", "128", "--replay", "off", "--allow-unadmitted")
    assert (data["tier"], data["predicted_ms"], data["category"]) == ("unsupported", None, "identity mismatch")
    assert data["reason"] == "identity differs: decoder_replay (table 'bounded', query 'off')"
    status, out, _ = run(capsys, "fpm", "predict", "aisimulate-gb300-on-v1", "--phase", "decode", "--batch", "1",
                         "--past-kv", "128", "--replay", "off", "--allow-unadmitted")
    assert status == 0 and "failure category: identity mismatch" in out and "decoder_replay" in out


def test_outside_the_domain_fails_or_answers_sol_tagged(capsys):
    args = ("fpm", "predict", GB200, "--phase", "decode", "--batch", "1", "--past-kv", "4096", "--allow-unadmitted")
    data = run_json(capsys, *args)
    assert (data["tier"], data["category"]) == ("unsupported", "outside measured domain")
    sol = run_json(capsys, *args, "--sol-fallback")
    assert sol["tier"] == "sol" and sol["reason"].startswith("SOL fallback, a lower bound and not a measurement")
