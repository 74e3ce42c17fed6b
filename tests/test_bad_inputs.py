"""Inputs that once ran for minutes, returned a number for nonsense, raised an untyped error or
named the wrong thing (issue 22, items 7b and 8): each is now refused before any work, with one
line that names the option or key and its value (CLI exit 2) or a typed project error."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from helpers import run

from v41graph import ConfigError, Plan, PlanError, Request, load_model
from v41graph.errors import CostError
from v41graph.model.config import builtin_config_text, model_from_config


def _refused(capsys, *argv: str) -> str:
    """Run the CLI; it must exit 2 with exactly one line on stderr and nothing on stdout."""
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith("v41graph: error: "), err
    return err


# ---- 7b: configs that break model relations ------------------------------------------------------

def _v41(**text_config) -> dict:
    config = copy.deepcopy(json.loads(builtin_config_text("deepseek-v4.1-flash")))
    config["text_config"].update(text_config)
    return config


@pytest.mark.parametrize("groups", [7, 128, 65])  # does not divide 64; exceeds it (a multiple and not)
def test_o_groups_that_do_not_split_the_heads_are_refused_naming_both_keys(groups):
    with pytest.raises(ConfigError) as info:
        model_from_config(_v41(o_groups=groups))
    message = str(info.value)
    assert f"'text_config.o_groups' = {groups}" in message
    assert "'text_config.num_attention_heads' = 64" in message


@pytest.mark.parametrize("rope", [512, 513])  # head_dim is 512
def test_a_rope_part_as_large_as_the_head_is_refused_naming_both_keys(rope):
    with pytest.raises(ConfigError, match=rf"'text_config.qk_rope_head_dim' = {rope} and "
                                          r"'text_config.head_dim' = 512"):
        model_from_config(_v41(qk_rope_head_dim=rope))


def test_the_v4_family_is_checked_without_a_section_prefix():
    config = json.loads(builtin_config_text("deepseek-v4-flash"))
    config["o_groups"] = 3
    with pytest.raises(ConfigError, match=r"'o_groups' = 3 and 'num_attention_heads' = 64"):
        model_from_config(config)


def test_valid_relations_still_load():
    assert model_from_config(_v41(o_groups=16, qk_rope_head_dim=511)).o_groups == 16


# ---- 8: numpy integers are integers; floats, bools and strings are not ---------------------------

def test_numpy_integers_are_accepted_and_stored_as_ints():
    r = Request.prefill(np.int64(8192))
    assert r == Request.prefill(8192) and type(r.new) is int and type(r.prompt) is int
    d = Request.decode(np.int32(4096), copies=np.uint16(3))
    assert (d.cached, d.copies) == (4096, 3) and type(d.copies) is int
    p = Plan([r], tp=np.int64(8), ep=np.int8(8), replay_window=np.int64(64))
    assert (p.tp, p.ep, p.replay_window) == (8, 8, 64) and type(p.tp) is int
    assert p == Plan([Request.prefill(8192)], tp=8, ep=8, replay_window=64)


def test_numpy_integers_are_counts_in_the_library_functions_too():
    from v41graph.analysis.sweep.sweep_grid import grid
    from v41graph.costs.fpm.predict import Query
    from v41graph.model.gpu_memory import engram_hot_cache_bytes
    from v41graph.model.paging import pages_that_fit
    from v41graph.model.sharding import Mapping
    m = load_model()
    assert pages_that_fit(m, np.int64(227840 * 10 + 1)) == 10  # the docstring's example, in numpy
    q = Query.make("decode", np.int64(4), past_kv=np.int32(100))
    assert (q.batch_size, q.total_kv_read_tokens) == (4, 100) and type(q.batch_size) is int
    assert engram_hot_cache_bytes(m, Mapping(), np.int64(65536)) == engram_hot_cache_bytes(m, Mapping(), 65536)
    assert [type(p["prompt"]) for p in grid({"prompt": [np.int64(1024), np.int64(2048)]})] == [int, int]


@pytest.mark.parametrize("bad", [True, 8192.0, "8192", np.float64(8192)])
def test_a_non_integer_length_is_refused_by_name(bad):
    with pytest.raises(PlanError, match=r"^request prefill.prompt: must be an integer or sympy expression, got "):
        Request.prefill(bad)


@pytest.fixture(scope="module")
def flops_of_n():
    from v41graph import closed_form
    from v41graph.symbols import N
    return closed_form(load_model(), Plan([Request.prefill(N)]), "flops")


@pytest.mark.parametrize("bad", [1.5, 2.0, True, "x"])
def test_a_closed_form_refuses_a_value_that_is_not_an_integer(flops_of_n, bad):
    with pytest.raises(CostError, match=rf"^closed form flops: N = {bad!r} is not an integer token count$"):
        flops_of_n(N=bad)
    with pytest.raises(CostError, match=r"is not an integer token count"):
        flops_of_n.at(N=bad)


def test_a_closed_form_takes_numpy_integers(flops_of_n):
    assert flops_of_n(N=np.int64(100)) == flops_of_n(N=100)


# ---- 8: the CLI refuses before any work ----------------------------------------------------------

@pytest.mark.parametrize("rate, needle", [
    ("inf", "argument --rate: 'inf' is not a comma-separated list of positive rates (finite"),
    ("1e9", "simulate --rate 1e+09 × --duration 600 s: 6e+11 expected requests, over the limit of 100,000 per rate"),
    ("2,1e9", "over the limit of 100,000 per rate"),  # every rate is checked before the first runs
])
def test_simulate_bounds_the_workload_up_front(capsys, rate, needle):
    assert needle in _refused(capsys, "simulate", "--tp", "8", "--ep", "8", "--rate", rate)


def test_simulate_bounds_the_output_tokens_up_front(capsys):
    err = _refused(capsys, "simulate", "--tp", "8", "--ep", "8", "--output", "1M")
    # 2/s × 600 s = 1,200 expected requests × 1,048,576 tokens = 1.258e9 > 5e7
    assert "--output 1,048,576: 1.26e+09 expected output tokens, over the limit of 50,000,000" in err


def test_simulate_output_0_is_named_not_printed_as_a_repr(capsys):
    err = _refused(capsys, "simulate", "--tp", "8", "--ep", "8", "--output", "0")
    assert "simulate --output: must be an integer >= 1 token, got 0" in err and "Arrival(" not in err


def test_simulate_duration_inf_is_refused(capsys):
    assert "argument --duration: 'inf' is not a positive finite number" in _refused(
        capsys, "simulate", "--duration", "inf")


def test_poisson_arrivals_refuse_a_huge_workload_in_the_library_too():
    from v41graph.workload.arrivals import poisson_arrivals
    with pytest.raises(CostError, match="over the limit of 100,000 per rate"):
        poisson_arrivals(1e6, 1.0, 16, 4, seed=1)


@pytest.mark.parametrize("workers", ["0", "-1", "two"])
def test_sweep_workers_must_be_positive(capsys, workers):
    assert f"argument --workers: '{workers}' is not a positive number of processes" in _refused(
        capsys, "sweep", "--prompt", "100", "--workers", workers)


def test_sweep_api_refuses_zero_workers():
    from v41graph import sweep
    from v41graph.analysis.sweep.sweep_grid import SweepError
    with pytest.raises(SweepError, match=r"sweep workers: must be an integer >= 1 .*got 0"):
        sweep(prompt=[100, 200], workers=0)


@pytest.mark.parametrize("ratio", ["nan", "-1", "0", "inf"])
def test_ask_crossover_ratio_must_be_finite_and_positive(capsys, ratio):
    assert f"argument --ratio: '{ratio}' is not a finite ratio > 0" in _refused(
        capsys, "ask", "crossover", "--replay", "off,bounded", "--ratio", ratio)


def test_ask_crossover_api_refuses_nan_before_compiling():
    from v41graph.analysis.symbolic.solvers import crossover
    from v41graph.symbols import N
    m, p = load_model(), Plan([Request.prefill(N)])
    with pytest.raises(CostError, match=r"^ask crossover ratio: must be a finite number > 0 .*got nan$"):
        crossover(m, p, m, p, ratio=float("nan"))


def test_a_folder_is_not_reported_as_a_missing_file(capsys, tmp_path):
    assert f"hardware: '{tmp_path}' is not a regular file" in _refused(
        capsys, "cost", "--prefill", "10", "--hardware", str(tmp_path))
    assert f"fpm evaluate --holdout: cannot read '{tmp_path}': Is a directory" in _refused(
        capsys, "fpm", "evaluate", "aisimulate-gb300-off-v1", "--holdout", str(tmp_path))
    assert f"plot pareto --input: cannot read '{tmp_path}': Is a directory" in _refused(
        capsys, "plot", "pareto", "--input", str(tmp_path), "-o", str(tmp_path / "p.png"))


def test_dot_layers_names_the_last_layer_the_plan_draws(capsys):
    # V4.1-Flash: 40 layers (0–39); its 3 DSpark draft blocks (40–42) are drawn only under --dspark
    assert "goes past the last layer 39 of model 'deepseek-v4.1-flash'" in _refused(
        capsys, "dot", "--prefill", "10", "--layers", "38:40")
    assert "goes past the last layer 42 of model 'deepseek-v4.1-flash' and its draft blocks" in _refused(
        capsys, "dot", "--decode", "4:100", "--dspark", "--layers", "41:43")
    status, out, err = run(capsys, "dot", "--decode", "4:100", "--dspark", "--layers", "42")
    assert (status, err) == (0, "") and out.splitlines()[1].startswith("digraph")  # under the deployment comment
