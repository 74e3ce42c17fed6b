"""FPM prediction: admission, tiers, interpolation by hand, the domain edge, identities, the CLI."""

from __future__ import annotations

import pytest

from helpers import run, run_json
from test_fpm_table import GB200, identity_dict, plain, raw_gb200
from v41graph import CostError
from v41graph.costs.fpm.predict import Query, UnadmittedError, predict
from v41graph.costs.fpm.load import load_table


@pytest.fixture(scope="module")
def gb200():
    return load_table(GB200)


# --------------------------------------------------------------------------- admission


def test_unadmitted_table_refuses_without_permission(gb200):
    with pytest.raises(UnadmittedError, match=r"is not admitted for prediction .* pass --allow-unadmitted"):
        predict(gb200, Query.make("decode", 1, past_kv=2))


def test_cli_refuses_with_one_line_and_exit_2(capsys):
    status, out, err = run(capsys, "fpm", "predict", GB200, "--phase", "decode", "--batch", "1", "--past-kv", "2")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "not admitted for prediction" in err and "--allow-unadmitted" in err


def test_every_calibration_point_returns_its_measured_value_exactly(gb200):
    for raw in raw_gb200():
        s = raw["metrics"]["scheduled_requests"]
        if raw["phase"] == "prefill":
            q = Query.make("prefill", s["num_prefill_requests"], s["sum_prefill_tokens"],
                           past_kv=s["sum_prefill_kv_tokens"])
        else:
            q = Query.make("decode", s["num_decode_requests"], past_kv=s["sum_decode_kv_tokens"])
        a = predict(gb200, q, allow_unadmitted=True)
        assert (a.tier, a.predicted_ms, a.admission) == ("measured", raw["measured_table_ms"], "not admitted")


def test_cli_with_permission_returns_the_measured_value_and_says_not_admitted(capsys):
    data = run_json(capsys, "fpm", "predict", GB200, "--phase", "prefill", "--batch", "2", "--new-tokens", "512",
                    "--past-kv", "3072", "--allow-unadmitted")
    assert (data["tier"], data["predicted_ms"], data["admission"]) == ("measured", 850.2127178944647, "not admitted")
    status, out, _ = run(capsys, "fpm", "predict", GB200, "--phase", "decode", "--batch", "1", "--past-kv", "2048",
                         "--allow-unadmitted")
    assert status == 0 and "predicted_ms: 777.3744  (tier: measured" in out and "NOT ADMITTED" in out


# --------------------------------------------------------------------------- domain and identity


def test_three_requests_are_unsupported_with_the_reason(gb200, capsys):
    a = predict(gb200, Query.make("prefill", 3, 6, past_kv=300), allow_unadmitted=True)
    assert (a.tier, a.predicted_ms) == ("unsupported", None)
    assert a.reason == "outside measured domain (batch 3 is not measured for prefill; measured: 1, 2)"
    assert a.nearest.key == ("prefill", 2, 6, 256)
    data = run_json(capsys, "fpm", "predict", GB200, "--phase", "decode", "--batch", "3", "--past-kv", "96",
                    "--allow-unadmitted")
    assert data["tier"] == "unsupported" and data["reason"].startswith("outside measured domain")
    assert data["nearest"]["batch_size"] == 2 and data["nearest"]["total_kv_read_tokens"] == 64


def test_beyond_the_largest_past_kv_is_not_extrapolated(gb200):
    a = predict(gb200, Query.make("decode", 1, past_kv=4096), allow_unadmitted=True)
    assert a.tier == "unsupported" and a.reason.startswith("outside measured domain")
    assert a.nearest.key == ("decode", 1, 1, 2048)


def test_replay_on_against_the_replay_off_table_names_decoder_replay(gb200, capsys):
    on = gb200.identity.with_fields(decoder_replay="bounded", admission="query")
    a = predict(gb200, Query.make("decode", 1, past_kv=2), identity=on, allow_unadmitted=True)
    assert a.tier == "unsupported" and a.reason == "identity differs: decoder_replay (table 'off', query 'bounded')"
    data = run_json(capsys, "fpm", "predict", GB200, "--phase", "decode", "--batch", "1", "--past-kv", "2",
                    "--allow-unadmitted", "--replay", "bounded")
    assert data["tier"] == "unsupported" and "decoder_replay" in data["reason"]


def test_a_gb300_folder_without_its_manifest_answers_missing_sample(capsys, tmp_path):
    import shutil
    from v41graph.costs.fpm.load import builtin_folder
    folder = tmp_path / "off-v1"
    shutil.copytree(builtin_folder("aisimulate-gb300-off-v1"), folder)
    (folder / "calibration" / "point-manifest.json").unlink()
    data = run_json(capsys, "fpm", "predict", str(folder), "--phase", "decode", "--batch", "1",
                    "--past-kv", "64", "--allow-unadmitted")
    assert (data["tier"], data["failure"], data["category"]) == ("unsupported", "missing sample", "missing sample")


def test_gb300_measured_point_is_answered_as_measured(capsys):
    data = run_json(capsys, "fpm", "predict", "aisimulate-gb300-off-v1", "--phase", "decode", "--batch", "1",
                    "--past-kv", "64", "--allow-unadmitted")
    import json
    from v41graph.costs.fpm.load import builtin_folder
    rows = json.loads((builtin_folder("aisimulate-gb300-off-v1") / "calibration" / "point-manifest.json").read_text())
    want = [r["latency_ms"] for r in rows["rows"] if (r["workload_kind"], r["batch_size"],
                                                      r["total_kv_read_tokens"]) == ("decode", 1, 64)]
    # the manifest's decode b1 past-KV-64 row is answered as itself
    assert (data["tier"], [data["predicted_ms"]]) == ("measured", want)


def test_gb200_interpolation_inside_a_cell_by_hand(gb200):
    obs = {(p.total_prefill_tokens, p.total_kv_read_tokens): p.observed_ms for p in gb200.points
           if p.phase == "prefill" and p.batch_size == 1}
    # (6, 300): between new tokens 4 and 8, past KV 128 and 512.
    wk = (300 - 128) / (512 - 128)
    at4 = obs[4, 128] + (obs[4, 512] - obs[4, 128]) * wk
    at8 = obs[8, 128] + (obs[8, 512] - obs[8, 128]) * wk
    a = predict(gb200, Query.make("prefill", 1, 6, past_kv=300), allow_unadmitted=True)
    assert a.tier == "interpolated" and a.predicted_ms == pytest.approx(at4 + (at8 - at4) * 0.5, rel=1e-12)
    assert len(a.basis) == 4


# --------------------------------------------------------------------------- a hand-made table


@pytest.fixture
def small(tmp_path):
    rows = ["prefill,1,4,0,100", "prefill,1,4,100,120", "prefill,1,8,0,140", "prefill,1,8,100,200",
            "prefill,1,16,0,,OOM", "prefill,1,16,100,300", "decode,1,1,10,20", "decode,1,1,30,50"]
    return load_table(plain(tmp_path, rows, header="phase,batch_size,total_prefill_tokens,total_kv_read_tokens,"
                                                   "observed_ms,failure"))


def test_small_table_bilinear_value_by_hand(small):
    # new tokens 6 is halfway 4..8, past KV 25 a quarter of 0..100:
    # at 4: 100 + 20·0.25 = 105; at 8: 140 + 60·0.25 = 155; halfway: 130.
    a = predict(small, Query.make("prefill", 1, 6, past_kv=25))
    assert (a.tier, a.predicted_ms, a.admission) == ("interpolated", 130.0, "admitted")
    assert predict(small, Query.make("prefill", 1, 6, past_kv=0)).predicted_ms == 120.0  # on the KV-0 line
    assert predict(small, Query.make("decode", 1, past_kv=20)).predicted_ms == 35.0  # 20 + 30·(10/20)


def test_small_table_sol_reference_by_hand(small):
    # reference(n) = n² ms: residuals at 4 and 8 on the KV-0 line are 100−16 = 84 and 140−64 = 76;
    # halfway 80, plus reference(6) = 36 → 116.
    a = predict(small, Query.make("prefill", 1, 6, past_kv=0), reference=lambda q: q.total_prefill_tokens ** 2)
    assert (a.tier, a.predicted_ms) == ("interpolated", 116.0)


def test_small_table_failure_classes_are_carried(small):
    hit = predict(small, Query.make("prefill", 1, 16, past_kv=0))
    assert (hit.tier, hit.failure, hit.reason) == ("unsupported", "OOM", "measured point failed: OOM")
    cell = predict(small, Query.make("prefill", 1, 12, past_kv=50))
    assert (cell.tier, cell.failure) == ("unsupported", "OOM")
    assert cell.reason == "the enclosing cell has a failed point (OOM at prefill batch 1, new tokens 16, past KV 0)"


def test_small_table_outside_the_domain(small):
    # Nearest of the measured (not failed) points: (8, 0) is 24 tokens away, (16, 100) 116.
    a = predict(small, Query.make("prefill", 1, 32, past_kv=0))
    assert a.tier == "unsupported" and a.reason == ("outside measured domain (nearest measured point: prefill "
                                                    "batch 1, new tokens 8, past KV 0)")


def test_hole_in_a_grid_averages_its_row_and_column(tmp_path):
    # 3×3 grid without its centre (8, 50): row KV 50 gives (110 + 130)/2 = 120, column 8 gives
    # (100 + 160)/2 = 130; both interpolate along one axis, so the answer is their mean, 125.
    rows = ["prefill,1,4,0,90", "prefill,1,4,50,110", "prefill,1,4,100,150", "prefill,1,8,0,100",
            "prefill,1,8,100,160", "prefill,1,12,0,140", "prefill,1,12,50,130", "prefill,1,12,100,170"]
    a = predict(load_table(plain(tmp_path, rows)), Query.make("prefill", 1, 8, past_kv=50))
    assert (a.tier, a.predicted_ms) == ("interpolated", 125.0)


def test_not_admitted_plain_table_refuses(tmp_path):
    t = load_table(plain(tmp_path, ["prefill,1,4,0,100"], identity=identity_dict(admission="not admitted")))
    with pytest.raises(UnadmittedError, match=r"'table' is not admitted for prediction"):
        predict(t, Query.make("prefill", 1, 4, past_kv=0))


@pytest.mark.parametrize("args, message", [
    (("--phase", "prefill", "--batch", "1", "--past-kv", "0"), "new_tokens: required for prefill"),
    (("--phase", "decode", "--batch", "0", "--past-kv", "4"), "batch: must be an integer >= 1, got 0"),
    (("--phase", "decode", "--batch", "2", "--new-tokens", "5", "--past-kv", "4"), "must equal batch 2, got 5"),
    (("--phase", "mixed", "--batch", "1", "--past-kv", "4"), "argument --phase: invalid choice"),
    (("--phase", "decode", "--batch", "x", "--past-kv", "4"), "argument --batch: invalid int value"),
])
def test_cli_bad_input_is_one_line(capsys, args, message):
    status, out, err = run(capsys, "fpm", "predict", GB200, "--allow-unadmitted", *args)
    assert (status, out) == (2, "") and err.count("\n") == 1 and message in err


def test_query_validation():
    with pytest.raises(CostError, match=r"past_kv: must be an integer >= 0, got -1"):
        Query.make("decode", 1, past_kv=-1)


def test_cli_sol_reference_adds_the_query_sol_back(gb200, capsys, flash):
    from v41graph.costs.fpm.system_figures import plan_for_query
    from v41graph.passes import compile

    def sol_ms(new: int) -> float:
        plan = plan_for_query(Query("prefill", 1, new, 0), tp=4)
        return compile(flash, plan, "gb200").report("schedule").total_time_s * 1000
    obs = {p.total_prefill_tokens: p.observed_ms for p in gb200.points
           if p.phase == "prefill" and p.batch_size == 1 and p.total_kv_read_tokens == 0}
    expected = sol_ms(6) + ((obs[4] - sol_ms(4)) + (obs[8] - sol_ms(8))) / 2
    data = run_json(capsys, "fpm", "predict", GB200, "--phase", "prefill", "--batch", "1", "--new-tokens", "6",
                    "--past-kv", "0", "--allow-unadmitted", "--sol-reference", "--estimator", "interpolation")
    assert data["tier"] == "interpolated" and data["reason"].endswith("on the SOL reference shape")
    assert data["predicted_ms"] == pytest.approx(expected, rel=1e-12)


def test_sol_fallback_is_explicit_and_flagged(small):
    outside = Query.make("prefill", 1, 32, past_kv=0)
    a = predict(small, outside, sol_fallback=lambda q: 7.5)
    assert (a.tier, a.predicted_ms, a.failure) == ("sol", 7.5, None)
    assert a.reason.startswith("SOL fallback, a lower bound and not a measurement (outside measured domain")
    assert predict(small, outside).tier == "unsupported"  # never without asking
    # A failed point or cell is not "outside the domain": its failure class stands.
    assert predict(small, Query.make("prefill", 1, 16, past_kv=0), sol_fallback=lambda q: 7.5).failure == "OOM"


def test_cli_sol_fallback_for_three_requests(capsys, flash):
    from v41graph.costs.fpm.system_figures import plan_for_query
    from v41graph.passes import compile
    plan = plan_for_query(Query("decode", 3, 3, 96), tp=4)
    expected = compile(flash, plan, "gb200").report("schedule").total_time_s * 1000
    data = run_json(capsys, "fpm", "predict", GB200, "--phase", "decode", "--batch", "3", "--past-kv", "96",
                    "--allow-unadmitted", "--sol-fallback")
    assert (data["tier"], data["failure"]) == ("sol", None)
    assert data["predicted_ms"] == pytest.approx(expected, rel=1e-12)
    assert "batch 3 is not measured for decode" in data["reason"]


def test_a_failed_neighbour_is_not_papered_over_by_a_larger_cell(tmp_path):
    # Query (12, 50): the row KV 50 brackets it between (8, 50) and (16, 50), which failed (OOM).
    # The rectangle 8..16 × 0..100 is complete, but it interpolates along two axes, the row along
    # one: the row wins, and its failure is the answer.
    rows = ["prefill,1,8,0,10,", "prefill,1,16,0,20,", "prefill,1,8,100,30,", "prefill,1,16,100,40,",
            "prefill,1,8,50,20,", "prefill,1,16,50,,OOM"]
    t = load_table(plain(tmp_path, rows, header="phase,batch_size,total_prefill_tokens,total_kv_read_tokens,"
                                                 "observed_ms,failure"))
    a = predict(t, Query.make("prefill", 1, 12, past_kv=50))
    assert (a.tier, a.failure) == ("unsupported", "OOM")
    # Without the failed row the rectangle answers: (10 + 20 + 30 + 40)/4 = 25 at its centre.
    rows[-2:] = []
    (tmp_path / "b").mkdir()
    b = predict(load_table(plain(tmp_path / "b", rows, header="phase,batch_size,total_prefill_tokens,"
                                 "total_kv_read_tokens,observed_ms,failure")), Query.make("prefill", 1, 12, past_kv=50))
    assert (b.tier, b.predicted_ms) == ("interpolated", 25.0)
