"""DSpark scheduler: prefix survival, step cost per verify length, the chosen length per batch size."""

from __future__ import annotations

import pytest
from helpers import run, run_json

from v41graph.analysis.serving.dspark_verify import step_plan, verify_curve
from v41graph.costs.requests.dspark_acceptance import Acceptance, commit_cost
from v41graph.errors import CostError

RATES = (0.9, 0.8, 0.7, 0.6, 0.5)


@pytest.fixture(scope="module")
def curves(flash):
    a = Acceptance(RATES)
    return {b: verify_curve(flash, "h200_sxm", a, b) for b in (1, 64)}


def test_expected_emitted_is_the_prefix_survival_sum():
    a = Acceptance(RATES)
    by_hand = [1.0,
               1 + 0.9,
               1 + 0.9 + 0.9 * 0.8,
               1 + 0.9 + 0.9 * 0.8 + 0.9 * 0.8 * 0.7,
               1 + 0.9 + 0.72 + 0.504 + 0.504 * 0.6,
               1 + 0.9 + 0.72 + 0.504 + 0.3024 + 0.3024 * 0.5]
    assert [a.emitted(k) for k in range(6)] == pytest.approx(by_hand, rel=1e-12)
    assert a.emitted(5) == pytest.approx(3.5776, rel=1e-12)
    assert a.survival() == pytest.approx((0.9, 0.72, 0.504, 0.3024, 0.1512), rel=1e-12)


def test_commit_and_rollback_bytes_by_hand(flash):
    a = Acceptance(RATES)
    # k=5 at batch 64: 5 draft slots copied aside in each of 40 SWA rings (528 B an entry), and on
    # average 5 − (0.9 + 0.72 + 0.504 + 0.3024 + 0.1512) rejected ones copied back
    rejected = 5 - (0.9 + 0.72 + 0.504 + 0.3024 + 0.1512)
    c = commit_cost(flash, a, 5, copies=64)
    assert c.byte("kv_read") == pytest.approx(40 * 528 * (5 + rejected) * 64, rel=1e-12)
    assert c.byte("kv_write") == c.byte("kv_read")
    assert commit_cost(flash, a, 0, copies=64).total_bytes == 0


def test_step_plans():
    assert [(r.kind, r.new, r.copies) for r in step_plan(64, 4096, 3).requests] == [("verify", 4, 64)]
    assert step_plan(64, 4096, 3).dspark == "on"
    p0 = step_plan(8, 4096, 0)
    assert [(r.kind, r.new, r.copies) for r in p0.requests] == [("decode", 1, 8)] and p0.dspark == "off"


def test_the_policy_maximises_tokens_per_second_and_counts_verify_outputs(curves):
    for batch, curve in curves.items():
        assert [p.k for p in curve.points] == [0, 1, 2, 3, 4, 5]
        for p in curve.points:
            assert p.tokens_per_s == pytest.approx(batch * p.emitted / (p.forward_s + p.commit_s), rel=1e-12)
        best = max(curve.points, key=lambda p: p.tokens_per_s)
        assert curve.chosen == best.k
        # verifying more tokens never makes a step faster
        steps = [p.step_s for p in curve.points]
        assert steps == sorted(steps)
    # batch 1: each verify token brings its own experts' weights (≈ +15% per step from k=3 to 4, for
    # +9.7% tokens); at batch 64 those weights are read anyway, so the longest verify wins
    assert (curves[1].chosen, curves[64].chosen) == (3, 5)


def test_an_itl_bound_limits_the_verify_length(flash, curves):
    points = curves[64].points
    bound = (points[2].step_s + points[3].step_s) / 2  # k = 0..2 fit, 3..5 do not
    bounded = verify_curve(flash, "h200_sxm", Acceptance(RATES), 64, itl_s=bound)
    assert bounded.chosen == 2 and "excludes k=3,4,5" in bounded.reason
    none = verify_curve(flash, "h200_sxm", Acceptance(RATES), 64, itl_s=points[0].step_s / 2)
    assert none.chosen is None and "no verify length meets the ITL bound" in none.reason


def test_dspark_command(capsys):
    data = run_json(capsys, "dspark", "--acceptance", "0.9,0.8,0.7,0.6,0.5", "--batch", "1,64")
    # on the auto mapping (tp 8 · ep 8): batch 64 takes k = 4 since issue 25 prices the busiest EP rank's
    # expected experts (k = 5 adds 0.456 ms for 4.4 % more tokens); one GPU still takes k = 5 (README)
    assert data["choices"] == {"1": 3, "64": 4}
    assert [p["expected_emitted"] for p in data["batches"][0]["points"]] == \
        pytest.approx([1, 1.9, 2.62, 3.124, 3.4264, 3.5776], rel=1e-12)
    assert data["load_note"] == "the choice moves with load: k=3 at batch 1, k=4 at batch 64"
    same = run_json(capsys, "dspark", "--acceptance", "0.9", "--batch", "1,64")
    assert same["choices"] == {"1": 1, "64": 1}
    assert same["load_note"].startswith("the same k=1 at every batch size here; at the largest: k=1 is the longest")
    status, out, err = run(capsys, "dspark", "--acceptance", "0.9,0.8", "--batch", "1")
    assert status == 0 and "chosen: k=2" in out and "E[emitted]" in out
    status, out, err = run(capsys, "dspark", "--acceptance", "0.9,1.2")
    assert (status, out) == (2, "")
    assert err == "v41graph: error: dspark acceptance[1]: must be a probability in [0, 1], got 1.2\n"
    status, out, err = run(capsys, "dspark", "--acceptance", "0.9,0.8,0.7,0.6,0.5,0.4")
    assert (status, err) == (2, "v41graph: error: dspark acceptance: 6 rates for a draft block of 5 positions\n")


def test_acceptance_errors():
    with pytest.raises(CostError, match="dspark acceptance: expected comma-separated probabilities, got 'a,b'"):
        Acceptance.parse("a,b")
    with pytest.raises(CostError, match=r"verify length: must be an integer in 0..2"):
        Acceptance((0.5, 0.5)).emitted(3)


def test_a_model_without_dspark_is_refused(capsys):
    status, out, err = run(capsys, "dspark", "--model", "deepseek-v4-flash", "--batch", "1")
    assert (status, out) == (2, "")
    assert err == ("v41graph: error: dspark: model 'deepseek-v4-flash' declares no DSpark draft blocks "
                   "(1 draft blocks, dspark_block_size 0)\n")


def test_the_mapping_is_part_of_the_step(capsys, curves):
    data = run_json(capsys, "dspark", "--batch", "64", "--tp", "8", "--ep", "8")
    assert data["mapping"] == {"tp": 8, "ep": 8, "dp": 1}
    one_gpu = [p.step_s for p in curves[64].points]
    eight = [p["step_s"] for p in data["batches"][0]["points"]]
    assert all(e < o for e, o in zip(eight, one_gpu))  # eight GPUs share the weights and the work
    status, out, err = run(capsys, "dspark", "--batch", "1", "--tp", "3")
    assert (status, err) == (2, "v41graph: error: plan tp: 3 does not divide the 64 attention heads\n")
