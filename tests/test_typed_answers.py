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
    # a key an inlined record repeats keeps its first place, as dict assignment does (with_header's rule)
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
