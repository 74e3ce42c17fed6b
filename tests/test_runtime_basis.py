"""The runtime basis (issue 34, items 3 and 5): kernels plus the engine's own cost per forward, fitted to
the whole-forward tables by leave-one-out; an FPM simulation that never stops inside."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import run, run_json
from hypothesis import given, settings, strategies as st

from v41graph import load_model
from v41graph.analysis.forwards.fpm_reference import sol_reference
from v41graph.analysis.forwards.fpm_step_cost import FpmStepCoster
from v41graph.analysis.forwards.runtime_basis import Shape, fit_runtime, nonnegative_lstsq
from v41graph.analysis.forwards.runtime_step_cost import runtime_coster, step_shape
from v41graph.analysis.serving.step_cost import Piece
from v41graph.costs.fpm.load import load_table
from v41graph.costs.hardware import load_hardware
from v41graph.errors import CostError

GB300_OFF, GB200 = "aisimulate-gb300-off-v1", "aisimulate-gb200-calibration-v1"


def _fit(name: str):
    table = load_table(name)
    return fit_runtime(table, sol_reference(table.identity, model=load_model()))


# a feature is 0 or a figure of a step (1 per forward, requests, thousands of tokens, millions of past KV):
# never a value such as 1e-119, whose singular value least squares drops as numerically zero
_FEATURE = st.one_of(st.just(0.0), st.floats(1e-3, 10, allow_nan=False))


@settings(max_examples=150, deadline=None)
@given(st.integers(3, 12).flatmap(lambda n: st.tuples(
    st.lists(st.lists(_FEATURE, min_size=3, max_size=3), min_size=n, max_size=n),
    st.lists(st.floats(-20, 20, allow_nan=False), min_size=n, max_size=n))))
def test_nonnegative_least_squares_is_optimal(problem):
    """Karush–Kuhn–Tucker: every coefficient ≥ 0; where one is positive the gradient vanishes, where it
    is zero the gradient does not point below zero (no direction of descent stays feasible)."""
    x, y = np.array(problem[0]), np.array(problem[1])
    c = nonnegative_lstsq(x, y)
    g = x.T @ (x @ c - y)
    scale = 1e-6 * (1 + float(np.abs(x).sum() * np.abs(y).sum()))
    assert (c >= 0).all()
    assert all(abs(gi) <= scale for gi, ci in zip(g, c) if ci > 0)
    assert all(gi >= -scale for gi, ci in zip(g, c) if ci == 0)


def test_gb300_off_terms_and_error():
    fit = _fit(GB300_OFF)
    assert fit.terms == ("forward", "prefill", "request", "token")
    assert {t: round(v, 3) for t, v in fit.coefficients.items()} == \
        {"forward": 150.017, "prefill": 18.941, "request": 2.294, "token": 0.928}
    assert (fit.points, round(fit.loo.mape, 3)) == (124, 0.816)
    # the fixed cost alone (no shape terms) is what the chosen set beats
    assert round(fit.candidates["forward"].mape, 3) == 3.786


def test_gb200_runtime_fit_beats_the_fpm_held_out_error():
    """GB200's whole forwards are ~750 ms of which the kernels are a few: the fitted terms forecast every
    point within 3.29 % by leave-one-out (FPM's own held-out error on this table: 4.633 %)."""
    fit = _fit(GB200)
    assert fit.terms == ("forward", "prefill", "request", "token", "context")
    assert round(fit.coefficients["forward"], 1) == 753.2
    assert round(fit.loo.mape, 2) == 3.29 < 4.633


def test_step_shape_reads_requests_tokens_and_past_kv():
    # two chunks (one at 1,000 of its prompt) and 3 decode requests at context 129 (128 past KV each)
    assert step_shape((Piece(2000, 0, 500), Piece(3000, 1000, 200)), (3, 129)) == Shape(True, 5, 703, 1000 + 384)
    assert step_shape((), (4, 100), verify_len=5) == Shape(False, 4, 24, 396)


def test_runtime_coster_prices_any_step_and_names_its_tier():
    model, gb300 = load_model(), load_hardware("gb300")
    table = load_table(GB300_OFF)
    c = runtime_coster(model, gb300, table, tp=4)
    one = c.forward_s((), c.decode_key(1, 129))
    kernel = c.kernels.forward_s((), c.decode_key(1, 129))
    assert one == kernel + c.fit.runtime_ms(Shape(False, 1, 1, 128)) / 1000
    c.forward_s((Piece(384, 0, 384), Piece(384, 0, 384)), (0, 0))  # 768 prefill tokens: past the table's 512
    c.forward_s((Piece(100, 0, 100),), (2, 300))  # a mixed step
    assert c.answers == {"runtime": 1, "extrapolated": 2}
    other = runtime_coster(model, gb300, table, tp=8)  # another mapping: every step extrapolated
    other.forward_s((), other.decode_key(1, 129))
    assert other.answers == {"extrapolated": 1}


def test_fpm_simulation_never_stops_inside(capsys, tmp_path: Path):
    """Issue 34: two 384-token prompts arriving together put the batched prefill outside the table; the
    simulation answered exit 2 "outside measured domain". Now that step is extrapolated and counted."""
    trace = tmp_path / "two.csv"
    trace.write_text("t,prompt,output\n0,384,20\n0,384,20\n", encoding="utf-8")
    out = run_json(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--cost", "fpm", "--allow-unadmitted",
                   "--trace", str(trace))
    tiers = out["fpm"]["answers_by_tier"]
    assert tiers["extrapolated"] == 1 and sum(tiers.values()) == 21  # one prefill step + 20 decode steps
    assert out["fpm"]["steps_share_by_tier"]["extrapolated"] == pytest.approx(1 / 21)
    assert out["fpm"]["extrapolated_on"]["terms"] == ["forward", "prefill", "request", "token"]
    assert out["rates"][0]["requests"] == 2


def test_fpm_coster_without_a_fallback_still_refuses():
    model, gb300 = load_model(), load_hardware("gb300")
    c = FpmStepCoster(load_table(GB300_OFF), model, gb300, tp=4, allow_unadmitted=True)
    with pytest.raises(CostError, match="outside measured domain"):
        c.forward_s((Piece(384, 0, 384), Piece(384, 0, 384)), (0, 0))


def test_simulate_on_the_runtime_basis_states_its_fit(capsys):
    out = run_json(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--cost", "runtime", "--rate", "1",
                   "--duration", "20", "--prompt", "300", "--output", "8")
    assert out["cost_basis"] == "runtime" and out["basis"]["name"] == "runtime"
    assert out["runtime"]["fit"]["table"] == GB300_OFF and out["runtime"]["same_deployment"] is True
    assert "leave-one-out MAPE 0.82 %" in out["basis"]["identity"]
    assert sum(out["runtime"]["answers_by_tier"].values()) > 0


def test_runtime_basis_refusals(capsys, tmp_path: Path):
    status, out, err = run(capsys, "simulate", "--hardware", "h200_sxm", "--tp", "8", "--ep", "8", "--cost", "runtime")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "no whole-forward table for h200_sxm" in err
    # a table of 5 points cannot choose among up to five terms by leave-one-out
    folder = tmp_path / "small"
    folder.mkdir()
    identity = {**json.loads(load_table(GB300_OFF).identity.to_json()), "backend": "mine", "admission": "admitted"}
    (folder / "identity.json").write_text(json.dumps(identity), encoding="utf-8")
    rows = [f"decode,1,1,{k},{150 + k / 100}" for k in (0, 64, 128, 256, 512)]
    (folder / "points.csv").write_text("phase,batch_size,total_prefill_tokens,total_kv_read_tokens,observed_ms\n"
                                       + "\n".join(rows) + "\n", encoding="utf-8")
    status, out, err = run(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--cost", "runtime",
                           "--fpm-table", str(folder))
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "runtime fit: table" in err and "has 5 measured points" in err and "at least 7" in err


def test_fpm_gap_reports_the_fitted_terms(capsys):
    out = run_json(capsys, "fpm", "gap", GB300_OFF)
    fit = out["tables"][0]["runtime_fit"]["sol"]
    assert fit["terms"] == ["forward", "prefill", "request", "token"] and fit["points"] == 124
    status, text, _ = run(capsys, "fpm", "gap", GB300_OFF)
    assert status == 0 and "runtime terms on sol" in text and "150.02 ms per forward" not in text  # 4 digits
    assert "150 ms per forward + 18.94 ms per prefill forward" in text
