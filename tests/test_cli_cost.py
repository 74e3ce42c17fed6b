"""``v41graph cost`` and ``v41graph formula``: JSON contracts, text, and one-line errors (exit 2).

Commands run in-process through :func:`v41graph.cli.main.main`. The SOL closed form takes about a
second to build, so ``formula sol_time --json`` runs once per module.
"""

from __future__ import annotations

import contextlib
import io
import json

from helpers import run, run_json
import pytest
import sympy

from v41graph.cli.main import main
from v41graph.cli.options.plan_options import add_plan_options, plan_from_args
from v41graph.symbols import B, L, N, length

COST_KEYS = {"hardware", "total_time_s", "critical_path", "token_layers", "breakdown", "bound_by", "resources_s",
             "system", "assumptions"}
SYSTEM_KEYS = {"forward_s", "ttft_s", "itl_s", "output_tokens", "throughput_tok_s"}


def assert_one_line_error(capsys, argv, *needles):
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.startswith("v41graph: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


def parse(data: dict) -> sympy.Expr:
    """Read ``expr`` back as the output's ``parse`` hint says (N and S are also sympy names): plain sympy."""
    assert data["parse"] == ("sympy.sympify(expr, locals={s: sympy.Symbol(s, positive=True, integer=True) "
                             "for s in symbols})")
    return sympy.sympify(data["expr"], locals={s: sympy.Symbol(s, positive=True, integer=True)
                                               for s in data["symbols"]})


@pytest.fixture(scope="module")
def prefill_8k() -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["cost", "--prefill", "8K", "--hardware", "h200_sxm", "--json"]) == 0  # formula's deployment
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def sol_formula() -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["formula", "sol_time", "--json"]) == 0
    return json.loads(out.getvalue())


# --------------------------------------------------------------------------- cost


def test_cost_json_contract(prefill_8k):
    s = prefill_8k
    assert COST_KEYS <= s.keys()
    assert s["hardware"] == "h200_sxm"
    assert s["token_layers"] == 40 * 8192  # replay off
    assert s["total_time_s"] == max(s["critical_path_s"], s["resource_bound_s"]) > 0
    assert isinstance(s["critical_path"], list) and len(s["critical_path"]) > 100
    assert all(isinstance(n, str) for n in s["critical_path"])
    assert set(s["breakdown"]) == {"by_stage", "by_op", "by_layer", "by_family"}
    assert set(s["breakdown"]["by_stage"]) >= {"encoder", "decoder", "head"}
    assert list(s["breakdown"]["by_layer"])[:3] == ["0", "1", "2"]
    work = sum(s["breakdown"]["by_stage"].values())
    assert sum(s["breakdown"]["by_op"].values()) == pytest.approx(work)
    assert sum(s["breakdown"]["by_layer"].values()) == pytest.approx(work)
    assert sum(f["time_s"] for f in s["breakdown"]["by_family"]["families"].values()) == pytest.approx(work, rel=1e-9)
    assert set(s["resources_s"]) == {"compute", "memory", "comm"}
    assert max(s["resources_s"].values()) == s["resource_bound_s"]
    assert set(s["bound_by"]) <= {"compute", "memory", "comm", "none"} and sum(s["bound_by"].values()) > 100
    assert s["assumptions"] and all(isinstance(a, str) for a in s["assumptions"])
    sysf = s["system"]
    assert set(sysf) == SYSTEM_KEYS
    assert sysf["forward_s"] == sysf["ttft_s"] == s["total_time_s"]
    assert sysf["itl_s"] is None and sysf["output_tokens"] == 1
    assert sysf["throughput_tok_s"] == pytest.approx(1 / s["total_time_s"])


def test_cost_decode_batch_is_one_request_with_copies(capsys):
    s = run_json(capsys, "cost", "--decode", "64:8K")
    assert s["requests"] == [{"kind": "decode", "cached": 8192, "new": 1, "copies": 64}]
    assert s["token_layers"] == 64 * 40
    sysf = s["system"]
    assert (sysf["ttft_s"], sysf["itl_s"], sysf["output_tokens"]) == (None, s["total_time_s"], 64)


def test_cost_text(capsys):
    status, out, err = run(capsys, "cost", "--prefill", "1K", "--decode", "8:4K", "--replay", "bounded")
    assert (status, err) == (0, "")
    for needle in ("on h200_sxm: SOL forward", "critical path:", "node time by op family (Σ ", "nodes by bound:",
                   "TTFT", "ITL", "output tokens 9", "assumptions:"):
        assert needle in out, needle


def test_cost_other_hardware(capsys):
    assert run_json(capsys, "cost", "--prefill", "1K", "--hardware", "b200")["hardware"] == "b200_sxm"


@pytest.mark.parametrize("argv, needles", [
    (["cost", "--hardware", "nope"], ["'nope'", "h200_sxm", "b200_sxm", "gb200"]),
    (["cost", "--decode", "0:8K"], ["--decode", "batch"]),
    (["cost", "--decode", "64"], ["--decode", "'64'"]),
    (["cost", "--tp", "3"], ["tp", "3"]),
    (["cost", "--prefill", "N"], ["--prefill", "'N'"]),  # symbols belong to `formula`
], ids=["unknown-hardware", "zero-batch", "no-context", "bad-tp", "symbol"])
def test_cost_bad_input(capsys, argv, needles):
    assert_one_line_error(capsys, argv, *needles)


# --------------------------------------------------------------------------- formula


def test_formula_token_layers_json(capsys):
    data = run_json(capsys, "formula", "token_layers", "--replay", "bounded")
    assert {"metric", "expr", "symbols", "valid_range"} <= data.keys()
    # valid over the whole domain: 1 ≤ N ≤ max_position_embeddings (issue 10)
    assert (data["metric"], data["symbols"], data["valid_range"]) == ("token_layers", ["N"], [1, 1_048_576])
    assert parse(data) == 21 * N + 19 * sympy.Min(N, 128)  # the same expression, Min included


def test_formula_kv_bytes_round_trips_floor(capsys):
    data = run_json(capsys, "formula", "kv_bytes")
    assert parse(data) == 356 * N + 1068 * sympy.floor(N / 2)
    assert str(parse(data)) == data["expr"]


def test_formula_sol_time_json(sol_formula, prefill_8k):
    data = sol_formula
    assert (data["metric"], data["symbols"], data["hardware"], data["binding"]) == (
        "sol_time", ["N"], "h200_sxm", {"N": 8192})
    lo, hi = data["valid_range"]
    assert lo <= 8192 <= hi
    expr = parse(data)
    # at the binding, the formula is the total that `cost` schedules (replay off in both): since
    # issue 10 the closed form is max(critical path, busiest resource) like the schedule, and at
    # an 8K prefill with replay off the memory summed over all nodes is the longer one
    assert float(expr.subs(N, 8192)) == pytest.approx(prefill_8k["total_time_s"], rel=1e-12)
    assert data["critical_path_nodes"] == len(prefill_8k["critical_path"])


def test_formula_sol_time_parses_back_to_an_equal_expression(sol_formula):
    from v41graph import Plan, Request, load_model
    from v41graph.analysis.symbolic.query import closed_form
    from v41graph.chance import plain
    original = closed_form(load_model(), Plan([Request.prefill(N)], tp=8, ep=8), "sol_time").expr  # the deployment
    assert "untouched" in str(original) and "untouched" not in sol_formula["expr"]
    assert str(plain(original)) == sol_formula["expr"]
    parsed = parse(sol_formula)
    # a Piecewise over the regimes (issue 10): the same conditions, and each piece's difference
    # expands to 0 — an exact identity (simplify on the whole Piecewise takes half a minute)
    assert isinstance(original, sympy.Piecewise) and len(parsed.args) == len(original.args)
    for (a, c), (b, d) in zip(parsed.args, plain(original).args):
        assert c == d and sympy.expand(a - b) == 0
    for n in (1, 128, 8192, 10**6):
        # (1 − p)^N exactly, where the tool holds it on a 2⁻⁵³ grid (chance.untouched): within a
        # double's rounding of the total, and equal wherever the term is 0 on the grid or outweighed
        assert float(parsed.subs(N, n)) == pytest.approx(float(original.subs(N, n)), rel=1e-15)
    assert parsed.subs(N, 8192) == original.subs(N, 8192)


def test_formula_json_reads_back_with_plain_sympy_and_equals_cost(capsys):
    """Issue 37, item 3: the expression holds sympy's own functions only, so ``sympy.sympify``
    with plain symbols (no assumptions, no v41graph) gives the figure ``cost`` schedules at the
    same deployment. rel 1e-12, not equality: ``cost`` sums the path in doubles (its total differs
    from the form's exact rational by ~2e-15 relative) and ``expr`` writes (1 − p)^N exactly where
    the tool rounds it to 2⁻⁵³ (< 2⁻⁵⁴ per expert); a node missing from the form would move the
    total by ≥ 1e-5 relative (a 1 µs node of 66 ms)."""
    deployment = ("--tp", "8", "--ep", "8", "--hardware", "h200_sxm")
    data = run_json(capsys, "formula", "sol_time", *deployment)
    assert "untouched" not in data["expr"] and "(63/64)**N" in data["expr"]  # V4.1-Flash: 1 − 6/384
    expr = sympy.sympify(data["expr"], locals={s: sympy.Symbol(s) for s in data["symbols"]})
    value = expr.subs(sympy.Symbol("N"), 8192)
    cost = run_json(capsys, "cost", "--prefill", "8192", *deployment)
    assert value.is_Rational and value == sympy.Rational(data["value_exact"])
    assert float(value) == pytest.approx(cost["total_time_s"], rel=1e-12)
    assert float(value) == pytest.approx(0.066433, rel=1e-5)
    # where the expected-experts term is not 0 on the grid (N = 40: (63/64)^40 = 0.53), the plain
    # form and the tool's number differ by under 2⁻⁵⁴ per expert
    at40 = run_json(capsys, "formula", "bytes", *deployment, "--at", "N=40")
    n = sympy.Symbol("N")
    form = sympy.sympify(at40["expr"], locals={"N": n})
    weight = abs(form.coeff(sympy.Rational(63, 64) ** n))  # the expected experts' bytes: 40 layers · 384 · …
    plain40, tool40 = form.subs(n, 40), sympy.Rational(at40["value_exact"])
    assert weight > 0 and plain40 != tool40  # the exact power, not its grid value
    assert abs(plain40 - tool40) <= weight * sympy.Rational(1, 2**54)


def test_formula_latex(capsys):
    status, out, err = run(capsys, "formula", "token_layers", "--replay", "bounded", "--latex")
    assert (status, err) == (0, "")
    assert out.strip() == sympy.latex(21 * N + 19 * sympy.Min(N, 128))
    assert "\\min" in out


def test_formula_text(capsys):
    status, out, err = run(capsys, "formula", "kv_bytes")
    # and the domain it was built for (issue 10: outside it, evaluating is an error)
    assert (status, err, out) == (0, "", "deployment: 8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)\n"
                                  "kv_bytes(N) = 356*N + 1068*floor(N/2)\n"
                                  "  holds for N in [1, 1,048,576] (elsewhere: an error)\n")


def test_formula_symbolic_plans(capsys):
    assert parse(run_json(capsys, "formula", "token_layers", "--decode", "B:L")) == 40 * B
    data = run_json(capsys, "formula", "kv_bytes", "--extend", "P:S")
    assert data["symbols"] == ["P", "S"]
    assert parse(data).subs({length("P"): 100, length("S"): 28}) == 356 * 128 + 1068 * 64


def test_decode_option_builds_one_request():
    import argparse
    p = argparse.ArgumentParser()
    add_plan_options(p, symbolic=True)
    for argv, want in ((["--decode", "B:L"], (L, B)), (["--decode", "64:8K"], (8192, 64))):
        (r,) = plan_from_args(p.parse_args(argv)).requests
        assert (r.kind, r.cached, r.copies) == ("decode", *want)


@pytest.mark.parametrize("argv, needles", [
    (["formula", "nope"], ["unknown metric 'nope'", "sol_time"]),
    (["formula", "token_layers", "--prefill", "X"], ["--prefill", "'X'", "N, B, L, P, S"]),
    (["formula", "token_layers", "--chunk", "1K"], ["--chunk", "numeric"]),
    (["formula", "token_layers", "--decode", "0:L"], ["--decode", "batch"]),
    (["formula", "sol_time", "--hardware", "nope"], ["'nope'", "h200_sxm"]),
], ids=["unknown-metric", "bad-symbol", "symbolic-chunk", "zero-batch", "unknown-hardware"])
def test_formula_bad_input(capsys, argv, needles):
    assert_one_line_error(capsys, argv, *needles)


# --------------------------------------------------------------------------- formula --at (issue 10)


def test_formula_at_prints_the_piece_holding_there(capsys):
    data = run_json(capsys, "formula", "sol_time", "--replay", "bounded", "--at", "N=128K")
    lo, hi = data["valid_range"]
    assert lo <= 131_072 <= hi and data["pieces"] == [[lo, hi]] and data["binding"] == {"N": 131_072}
    cost = run_json(capsys, "cost", "--prefill", "128K", "--replay", "bounded")  # one deployment (issue 37)
    assert data["deployment"] == cost["deployment"]
    assert float(parse(data).subs(N, 131_072)) == pytest.approx(cost["total_time_s"], rel=1e-12)
    assert data["critical_path_nodes"] == len(cost["critical_path"])
    # what bounds there, as the schedule says: the path, or a resource summed over all nodes
    longer = cost["total_time_s"] > cost["critical_path_s"]
    assert (data["bound"] != "path") == longer


@pytest.mark.parametrize("argv, message", [
    (["--at", "X=3"], "formula --at: X is not a symbol of the plan (its symbols: N)"),
    (["--at", "N=0"], "formula --at: 'N=0' is not SYMBOL=COUNT with a count ≥ 1 (e.g. N=131072)"),
    (["--at", "N=2M"], "closed form kv_bytes: N = 2097152 is outside [1, 1048576], where it was built "
                       "(max_position_embeddings 1048576)")])
def test_formula_at_errors_are_one_line(capsys, argv, message):
    status, out, err = run(capsys, "formula", "kv_bytes", *argv)
    assert (status, out, err) == (2, "", f"v41graph: error: {message}\n")
