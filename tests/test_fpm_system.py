"""From plans to FPM coordinates and back; system figures from FPM, stating table, identity, boundary."""

from __future__ import annotations

import pytest

from test_fpm_identity import VLLM_GB200
from test_fpm_table import GB200
from v41graph import Plan, Request
from v41graph.costs.fpm.predict import Query, UnadmittedError
from v41graph.costs.fpm.system_figures import fpm_system_figures, plan_for_query, query_for_plan
from v41graph.costs.fpm.load import load_table


@pytest.fixture(scope="module")
def gb200():
    return load_table(GB200)


def test_query_for_plan_sums_over_requests():
    assert query_for_plan(Plan([Request.decode(1024, copies=2)])) == Query("decode", 2, 2, 2048)
    assert query_for_plan(Plan([Request.extend(512, 64)] * 2)) == Query("prefill", 2, 128, 1024)
    assert query_for_plan(Plan([Request.prefill(300)])) == Query("prefill", 1, 300, 0)


def test_plans_without_fpm_coordinates_say_why():
    mixed = query_for_plan(Plan([Request.prefill(64), Request.decode(64)]))
    assert mixed == "the plan mixes decode, prefill; FPM coordinates hold one phase (prefill or decode)"
    assert query_for_plan(Plan([Request.prefill(64), Request.prefill(32)])).startswith("unbalanced batch")


def test_plan_for_query_round_trips():
    for q in (Query("decode", 2, 2, 4096), Query("prefill", 2, 254, 3072), Query("prefill", 1, 129, 0)):
        assert query_for_plan(plan_for_query(q, tp=4)) == q
    assert plan_for_query(Query("prefill", 1, 8, 0)).requests[0].kind == "prefill"


def test_fpm_system_figures_of_a_covered_decode_plan(gb200):
    s = fpm_system_figures(gb200, Plan([Request.decode(1024, copies=2)], tp=4), "gb200", VLLM_GB200,
                           allow_unadmitted=True)
    forward = 757.4278912506998 / 1000  # the measured (decode, batch 2, past KV 2048) point
    assert s.answer.tier == "measured" and s.figures.forward_s == forward
    assert (s.figures.itl_s, s.figures.ttft_s, s.figures.output_tokens) == (forward, None, 2)
    assert s.figures.throughput_tok_s == 2 / forward
    assert s.table == GB200 and s.identity.gpu == "gb200" and s.boundary.startswith("vLLM native FPM")
    assert s.to_dict()["identity"]["admission"] == "not admitted"


def test_fpm_system_figures_of_an_interpolated_prefill(gb200):
    s = fpm_system_figures(gb200, Plan([Request.prefill(6)], tp=4), "gb200", VLLM_GB200, allow_unadmitted=True)
    obs = {p.total_prefill_tokens: p.observed_ms for p in gb200.points
           if p.phase == "prefill" and p.batch_size == 1 and p.total_kv_read_tokens == 0}
    forward = (obs[4] + (obs[8] - obs[4]) * 0.5) / 1000
    assert s.answer.tier == "interpolated" and s.figures.ttft_s == pytest.approx(forward, rel=1e-12)
    assert s.figures.itl_s is None and s.figures.throughput_tok_s == pytest.approx(1 / forward, rel=1e-12)


def test_fpm_system_figures_refuse_other_identities_and_shapes(gb200):
    on_gb300 = fpm_system_figures(gb200, Plan([Request.decode(64)], tp=4), "gb300", VLLM_GB200, allow_unadmitted=True)
    assert on_gb300.figures is None and on_gb300.answer.reason == "identity differs: gpu (table 'gb200', query 'gb300')"
    tp8 = fpm_system_figures(gb200, Plan([Request.decode(64)], tp=8), "gb200", VLLM_GB200, allow_unadmitted=True)
    assert tp8.figures is None and "tp (table 4, query 8)" in tp8.answer.reason
    mixed = fpm_system_figures(gb200, Plan([Request.prefill(8), Request.decode(64)], tp=4), "gb200", VLLM_GB200,
                               allow_unadmitted=True)
    assert mixed.figures is None and mixed.answer.query is None and mixed.answer.reason.startswith("the plan mixes")
    for plan in (Plan([Request.decode(64)], tp=4), Plan([Request.prefill(8), Request.decode(64)], tp=4)):
        with pytest.raises(UnadmittedError):
            fpm_system_figures(gb200, plan, "gb200", VLLM_GB200)


def test_cli_system_figures_state_table_identity_and_boundary(capsys):
    from helpers import run, run_json
    data = run_json(capsys, "fpm", "system", GB200, "--decode", "2:1024", "--tp", "4", "--allow-unadmitted")
    forward = 757.4278912506998 / 1000
    assert data["figures"] == {"forward_s": forward, "ttft_s": None, "itl_s": forward, "output_tokens": 2,
                               "throughput_tok_s": 2 / forward}
    assert data["table"] == GB200 and data["identity"]["tp"] == 4 and data["boundary"].startswith("vLLM native")
    status, out, _ = run(capsys, "fpm", "system", GB200, "--decode", "2:1024", "--tp", "4", "--allow-unadmitted")
    assert status == 0 and "ITL: 757.4279 ms" in out and "not client latency" in out
    other = run_json(capsys, "fpm", "system", GB200, "--decode", "2:1024", "--tp", "4", "--hardware", "gb300",
                     "--allow-unadmitted")
    assert other["figures"] is None and other["answer"]["reason"].startswith("identity differs: gpu")
    status, out, err = run(capsys, "fpm", "system", GB200, "--decode", "2:1024", "--tp", "4")
    assert (status, out) == (2, "") and err.count("\n") == 1 and "--allow-unadmitted" in err


def test_system_gpu_defaults_to_the_tables_and_system_answer_is_what_the_cli_prints(capsys):
    """Issue 36, item 5: fpm system's GPU default and its answer are analysis's; --json is the answer's to_json()."""
    from helpers import run
    from v41graph.analysis.forwards.fpm_answers import system_answer, system_gpu
    from v41graph.errors import CostError
    table = load_table(GB200)
    assert (system_gpu(table), system_gpu(table, "gb300"), system_gpu(table, "b200")) == ("gb200", "gb300",
                                                                                          "b200_sxm")
    with pytest.raises(CostError, match="^hardware: unknown name 'nosuch'"):
        system_gpu(table, "nosuch")
    answer = system_answer(table, Plan([Request.decode(1024, copies=2)], tp=4), "gb200", allow_unadmitted=True)
    assert answer.to_dict()["figures"]["itl_s"] == 757.4278912506998 / 1000
    status, out, _ = run(capsys, "fpm", "system", GB200, "--decode", "2:1024", "--tp", "4", "--allow-unadmitted",
                         "--json")
    assert (status, out) == (0, answer.to_json() + "\n")
