"""Input that once hung, crashed or was silently mangled: each is refused with one line, quickly,
or gives the right answer (issue 14). The fuzz properties at the end keep it that way."""

from __future__ import annotations

import copy
import json

import pytest
import sympy
from helpers import run, run_json
from hypothesis import HealthCheck, given, settings, strategies as st

from v41graph import ConfigError, Plan, PlanError, Request, V41Error, load_model
from v41graph.cli.main import main
from v41graph.model.config import builtin_config_text, model_from_config
from v41graph.model.inventory import inventory
from v41graph.model.memory import cache_memory

V41 = json.loads(builtin_config_text("deepseek-v4.1-flash"))


@pytest.mark.parametrize("value, shown", [(sympy.zoo, "zoo"), (sympy.oo, "oo"), (sympy.Rational(3, 2), "3/2")])
def test_a_length_that_is_not_a_finite_integer_is_refused(value, shown):
    with pytest.raises(PlanError, match=f"^request prefill.prompt: must be a finite integer, got {shown}$"):
        Request.prefill(value)


def test_a_sympy_integer_is_a_length():
    assert Request.prefill(sympy.Integer(5)).new == 5


def test_repeated_request_flags_add_requests(capsys):
    once = run_json(capsys, "compile", "--prefill", "1000", "2000")["token_layers"]
    twice = run_json(capsys, "compile", "--prefill", "1000", "--prefill", "2000")["token_layers"]
    assert once == twice == 40 * (1000 + 2000)
    both = run_json(capsys, "compile", "--decode", "1:100", "--decode", "2:200")["token_layers"]
    assert both == 40 * (1 + 2)  # one token per sequence per layer


def test_too_many_chunks_are_refused_before_any_work(capsys):
    status, out, err = run(capsys, "cost", "--prefill", "1000000000000000", "--chunk", "512",
                           "--allow-past-max-position")
    assert status == 2 and out == ""
    assert err == ("v41graph: error: --chunk: a prompt of 1,000,000,000,000,000 tokens in chunks of 512 makes "
                   "1,953,125,000,000 chunks; at most 65,536 in a plan (cli/options/plan_options.py MAX_CHUNKS)\n")


def test_chunks_are_bounded_over_the_whole_plan(capsys):
    """Issue 37, item 8: four 1M-token prompts at chunk 16 (each within the bound alone) made
    262,144 chunk requests and ran 28 s in 1 GB; all prompts' chunks together are bounded now,
    before any request is made."""
    status, out, err = run(capsys, "cost", "--prefill", "1m", "1m", "1m", "1m", "--chunk", "16")
    assert (status, out) == (2, "")
    assert err == ("v41graph: error: --chunk: 4 prompts of 4,194,304 tokens in chunks of 16 makes 262,144 chunks; "
                   "at most 65,536 in a plan (cli/options/plan_options.py MAX_CHUNKS)\n")


def test_a_million_token_prompt_at_chunk_63_is_costed(capsys):
    """Issue 37, item 8: the fuzz case that ran past its limit, 16,645 chunk rows, costed in full
    (~3 s on 2 cores): every token counted once per layer."""
    data = run_json(capsys, "cost", "--prefill", "1m", "--chunk", "63", "--tp", "8", "--ep", "8")
    assert len(data["requests"]) == -(-(1 << 20) // 63) == 16_645
    assert data["token_layers"] == 40 * (1 << 20)


def test_ledger_rows_are_bounded_before_lowering():
    """Past MAX_LEDGER_ROWS requests × layers a plan is refused by the check every compile runs
    first (the Python API has no --chunk bound)."""
    from v41graph.ir.plan_checks import MAX_LEDGER_ROWS
    model = load_model("deepseek-v4-pro")  # 61 layers + 1 draft block
    fits = Plan([Request.decode(10, copies=1)] * (MAX_LEDGER_ROWS // 62))
    assert fits.check(model) is fits
    over = Plan([Request.decode(10, copies=1)] * (MAX_LEDGER_ROWS // 62 + 1))
    with pytest.raises(PlanError) as exc:
        over.check(model)
    assert str(exc.value) == ("plan requests: 67,651 requests (each chunk one) × 62 layers of 'deepseek-v4-pro' "
                              "make 4,194,362 ledger rows; at most 4,194,304 (ir/plan_checks.py MAX_LEDGER_ROWS)")


def test_a_layer_range_past_the_model_is_refused(capsys):
    status, _, err = run(capsys, "dot", "--layers", "0:1000000000")
    assert status == 2  # 40 layers, 0–39: the draft blocks (40–42) are drawn only under --dspark
    assert err == ("v41graph: error: dot --layers: 0:1000000000 goes past the last layer 39 of model "
                   "'deepseek-v4.1-flash'\n")


def test_a_decode_step_that_completes_a_compression_group_does_its_work():
    # Why decode at context 511 costs more than at 512 (issue 14, item 7): the token at position
    # 511 closes the 256th group of m = 2 at owners 2, 8 and 14, so that step pools, normalises,
    # quantises and writes one compressed entry per owner; the token at position 512 opens a
    # group and writes none. Work per step follows parity; over steps of equal parity it grows.
    from v41graph.costs.counts import CostContext
    from v41graph.costs.node import node_cost
    from v41graph.passes import compile_graph
    m = load_model()
    norms = {}
    for ctx in (511, 512, 513):
        plan = Plan([Request.decode(ctx)])
        g = compile_graph(m, plan, check=False).graph
        norms[ctx] = node_cost(g, "L2.cmp.norm", CostContext(m, plan)).total_bytes
    assert norms[512] < norms[511] == norms[513]


# ---------------------------------------------------------------- properties

_VALUES = st.one_of(st.integers(-3, 3), st.integers(1 << 20, 1 << 62), st.none(), st.booleans(), st.text(max_size=3),
                    st.floats(allow_nan=True), st.lists(st.integers(-2, 50), max_size=4), st.just({}))


@settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(sorted(V41["text_config"])), value=_VALUES)
def test_mutated_configs_raise_only_the_project_errors(key, value):
    config = copy.deepcopy(V41)
    config["text_config"][key] = value
    try:
        model = model_from_config(config)
        inventory(model).total_bytes
        cache_memory(model, 4096)
    except V41Error:
        pass


_FLAGS = st.lists(st.sampled_from([
    "--prefill", "--decode", "--extend", "--chunk", "--replay", "--tp", "--ep", "--dp", "--fusion", "--swa-lost",
    "--encoder-restore", "--json", "--model", "--hardware", "0", "1", "64", "1K", "-5", "2:100", "100:50", "x",
    "bounded", "off", "single-pass", "two-pass", "deepseek-v4-flash", "gb300", "", "1:0", "1M", "2M",
]), max_size=6)


# capsys is read (and so emptied) at the end of every example
@settings(max_examples=40, deadline=20000,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["layout", "memory", "compile", "cost", "formula", "dot"]), argv=_FLAGS)
def test_random_command_lines_exit_0_or_2(capsys, command, argv):
    capsys.readouterr()
    try:
        status = main([command, *argv])
    except SystemExit as exc:  # argparse's --help would exit 0; nothing else may escape
        status = exc.code
    out, err = capsys.readouterr()
    assert status in (0, 2)
    if status == 2:
        assert err.count("\n") == 1 and err.startswith("v41graph: ") and "Traceback" not in err


@settings(max_examples=8, deadline=30000, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 20000), more=st.integers(1, 5000))
def test_prefill_cost_is_monotone_in_length(n, more):
    assert _total_time(Request.prefill(n)) <= _total_time(Request.prefill(n + more))


@settings(max_examples=8, deadline=30000, suppress_health_check=[HealthCheck.too_slow])
@given(ctx=st.integers(1, 200000), steps=st.integers(1, 5000))
def test_decode_cost_is_monotone_in_context_over_steps_of_one_parity(ctx, steps):
    # a step that completes a compression group (m = 2) pools and writes an entry, the next does not
    # (test above): across steps of one parity, more context never costs less
    assert _total_time(Request.decode(ctx)) <= _total_time(Request.decode(ctx + 2 * steps))


def _total_time(request: Request) -> float:
    from v41graph.passes import compile
    return compile(load_model(), Plan([request]), "h200_sxm").report("schedule").total_time_s


def test_configs_refused_for_what_they_break():
    config = copy.deepcopy(V41)
    config["text_config"]["num_experts_per_tok"] = 1000
    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        model_from_config(config)
