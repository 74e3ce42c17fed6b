"""compare: two sides' totals, per-stage and per-op-family deltas and memory, as text, Markdown, JSON."""

from __future__ import annotations

import json
import re

import pytest

from v41graph import Plan, Request, Side, compare, compile, load_model
from v41graph.model.inventory import inventory

from helpers import run


def test_deltas_are_b_minus_a_over_the_union_of_families():
    m = load_model()
    a, b = Plan([Request.prefill(4096)]), Plan([Request.prefill(4096)], tp=8, ep=8)
    c = compare(Side(m, a), Side(m, b))
    ra, rb = (compile(m, p).report("schedule") for p in (a, b))
    assert c["totals"]["total_time_s"]["a"] == ra.total_time_s and c["totals"]["total_time_s"]["b"] == rb.total_time_s
    assert c["delta"]["total_time_s"] == rb.total_time_s - ra.total_time_s
    for kind in set(ra.by_op) | set(rb.by_op):
        d = c["by_op"][kind]
        assert d["delta"] == rb.by_op.get(kind, 0.0) - ra.by_op.get(kind, 0.0)
    gemm = c["by_op"]["Gemm"]
    assert gemm["ratio"] == gemm["b"] / gemm["a"]
    assert c["memory"]["weights_bytes"]["a"] == c["memory"]["weights_bytes"]["b"] == inventory(m).total_bytes


def test_cli_two_models_text_markdown_json(capsys):
    argv = ["compare", "--model", "deepseek-v4-flash", "--model", "deepseek-v4.1-flash", "--prefill", "8192"]
    status, out, err = run(capsys, *argv)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("A: deepseek-v4-flash · h200_sxm") and lines[1].startswith("B: deepseek-v4.1-flash")
    # each side's checkpoint below the labels: V4-Flash on h200 runs the FP8 one, V4.1-Flash stays FP4
    assert lines[2].startswith("checkpoint: sgl-project/DeepSeek-V4-Flash-FP8 (fp8 experts")
    assert lines[3].startswith("checkpoint: deepseek-ai/DeepSeek-V4.1-Flash (fp4 experts")
    assert any(l.startswith("by op family (ms)") for l in lines)
    assert any(l.strip().startswith("attention") for l in lines)
    assert not any(l.strip().startswith("Fused") for l in lines)
    # V4 has no Engram: its family is 0 on side A, so B / A is '-'
    engram = next(l for l in lines if l.strip().startswith("Engram")).split()
    assert engram[1] == "0.000" and engram[-1] == "-"
    status, md, _ = run(capsys, *argv, "--markdown")
    assert status == 0 and "### by stage (ms)" in md
    assert re.sub(r" +", " ", md.split("### by stage (ms)")[1].splitlines()[2]) == "| | A | B | B − A | B / A |"
    status, js, _ = run(capsys, *argv, "--json")
    data = json.loads(js)
    assert [s["model"] for s in data["sides"]] == ["deepseek-v4-flash", "deepseek-v4.1-flash"]
    assert [s["policies"]["fusion"] for s in data["sides"]] == ["two-pass", "single-pass"]
    t = data["totals"]["total_time_s"]
    assert t["delta"] == pytest.approx(t["b"] - t["a"], rel=1e-12)


def test_cli_vs_changes_side_b_and_same_sides_fail(capsys):
    status, js, _ = run(capsys, "compare", "--prefill", "2048", "--vs", "tp=8,ep=8", "--json")
    data = json.loads(js)
    assert status == 0 and [s["policies"]["tp"] for s in data["sides"]] == [1, 8]
    status, _, err = run(capsys, "compare", "--prefill", "2048")
    assert status == 2 and "sides A and B are the same" in err
    status, _, err = run(capsys, "compare", "--vs", "colour=red")
    assert status == 2 and "KEY=VALUE" in err and err.count("\n") == 1


def test_compare_sides_builds_the_plan_once_and_changes_side_b_only():
    """Issue 36, item 5: the sides are analysis's (the CLI built the plan once per side before)."""
    from v41graph.analysis.comparison import compare_sides
    from v41graph.errors import PlanError
    m = load_model()
    plan = Plan([Request.prefill(64)], decoder_replay="off")
    a, b = compare_sides((m, m), ("h200_sxm", "gb300"), plan)
    assert (a.plan is plan, b.plan is plan, a.hardware, b.hardware) == (True, True, "h200_sxm", "gb300")
    a, b = compare_sides((m, m), ("h200_sxm", "h200_sxm"), plan, {"decoder_replay": "bounded", "tp": 4})
    assert (a.plan.decoder_replay, b.plan.decoder_replay, a.plan.tp, b.plan.tp) == ("off", "bounded", 1, 4)
    assert b.plan.requests == plan.requests
    with pytest.raises(PlanError, match="^compare: sides A and B are the same; give two --model"):
        compare_sides((m, m), ("h200_sxm", "h200_sxm"), plan, {"tp": 1})
