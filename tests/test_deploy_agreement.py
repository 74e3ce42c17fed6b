"""deploy's analytic steady state agrees with the simulation of the same deployment within 15 % at the
acceptance picks (issue 35: 8 × h200_sxm, V4-Flash FP8, ISL 4000, OSL 1000, TTFT 1 s, TPOT 50 ms, the default
hybrid basis), aggregated both prefill first and with mixed chunks, and disaggregated."""

from __future__ import annotations

import pytest

from v41graph.analysis.deploy.deploy_price import Costers, price_aggregated, price_disaggregated
from v41graph.analysis.deploy.deploy_answer import _analytic
from v41graph.analysis.deploy.deploy_checked import _simulate
from v41graph.analysis.deploy.deploy_search import Question
from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance
from v41graph.cli.options.checkpoint_options import model_for
from v41graph.cli.options.cost_options import serving_cost_mode
from v41graph.cli.main import build_parser
from v41graph.costs.hardware import load_hardware
from v41graph.model.config import load_model

Q = Question(isl=4000, osl=1000, ttft_s=1.0, tpot_s=0.05, gpus=8)
ARGV = "deploy --model deepseek-v4-flash --hardware h200_sxm --gpus 8 --ttft 1s --tpot 50ms"


@pytest.fixture(scope="module")
def costers():
    args = build_parser().parse_args(ARGV.split())
    hardware = load_hardware("h200_sxm")
    model = model_for(args, hardware, load_model("deepseek-v4-flash"))  # the FP8 checkpoint h200 runs
    basis = serving_cost_mode(args, hardware.name)
    assert basis.basis == "hybrid"  # the acceptance question's default basis
    return Costers(model, hardware, basis.mode)


def _agree(analytic: dict, simulated: dict) -> dict[str, float]:
    return {"tpot": simulated["tpot_p50_s"] / analytic["tpot_s"] - 1,
            "tokens_per_s_per_gpu": simulated["tokens_per_s_per_gpu"] / analytic["tokens_per_s_per_gpu"] - 1}


@pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "prefill-first"])
def test_aggregated_pick_agrees_with_its_simulation(costers, mixed):
    inst = Instance(EngineMapping(4, 2, 1), 256, 4096, mixed=mixed)  # the TPOT-50 pick: 2× [tp4 dpattn2 cap256]
    a = _analytic(price_aggregated(costers, inst, 2, Q.isl, Q.osl), 8, Q.osl)
    s = _simulate(costers, "aggregated", (inst, 2), Q, None, a)
    assert s["requests"] >= 400 and s["steps"] > 0
    gaps = _agree(a, s)
    assert all(abs(g) <= 0.15 for g in gaps.values()), gaps
    if mixed:  # mixed chunks let the decode batch ride the prefill: more rate than prefill first, SLA met
        first = price_aggregated(costers, Instance(EngineMapping(4, 2, 1), 256, 4096), 2, Q.isl, Q.osl)
        assert a["rate_per_s"] > first.rate_per_s and s["meets_sla"]


def test_disaggregated_pick_agrees_with_its_simulation(costers):
    pre, dec = Instance(EngineMapping(4, 4, 4), 1024, 4096), Instance(EngineMapping(4, 4, 1), 512, 4096)
    a = _analytic(price_disaggregated(costers, pre, 1, dec, 1, Q.isl, Q.osl), 8, Q.osl)
    s = _simulate(costers, "disaggregated", (pre, 1, dec, 1), Q, None, a)
    gaps = _agree(a, s)
    assert all(abs(g) <= 0.15 for g in gaps.values()), gaps
    assert s["meets_sla"]
