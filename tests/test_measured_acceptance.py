"""Issue 11 acceptance: DeepSeek-V4-Flash with FP8 experts on h200_sxm, ``--cost hybrid``, the four
workloads: ≥ 90% of node time measured or interpolated, and each total within 25% of
AIConfigurator 0.12.0's SILICON estimate (409.07 / 211.86 / 54.31 / 14.81 ms, from the issue)."""

from __future__ import annotations

import json

import pytest

from v41graph import Plan, Request, load_model
from v41graph.costs.measured.tiers import CostMode
from v41graph.model.config import builtin_config_text
from v41graph.passes import compile

AIC_SILICON_MS = {("prefill", 1): 409.07, ("prefill", 8): 211.86, ("decode", 1): 54.31, ("decode", 8): 14.81}


@pytest.fixture(scope="module")
def fp8_model(tmp_path_factory):
    config = json.loads(builtin_config_text("deepseek-v4-flash"))
    config["expert_dtype"] = "fp8"  # as sgl-project/DeepSeek-V4-Flash-FP8
    path = tmp_path_factory.mktemp("fp8") / "deepseek-v4-flash-fp8.json"
    path.write_text(json.dumps(config))
    return load_model(path)


@pytest.mark.parametrize("kind, tp", sorted(AIC_SILICON_MS))
def test_v4_flash_fp8_hybrid_within_25_percent_of_aiconfigurator(fp8_model, kind, tp):
    request = Request.prefill(8192) if kind == "prefill" else Request.decode(8192, copies=64)
    report = compile(fp8_model, Plan([request], tp=tp, ep=tp), "h200_sxm", cost=CostMode("hybrid")).report("schedule")
    cov = report.coverage
    measured = cov["total"]["time_s"].get("measured", 0) + cov["total"]["time_s"].get("interpolated", 0)
    assert measured / cov["total"]["total_s"] >= 0.90
    assert abs(report.total_time_s * 1e3 / AIC_SILICON_MS[(kind, tp)] - 1) <= 0.25
    moe = next(n for n in cov["nodes"] if n["node"] == "L5.moe.experts")
    assert (moe["tier"], moe["parts"][0]["coords"]["moe_dtype"]) == ("measured", "fp8_block")
