"""Closed forms (SPEC §5.2, DESIGN.md decisions 2 and 6) and the system figures (SPEC §7).

Closed forms come from the same cost code as the numbers, so they must agree with the numeric
schedule exactly: token×layers and KV bytes against SPEC's formulas, SOL time against the
scheduling pass's critical path (as exact fractions) at the binding and at other points inside
the range the closed form reports. Building a SOL closed form takes about a second, so each is
built once per module.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from types import SimpleNamespace

import numpy as np
import pytest
import sympy

from v41graph import Plan, Request, load_model
from v41graph.analysis.symbolic.query import ClosedForm, bind, closed_form, evaluate_at
from v41graph.passes import compile
from v41graph.passes import compile_graph
from v41graph.costs.requests.system import SystemFigures, system_figures
from v41graph.errors import CostError
from v41graph.symbols import B, L, N, length


@cache
def _model():
    return load_model()


@cache
def _form(plan: Plan, metric: str) -> ClosedForm:
    return closed_form(_model(), plan, metric)


@cache
def _numeric(plan: Plan):
    """(critical path, the exact total) of the numeric schedule of ``plan``: the total is
    max(critical path, busiest resource summed over all nodes), as exact fractions."""
    from v41graph.passes.scheduling import exact_path_time
    compiled = compile(_model(), plan, "h200_sxm")
    path = compiled.report("schedule").critical_path
    slots = compiled.graph.annotation("schedule").values()
    busiest = max(sum((Fraction(getattr(s.sol, r)) for s in slots), Fraction(0)) for r in ("compute", "memory", "comm"))
    return path, max(exact_path_time(compiled.graph, path), busiest)


PREFILL = Plan([Request.prefill(N)], decoder_replay="bounded")
DECODE_L = Plan([Request.decode(L, copies=64)])
DECODE_B = Plan([Request.decode(8192, copies=B)])


def _exact(cf: ClosedForm, **values) -> Fraction:
    v = cf.expr.subs({length(k): x for k, x in values.items()})
    assert v.is_Rational, v
    return Fraction(int(v.p), int(v.q))


# --------------------------------------------------------------------------- exact metrics


def test_token_layers_closed_form_is_spec_formula():
    expr = _form(PREFILL, "token_layers").expr
    assert sympy.simplify(expr - (21 * N + 19 * sympy.Min(N, 128))) == 0
    assert expr == 21 * N + 19 * sympy.Min(N, 128)


def test_kv_bytes_closed_form():
    # 4 owners: three encoder owners at m = 2, decoder owner 20 at m = 1; 288 + 68 B per entry
    expr = _form(PREFILL, "kv_bytes").expr
    assert sympy.simplify(expr - (356 * N + 1068 * sympy.floor(N / 2))) == 0
    assert expr.subs(N, 1_048_576) == 2_621_440 * 356 == 933_232_640  # 2,621,440 entries, 890 MiB (SPEC §1.4)


def _bytes(compiled, plan: Plan):
    from v41graph.costs.counts import CostContext
    from v41graph.costs.node import node_cost
    ctx = CostContext(_model(), plan)
    total = sum(node_cost(compiled.graph, n, ctx).total_bytes for n in compiled.graph.nodes)
    return int(total) if Fraction(total).denominator == 1 else sympy.Rational(Fraction(total).numerator,
                                                                              Fraction(total).denominator)


@pytest.mark.parametrize("n", [1, 100, 128, 129, 1000, 77_777])
def test_bytes_closed_form_equals_the_numbers_when_the_tail_is_the_whole_extend(n):
    # issue 10 (D3): +102,400 B at N = 1, +10,240,000 at 100, +13,107,200 at 128 before fusion
    # legality was decided per regime (N ≤ 128: L20 → L21 fuses, the tail being the whole prompt)
    plan = bind(PREFILL, {"N": n})
    assert _form(PREFILL, "bytes")(N=n) == _bytes(compile_graph(_model(), plan), plan)


def test_unknown_metric():
    with pytest.raises(CostError, match="unknown 'nope'.*sol_time"):
        closed_form(_model(), PREFILL, "nope")


# --------------------------------------------------------------------------- SOL time


def test_prefill_sol_time_equals_numeric_critical_path_exactly():
    cf = _form(PREFILL, "sol_time")
    assert cf.symbols == ("N",) and dict(cf.binding) == {"N": 8192}
    path, exact = _numeric(bind(PREFILL, {"N": 8192}))
    assert cf.critical_path == path
    assert _exact(cf, N=8192) == exact  # not approximately: the same rationals


def test_prefill_sol_time_holds_over_the_whole_domain_piece_by_piece():
    # issue 10: one path chosen at 8,192 was valid only on [7,531, 15,493]; now every regime
    # has its own piece, and the pieces cover 1 ≤ N ≤ max_position_embeddings
    cf = _form(PREFILL, "sol_time")
    assert cf.valid_range == (1, 1_048_576)
    assert cf.pieces[0][0] == 1 and cf.pieces[-1][1] == 1_048_576
    assert all(b + 1 == c for (_, b, _), (c, _, _) in zip(cf.pieces, cf.pieces[1:]))
    assert len(cf.pieces) > 1 and isinstance(cf.expr, sympy.Piecewise)
    assert cf.pieces[0][1] == 128  # N ≤ 128: the replay tail is the whole prompt, L20 → L21 fuses
    for lo, hi, _ in cf.pieces:  # at both ends of every piece: the same exact number
        for n in {lo, hi}:
            assert _exact(cf, N=n) == _numeric(bind(PREFILL, {"N": n}))[1], n


@pytest.mark.parametrize("n", [1, 64, 8192, 131_072, 524_288, 1_048_576, 3, 777, 20_000, 300_001, 999_999])
def test_prefill_sol_time_equals_the_schedule_anywhere(n):
    # issue 10's points (and a few more; benchmarks/closed_form_agreement.py runs 50 random ones):
    # the closed form chosen at 8,192 was ×0.852 at N = 1, ×0.945 at 128K, ×0.722 at 1M
    total = compile(_model(), bind(PREFILL, {"N": n}), "h200_sxm").report("schedule").total_time_s
    assert float(_form(PREFILL, "sol_time")(N=n)) == pytest.approx(total, rel=1e-9)


@pytest.mark.parametrize("plan, symbol, points", [(DECODE_L, "L", (4096, 8192)), (DECODE_B, "B", (32, 64))],
                         ids=["decode-in-L", "decode-in-B"])
def test_decode_sol_time_closed_forms(plan, symbol, points):
    cf = _form(plan, "sol_time")
    assert cf.symbols == (symbol,)
    lo, hi = cf.valid_range
    # decode at L reads one more position than L: L ≤ max_position_embeddings − 1
    assert (lo, hi) == ((1, 1_048_575) if symbol == "L" else (1, 2 ** 20))
    for x in points:
        path, exact = _numeric(bind(plan, {symbol: x}))
        assert cf.at(**{symbol: x}).critical_path == path
        assert _exact(cf, **{symbol: x}) == exact


def test_outside_its_domain_a_closed_form_refuses():
    cf = _form(PREFILL, "sol_time")
    for n in (0, 1_048_577):
        with pytest.raises(CostError, match=f"N = {n} is outside \\[1, 1048576\\].*max_position_embeddings"):
            cf(N=n)
    with pytest.raises(CostError, match="outside"):
        evaluate_at(cf, np.array([1, 2, 2 ** 21]))


def test_at_picks_the_piece_of_a_point():
    cf = _form(PREFILL, "sol_time")
    piece = cf.at(N=131_072)
    lo, hi = piece.valid_range
    assert lo <= 131_072 <= hi and (lo, hi) in [(a, b) for a, b, _ in cf.pieces]
    assert piece.critical_path == _numeric(bind(PREFILL, {"N": 131_072}))[0]
    assert piece(N=131_072) == cf(N=131_072)
    with pytest.raises(CostError, match="outside"):
        piece(N=hi + 1) if hi < 1_048_576 else piece(N=lo - 1)


def test_multi_symbol_forms_refuse_where_their_binding_does_not_hold():
    from v41graph.symbols import P, S
    plan = Plan([Request.extend(P, S)], decoder_replay="bounded")
    cf = closed_form(_model(), plan, "bytes")  # built at P = 8192, S = 1024: the tail is 128 of S
    for values in ({"P": 8192, "S": 1024}, {"P": 100, "S": 5000}):  # inside: the numbers exactly
        assert cf(**values) == _bytes(compile_graph(_model(), bind(plan, values)), bind(plan, values))
    with pytest.raises(CostError, match="does not hold at P=8192,S=100.*--at P=8192,S=100"):
        cf(P=8192, S=100)  # S ≤ 128: the replay tail is the whole extend, another fusion holds
    with pytest.raises(CostError, match="ends at position 1049000, past max_position_embeddings 1048576"):
        cf(P=1_048_000, S=1000)
    at = closed_form(_model(), plan, "bytes", binding={"P": 8192, "S": 100})
    numeric = compile_graph(_model(), bind(plan, {"P": 8192, "S": 100}))
    assert at(P=8192, S=100) == _bytes(numeric, bind(plan, {"P": 8192, "S": 100}))


def test_sol_time_closed_form_is_the_sum_along_its_path():
    cf = _form(PREFILL, "sol_time").at(N=8192)
    compiled = compile(_model(), bind(PREFILL, {"N": 8192}), "h200_sxm")
    slots = compiled.graph.annotation("schedule")
    assert len(cf.critical_path) > 100
    assert sum(Fraction(slots[n].sol.time) for n in cf.critical_path) == _exact(cf, N=8192)


def test_lambdified_sweep_of_a_million_points():
    cf = _form(PREFILL, "sol_time")
    xs = np.arange(1, 1_000_001)
    ys = evaluate_at(cf, xs)
    assert ys.shape == xs.shape and ys.dtype == np.float64
    assert np.isfinite(ys).all()
    for n in (1, 127, 128, 8192, 1_000_000):
        assert ys[n - 1] == pytest.approx(float(_exact(cf, N=n)), rel=1e-12)
    assert (np.diff(ys) > 0).all()  # a longer prompt never costs less along this path's formula


def test_sweep_of_a_constant_broadcasts():
    cf = ClosedForm("weights_bytes", sympy.Integer(7), ("N",))
    assert evaluate_at(cf, np.arange(3)).tolist() == [7.0, 7.0, 7.0]


# --------------------------------------------------------------------------- system figures


def _report(total: float):
    return SimpleNamespace(total_time_s=total)


def test_system_figures_prefill_and_decode():
    s = system_figures(Plan([Request.prefill(1000), Request.decode(4096, copies=64)]), _report(0.5))
    assert s == SystemFigures(forward_s=0.5, ttft_s=0.5, itl_s=0.5, output_tokens=65, throughput_tok_s=130.0)


def test_system_figures_decode_only_has_no_ttft():
    s = system_figures(Plan([Request.decode(8192, copies=8)]), _report(0.02))
    assert (s.ttft_s, s.itl_s, s.output_tokens) == (None, 0.02, 8)
    assert s.throughput_tok_s == pytest.approx(400.0)


def test_system_figures_chunks():
    # the middle chunk alone produces no token: no TTFT; the plan with the last chunk does
    middle = system_figures(Plan([Request.chunk(8192, 0, 4096)]), _report(0.1))
    assert (middle.ttft_s, middle.itl_s, middle.output_tokens, middle.throughput_tok_s) == (None, None, 0, 0.0)
    both = system_figures(Plan([Request.chunk(8192, 0, 4096), Request.chunk(8192, 4096, 4096)]), _report(0.2))
    assert (both.ttft_s, both.output_tokens) == (0.2, 1)


def test_system_figures_from_a_real_schedule():
    plan = Plan([Request.prefill(2048)], decoder_replay="bounded")
    report = compile(_model(), plan, "h200_sxm").report("schedule")
    s = system_figures(plan, report)
    assert s.forward_s == s.ttft_s == report.total_time_s > 0
    assert s.itl_s is None and s.output_tokens == 1


def test_system_figures_need_a_numeric_plan():
    with pytest.raises(CostError, match="numeric plan"):
        system_figures(Plan([Request.decode(8192, copies=B)]), _report(0.1))


def test_dspark_throughput_uses_prefix_survival_not_a_fixed_rate():
    from v41graph.costs.requests.system import dspark_throughput, expected_emitted
    from v41graph.errors import CostError

    # 1 + 0.9 + 0.72 + 0.504 + 0.3024 + 0.1512 = 3.5776 (survival of each prefix)
    assert expected_emitted([0.9, 0.8, 0.7, 0.6, 0.5]) == pytest.approx(3.5776, abs=1e-12)
    assert expected_emitted([0.9, 0.8, 0.7, 0.6, 0.5]) < 1 + 5 * 0.7  # the "mean rate × 5" overestimate
    assert dspark_throughput([1.0] * 5, 0.02, batch=4) == pytest.approx(4 * 6 / 0.02)
    with pytest.raises(CostError, match=r"acceptance\[1\]: must be a probability in \[0, 1\], got 1.5"):
        expected_emitted([0.5, 1.5])
    with pytest.raises(CostError, match="step time"):
        dspark_throughput([0.5], 0)
