"""Issue 36, item 5: analyses return frozen dataclasses whose ``to_json()`` is exactly what the CLI prints.

Each converted command is run through the CLI with ``--json`` and its output compared, character for
character, with the answer the analysis returns for the same question built here without the CLI.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from helpers import run
from v41graph import Plan, Request, load_model
from v41graph.analysis.answer import Priced, TypedAnswer, is_none, part
from v41graph.analysis.mapping_search import explicit
from v41graph.costs.hardware import load_hardware
from v41graph.model.checkpoints import choose_checkpoint


def _ran(model_name, gpu):
    """(the model as the checkpoint ``gpu`` runs by default, that choice), as every command resolves it."""
    hw = load_hardware(gpu)
    choice = choose_checkpoint(load_model(model_name), hw.has_fp4, None, gpu=hw.name)
    return choice.apply(load_model(model_name)), hw, choice


def _printed(capsys, *argv: str) -> str:
    status, out, err = run(capsys, *argv, "--json")
    assert (status, err) == (0, "")
    return out


@dataclasses.dataclass(frozen=True)
class _Row(TypedAnswer):
    head: dict = part(inline=True)
    tail: dict = part(inline=True)
    note: str | None = part(omit=is_none, default=None)
    pairs: tuple = ()


def test_the_field_walk_inlines_in_place_omits_and_lists_tuples():
    row = _Row({"a": 1, "b": 2}, {"b": 3, "c": 4}, pairs=((1, 2),))
    # a key an inlined record repeats keeps its first place, as dict assignment does
    assert list(row.to_dict().items()) == [("a", 1), ("b", 3), ("c", 4), ("pairs", [[1, 2]])]
    assert row.to_json() == json.dumps({"a": 1, "b": 3, "c": 4, "pairs": [[1, 2]]}, indent=2)
    assert _Row({}, {}, note="n").to_dict() == {"note": "n", "pairs": []}
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.note = "x"


def test_priced_writes_the_deployment_as_its_summary_and_one_checkpoint_as_a_record():
    model, hw, ckpt = _ran(None, "h200_sxm")
    choice = explicit(model, hw, Plan([Request.prefill(8)], tp=8, ep=8))
    d = Priced({"x": 1}, None, choice, (ckpt,)).to_dict()
    assert list(d) == ["x", "deployment", "checkpoint"]
    assert d["deployment"]["line"] == "8 × h200_sxm: tp 8 · ep 8 (explicit)" and d["deployment"]["gpus"] == 8
    assert d["checkpoint"] == ckpt.to_dict()
    assert Priced({"x": 1}, None, None, (ckpt, ckpt)).to_dict()["checkpoint"] == [ckpt.to_dict()] * 2


def test_simulate_json_is_the_answers_to_json(capsys):
    from v41graph.analysis.serving.simulate_answer import simulate_answer
    from v41graph.analysis.serving.step_basis import StepOptions, choose_step_basis
    model, hw, ckpt = _ran(None, "h200_sxm")
    choice = explicit(model, hw, Plan([Request.decode(1100)], tp=8, ep=8))
    step = choose_step_basis(model, hw, choice.mapping, StepOptions(cost="sol"))
    answer = simulate_answer(model, hw, choice, step, rates=(1.0,), prompt=1000, output=100, duration=5.0, seed=1,
                             checkpoints=(ckpt,))
    printed = _printed(capsys, "simulate", "--tp", "8", "--ep", "8", "--cost", "sol", "--rate", "1", "--duration",
                       "5", "--prompt", "1000", "--output", "100")
    assert printed == answer.to_json() + "\n"
    assert answer.body["mapping"] == {"tp": 8, "ep": 8, "dp": 1, "gpus": 8} and answer.basis["mode"] == "sol"


def test_simulate_serving_check_json_is_the_answers_to_json(capsys):
    from v41graph.analysis.serving.simulate_answer import serving_check_answer
    from v41graph.analysis.serving.step_basis import StepOptions, choose_step_basis
    model, hw, ckpt = _ran(None, "gb300")
    choice = explicit(model, hw, Plan([Request.decode(4096 + 256)], tp=4))
    step = choose_step_basis(model, hw, choice.mapping, StepOptions(cost="runtime"))
    answer = serving_check_answer(step, choice, checkpoints=(ckpt,))
    printed = _printed(capsys, "simulate", "--hardware", "gb300", "--tp", "4", "--cost", "runtime",
                       "--serving-check")
    assert printed == answer.to_json() + "\n"
    assert answer.basis["identity"].startswith("aisimulate-gb300-off-v1 (gb300 TP4; sol kernels")


def test_the_default_step_basis_is_runtime_on_gb300_tp4_and_hybrid_on_gb200_with_the_reason():
    from v41graph.analysis.serving.step_basis import StepOptions, choose_step_basis
    from v41graph.model.sharding import Mapping
    model = load_model()
    gb300 = choose_step_basis(model, load_hardware("gb300"), Mapping(tp=4), StepOptions())
    expected = ("runtime", "default", "aisimulate-gb300-off-v1")
    assert (gb300.basis.basis, gb300.basis.chosen, gb300.table.name) == expected
    gb200 = choose_step_basis(model, load_hardware("gb200"), Mapping(tp=4), StepOptions())
    assert (gb200.basis.basis, gb200.coster, gb200.table) == ("hybrid", None, None)
    assert gb200.basis.why == ("measured kernel tables cover gb200; the whole-forward table of gb200 TP4 "
                               "(aisimulate-gb200-calibration-v1) is vllm's, not SGLang's")
    # disaggregated serving never takes a default table: the graph's basis
    assert choose_step_basis(model, load_hardware("gb300"), Mapping(tp=4), StepOptions(), disagg=True).coster is None


@pytest.mark.parametrize("tp", ["auto", "1"])
def test_ask_max_context_json_is_the_answers_to_json(capsys, tp):
    """auto: the smallest deployment that fits (the model's limit); tp 1: the weights alone overflow, value 0."""
    from v41graph.analysis.mapping_search import smallest_fitting
    from v41graph.analysis.symbolic.ask_answers import Unfit, max_context_answer
    model, hw, ckpt = _ran(None, "h200_sxm")
    work = Plan([Request.prefill(1)])
    choice = smallest_fitting(model, hw, work) if tp == "auto" else explicit(model, hw, work)
    answer = max_context_answer(model, choice, hw)
    printed = _printed(capsys, "ask", "max-context", *(() if tp == "auto" else ("--tp", tp)))
    assert printed == Priced(answer, None, choice, (ckpt,)).to_json() + "\n"
    if tp == "1":
        assert isinstance(answer, Unfit) and answer.value == 0 and "the weights alone" in answer.method
    else:
        assert answer.value == 1_048_576 and answer.checks["bound_by"] == "max_position"


def test_ask_sensitivity_json_is_the_answers_to_json(capsys):
    from v41graph.analysis.basis import basis_record
    from v41graph.analysis.mapping_search import smallest_fitting
    from v41graph.analysis.symbolic.ask_answers import sensitivity_answer
    model, hw, ckpt = _ran(None, "h200_sxm")
    choice = smallest_fitting(model, hw, Plan([Request.prefill(2048)]))
    m = choice.mapping
    answer = sensitivity_answer(model, Plan([Request.prefill(2048)], tp=m.tp, ep=m.ep, dp=m.dp), hw, 2048)
    printed = _printed(capsys, "ask", "sensitivity", "--prefill", "2048")
    assert printed == Priced(answer, basis_record("sol"), choice, (ckpt,)).to_json() + "\n"
    assert list(answer.to_dict())[:3] == ["question", "prefill", "time_s"]


def test_deploy_json_and_deploy_json_file_are_the_answers_to_json(capsys, tmp_path):
    from v41graph.analysis.basis import serving_basis
    from v41graph.analysis.deploy.deploy_typed import deploy_answer, deploy_question
    hw = load_hardware("h200_sxm")
    ckpt = choose_checkpoint(load_model("deepseek-v4-flash"), hw.has_fp4, "fp4", fp4_on_hopper=True, gpu=hw.name,
                             field="--checkpoint", flag="--fp4-on-hopper")
    model = ckpt.apply(load_model("deepseek-v4-flash"))
    q = deploy_question(isl=1000, osl=100, ttft_s=2.0, tpot_s=0.05, gpus=2, requests=40)
    answer = deploy_answer(model, hw, q, serving_basis("sol", hw.name), checkpoints=(ckpt,), check=1,
                           axes={"replay": None, "engram": None, "verify": None})
    printed = _printed(capsys, "deploy", "--model", "deepseek-v4-flash", "--gpus", "2", "--ttft", "2s", "--tpot",
                       "50ms", "--isl", "1000", "--osl", "100", "--requests", "40", "--check", "1", "--cost", "sol",
                       "--checkpoint", "fp4", "--fp4-on-hopper", "-o", str(tmp_path / "o"))
    assert printed == answer.to_json() + "\n" == (tmp_path / "o" / "deploy.json").read_text(encoding="utf-8")
    assert list(answer.to_dict())[:5] == ["model", "hardware", "basis", "checkpoint", "question"]


def test_deploy_question_turns_a_token_target_into_a_rate_and_refuses_both_or_neither():
    from v41graph.analysis.deploy.deploy_typed import deploy_question
    from v41graph.errors import V41Error
    from v41graph.workload.arrivals import Arrival
    q = deploy_question(isl=4000, osl=1000, ttft_s=1.0, tpot_s=0.05, tokens_per_s=2500.0)
    assert (q.rate, q.gpus) == (2.5, 1)  # 2,500 output tokens/s at 1,000 per request
    assert deploy_question(isl=4000, osl=1000, ttft_s=1.0, tpot_s=0.05, rate=3.0, tokens_per_s=2500.0).rate == 3.0
    trace = [Arrival(0.0, 100, 4), Arrival(1.0, 300, 8)]
    assert (deploy_question(isl=1, osl=2, ttft_s=1.0, tpot_s=0.05, gpus=4, trace=trace).isl,) == (200,)
    with pytest.raises(V41Error, match="not both$"):
        deploy_question(isl=4000, osl=1000, ttft_s=1.0, tpot_s=0.05, gpus=8, rate=3.0)
    with pytest.raises(V41Error, match="not neither$"):
        deploy_question(isl=4000, osl=1000, ttft_s=1.0, tpot_s=0.05)
    with pytest.raises(V41Error, match="a trace brings its own rate"):
        deploy_question(isl=4000, osl=1000, ttft_s=1.0, tpot_s=0.05, tokens_per_s=100.0, trace=trace)


def test_dspark_json_is_the_answers_to_json(capsys):
    from v41graph.analysis.mapping_search import smallest_fitting
    from v41graph.analysis.serving.dspark_verify import dspark_answer, dspark_workload
    from v41graph.costs.requests.dspark_acceptance import Acceptance
    model, hw, ckpt = _ran(None, "h200_sxm")
    choice = smallest_fitting(model, hw, dspark_workload(model, 2048, [1, 4]))
    answer = dspark_answer(model, hw, Acceptance.parse("0.8,0.6"), [1, 4], choice, context=2048, checkpoints=(ckpt,))
    printed = _printed(capsys, "dspark", "--acceptance", "0.8,0.6", "--batch", "1,4", "--context", "2048")
    assert printed == answer.to_json() + "\n"
    assert answer.body["gpus"] == choice.mapping.gpus == 8 and answer.basis["mode"] == "sol"


@pytest.mark.parametrize("engram", ["hbm", "host"])
def test_memory_json_is_the_answers_to_json(capsys, engram):
    from v41graph.analysis.mapping_search import smallest_fitting
    from v41graph.analysis.plan_answers import HOT_CACHE_ROWS, memory_answer, memory_workload
    model, hw, ckpt = _ran(None, "h200_sxm")
    choice = smallest_fitting(model, hw, memory_workload(model, 65536, engram=engram))
    answer = memory_answer(model, hw, choice, 65536, engram=engram, checkpoints=(ckpt,))
    printed = _printed(capsys, "memory", "--context", "64K", "--engram", engram)
    assert printed == answer.to_json() + "\n"
    assert answer.basis is None and list(answer.to_dict())[-2:] == ["deployment", "checkpoint"]
    hot = answer.body["memory_per_gpu"]["weights_by_group"].get("engram_hot_cache")
    if engram == "hbm":
        assert hot is None
    else:  # the default hot cache is HOT_CACHE_ROWS rows, fewer rows hold less
        same = memory_answer(model, hw, choice, 65536, engram=engram, hot_cache_rows=HOT_CACHE_ROWS)
        assert hot == same.body["memory_per_gpu"]["weights_by_group"]["engram_hot_cache"] > 0
        fewer = memory_answer(model, hw, choice, 65536, engram=engram, hot_cache_rows=HOT_CACHE_ROWS // 2)
        assert fewer.body["memory_per_gpu"]["weights_by_group"]["engram_hot_cache"] * 2 == hot


def test_cost_json_is_the_answers_to_json_and_the_compile_is_never_in_it(capsys):
    from v41graph.analysis.plan_answers import cost_answer
    from v41graph.costs.measured.tiers import CostMode
    model, hw, ckpt = _ran(None, "h200_sxm")
    asked = Plan([Request.prefill(4096)])
    choice = explicit(model, hw, asked.with_policies(tp=8, ep=8))
    answer = cost_answer(model, hw, asked, choice, CostMode("sol"), checkpoints=(ckpt,))
    printed = _printed(capsys, "cost", "--prefill", "4096", "--tp", "8", "--ep", "8")
    assert printed == answer.to_json() + "\n"
    assert (answer.plan.tp, answer.plan.ep) == (8, 8) and answer.compiled.graph is not None
    assert not {"plan", "compiled"} & set(answer.to_dict())


def test_formula_json_is_the_answers_to_json_and_a_stray_symbol_is_refused(capsys):
    from v41graph.analysis.mapping_search import smallest_fitting
    from v41graph.analysis.plan_answers import formula_answer, formula_deployment
    from v41graph.errors import PlanError
    from v41graph.symbols import N
    model, hw, ckpt = _ran(None, "h200_sxm")
    plan = Plan([Request.prefill(N)])
    choice = formula_deployment(plan, {"N": 131072}, lambda bound: smallest_fitting(model, hw, bound))
    answer = formula_answer(model, hw, plan, "sol_time", choice, at={"N": 131072}, checkpoints=(ckpt,))
    assert _printed(capsys, "formula", "sol_time", "--at", "N=131072") == answer.to_json() + "\n"
    assert answer.basis["mode"] == "sol"
    with pytest.raises(PlanError, match=r"^formula --at: X is not a symbol of the plan \(its symbols: N\)$"):
        formula_deployment(plan, {"X": 3}, lambda bound: None)
    # past the model's positions the deployment is picked at the default binding (N = 8192)
    picked = []

    def pick(bound):
        picked.append(bound.requests[0].prompt)
        if len(picked) == 1:
            raise PlanError("past the model's positions")
        return "default"

    assert formula_deployment(plan, {"N": 1 << 21}, pick) == "default" and picked == [1 << 21, 8192]


def test_fpm_predict_and_evaluate_json_are_the_answers_to_json(capsys):
    from v41graph.analysis.forwards.fpm_answers import evaluate_answer, predict_answer
    from v41graph.costs.fpm.load import load_table
    from v41graph.costs.fpm.predict import Query
    table = load_table("aisimulate-gb300-off-v1")
    query = Query.make("decode", 2, None, past_kv=700)  # inside the measured domain
    predicted = predict_answer(load_model(), table, query, allow_unadmitted=True, sol_reference=True)
    assert _printed(capsys, "fpm", "predict", "aisimulate-gb300-off-v1", "--phase", "decode", "--batch", "2",
                    "--past-kv", "700", "--allow-unadmitted", "--sol-reference") == predicted.to_json() + "\n"
    assert list(predicted.to_dict())[-1] == "selection" and predicted.prediction.tier == "estimated"
    assert predicted.prediction.estimator == predicted.selection["chosen"]["decode"]  # leave-one-out's pick
    named = evaluate_answer(load_model(), table, estimator="interpolation")
    assert _printed(capsys, "fpm", "evaluate", "aisimulate-gb300-off-v1", "--estimator", "interpolation") == \
        named.to_json() + "\n"
    assert named.estimator == {"prefill": "interpolation", "decode": "interpolation"} and named.selection is None


def test_sweep_json_is_the_answers_to_json_with_one_basis_per_cost_mode(capsys):
    from v41graph.analysis.sweep.sweep_answer import sweep_answer
    from v41graph.analysis.sweep.sweep_grid import sweep
    result = sweep(prompt=[1024, 8192], hardware=["h200_sxm", "gb300"], progress=False, auto_mapping=True)
    answer = sweep_answer(result, default_basis=True)
    assert _printed(capsys, "sweep", "--prompt", "1K,8K", "--hardware", "h200_sxm,gb300") == answer.to_json() + "\n"
    assert [(b["mode"], b["why"]) for b in answer.basis] == [
        ("hybrid", "measured kernel tables cover gb300, h200_sxm")]
    assert "deployments" in answer.to_dict() and len(answer.deployments) == 2


def test_engram_prefetch_json_is_the_answers_to_json(capsys):
    from v41graph.analysis.mapping_search import smallest_fitting
    from v41graph.analysis.serving.engram_host import prefetch_answer, prefetch_workload
    from v41graph.workload.tokens import corpus_tokens
    from v41graph.ir.engram_rows import v4_fold
    from v41graph.model.engram_hash import hash_layout
    model, hw, ckpt = _ran(None, "h200_sxm")
    layout = hash_layout(None)
    choice = smallest_fitting(model, hw, prefetch_workload(2048, 8))
    answer = prefetch_answer(model, layout, v4_fold(layout), corpus_tokens("kjv", 2048), "h200_sxm", choice,
                             tokens=2048, batch=8, cache_rows=65536, checkpoints=(ckpt,))
    assert _printed(capsys, "engram", "--prefetch", "--batch", "8", "--tokens", "2K") == answer.to_json() + "\n"
    assert answer.body["gpus"] == choice.mapping.gpus and answer.basis["mode"] == "sol"
    from v41graph.errors import PlanError
    with pytest.raises(PlanError, match="1024 tokens over 1024 requests leave fewer than 2 per request"):
        prefetch_workload(1024, 1024)


def test_report_json_is_the_answers_to_json_and_report_json_holds_it(capsys, tmp_path):
    from v41graph.analysis.basis import serving_basis
    from v41graph.analysis.mapping_search import smallest_fitting
    from v41graph.analysis.report_data import report_answer, report_workload
    model, hw, ckpt = _ran(None, "h200_sxm")
    answer = report_answer(model, "h200_sxm", serving_basis("sol", "h200_sxm"),
                           smallest_fitting(model, hw, report_workload()), checkpoints=(ckpt,))
    printed = _printed(capsys, "report", "--cost", "sol", "--out", str(tmp_path / "r"))
    assert printed == answer.to_json() + "\n"
    assert json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8")) == answer.to_dict()


def test_report_on_an_alias_prices_the_built_in_it_names(capsys, tmp_path):
    """``report --hardware h200``: the alias is resolved in analysis (report_hardware), the answer the CLI prints."""
    from v41graph.analysis.basis import serving_basis
    from v41graph.analysis.mapping_search import smallest_fitting
    from v41graph.analysis.report_data import report_answer, report_hardware, report_workload
    assert [report_hardware(n) for n in ("h200", "b200", "gb300", "my/gpu.json")] == ["h200_sxm", "b200_sxm",
                                                                                       "gb300", "my/gpu.json"]
    model, hw, ckpt = _ran(None, "h200")
    answer = report_answer(model, report_hardware("h200"), serving_basis("sol", "h200_sxm"),
                           smallest_fitting(model, hw, report_workload()), checkpoints=(ckpt,))
    printed = _printed(capsys, "report", "--cost", "sol", "--hardware", "h200", "--out", str(tmp_path / "r"))
    assert printed == answer.to_json() + "\n" and answer.to_dict()["hardware"] == "h200_sxm"


def test_compile_json_is_the_answers_to_json_with_no_checkpoint(capsys):
    from v41graph.analysis.plan_answers import compile_answer
    model, hw, _ = _ran(None, "h200_sxm")
    asked = Plan([Request.prefill(4096)])
    answer = compile_answer(load_model(), asked, explicit(model, hw, asked.with_policies(tp=8, ep=8)), check=False)
    assert _printed(capsys, "compile", "--prefill", "4096", "--tp", "8", "--ep", "8") == answer.to_json() + "\n"
    assert "checkpoint" not in answer.to_dict() and answer.to_dict()["deployment"]["gpus"] == 8
