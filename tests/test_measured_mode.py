"""OP / hybrid modes end to end: where the tables come from, modules that replace exactly what
they cover, transfers on the FP4-expert built-in, V4.1 coverage, and the CLI."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from helpers import run, run_json

from v41graph import Plan, Request, load_model
from v41graph.costs.measured import layout
from v41graph.costs.measured.modules import attention_group
from v41graph.costs.measured.tiers import CostMode
from v41graph.ir.ops import Fused
from v41graph.passes import compile, compile_graph

VENDORED = Path(__file__).resolve().parents[1] / "src" / "v41graph" / "data" / "measured"


# ---- where the tables come from -------------------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("aiconfigurator_core") is not None,
                    reason="aiconfigurator-core is installed: the extra serves instead of the vendored slice")
def test_without_the_extra_the_vendored_slice_serves():
    src = layout.find_source()
    assert (src.kind, src.root) == ("vendored", VENDORED / "systems")
    assert src.version_of("h200_sxm", "moe", "sglang") == "0.5.14"


def test_the_extra_is_found_by_find_spec_without_importing_it(tmp_path, monkeypatch):
    pkg = tmp_path / "aiconfigurator_core"
    (pkg / "systems" / "data" / "h200_sxm" / "gemm" / "sglang" / "0.5.14").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('aiconfigurator_core must not be imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == "aiconfigurator_core"]:
        monkeypatch.delitem(sys.modules, name)  # an earlier test of the process may have imported the real one
    src = layout.find_source()
    assert (src.kind, src.root) == ("extra", pkg / "systems")
    assert "aiconfigurator_core" not in sys.modules
    assert layout.find_source(VENDORED).kind == "root"  # --measured-root still wins


@pytest.mark.skipif(importlib.util.find_spec("aiconfigurator_core") is None,
                    reason="the measured extra (pip install -e '.[measured]') is not installed")
def test_the_real_extra_serves_every_system():
    src = layout.find_source()
    assert src.kind == "extra"
    assert src.path("b200_sxm", "gemm", "sglang", "gemm_perf").suffix == ".parquet"


def test_manifest_records_every_vendored_file_and_its_hash():
    manifest = json.loads((VENDORED / "MANIFEST.json").read_text())
    files = sorted(str(p.relative_to(VENDORED)) for p in (VENDORED / "systems" / "data").rglob("*.csv.gz"))
    assert [t["path"] for t in manifest["tables"]] == files
    import hashlib
    for t in manifest["tables"]:
        assert hashlib.sha256((VENDORED / t["path"]).read_bytes()).hexdigest() == t["sha256"]
    assert manifest["source"]["version"] == "0.12.0" and "Apache License" in (VENDORED / "LICENSE").read_text()
    assert "NVIDIA CORPORATION" in (VENDORED / "NOTICE").read_text()


# ---- modules replace exactly what they cover ------------------------------------------------------

def _module_row(ratio: int, isl: int) -> float:
    """The vendored CSA/HCA context row for V4-Flash TP1 at batch 1, read with the csv module."""
    kind = "csa" if ratio == 4 else "hca"
    path = VENDORED / f"systems/data/h200_sxm/sparse_attention/sglang/0.5.14/dsv4_{kind}_context_module_perf.csv.gz"
    with gzip.open(path, "rt") as f:
        for r in csv.DictReader(f):
            if (r["model"], r["num_heads"], r["tp_size"], r["batch_size"], r["isl"], r["step"]) == (
                    "sgl-project/DeepSeek-V4-Flash-FP8", "64", "1", "1", str(isl), "0"):
                return float(r["latency"]) / 1000
    raise AssertionError("row not found")


def test_attention_module_replaces_exactly_its_members_and_is_never_added_on_top():
    m = load_model("deepseek-v4-flash")
    plan = Plan([Request.prefill(8192)], fusion="two-pass")
    before = compile_graph(m, plan, check=False).graph
    members = attention_group(before, 2)  # layer 2: CSA
    covered = [c for n in members for c in (before.nodes[n].op.covers if isinstance(before.nodes[n].op, Fused)
                                              else (before.nodes[n].op,))]
    c = compile(m, plan, "h200_sxm", cost=CostMode("hybrid"), check=True)
    g, slots = c.graph, c.graph.annotation("schedule")
    module = g.nodes["L2.dsv4_attention"].op
    assert not any(n in g.nodes for n in members)
    assert list(module.covers) == covered and len(module.members) == len(covered)
    assert slots["L2.dsv4_attention"].op.time == _module_row(4, 8192)  # the row, not row + members
    assert c.report("measured_modules").modules == {"measured:dsv4_attention": 43}
    swa = slots["L0.dsv4_attention"].op.parts[0]  # an SWA-only layer: the HCA module stands in, flagged
    assert swa.tier == "transfer:op" and dict(swa.coords)["compress_ratio"] == 128
    # every node's time is its resolution's: the schedule sums nothing else
    assert sum(c.report("schedule").by_stage.values()) == pytest.approx(sum(s.op.time for s in slots.values()))


def test_routed_moe_is_one_module_when_the_profile_left_it_apart():
    m = load_model("deepseek-v4-flash")
    c = compile(m, Plan([Request.prefill(1024)], fusion="unfused"), "h200_sxm", cost=CostMode("hybrid"))
    g = c.graph
    assert "L5.moe.experts.up" not in g.nodes and "L5.moe.experts.swiglu" not in g.nodes
    assert [o.kind for o in g.nodes["L5.moe.experts"].op.covers] == ["RoutedExperts", "SwiGLU", "RoutedExperts"]
    assert len(g.annotation("schedule")["L5.moe.experts"].op.parts) == 1  # one lookup, not three


# ---- tiers on the built-ins ------------------------------------------------------------------------

def test_fp4_experts_on_h200_answer_in_hybrid_flagged_as_transfer():
    m = load_model("deepseek-v4-flash")  # official checkpoint: FP4 routed experts, no h200 table for them
    c = compile(m, Plan([Request.prefill(1024)], fusion="two-pass"), "h200_sxm", cost=CostMode("hybrid"))
    part = c.graph.annotation("schedule")["L5.moe.experts"].op.parts[0]
    assert part.tier == "transfer:dtype" and dict(part.coords)["moe_dtype"] == "fp8_block"
    cov = c.report("schedule").coverage
    assert cov["total"]["nodes"]["transfer:dtype"] == 43 and cov["total"]["time_s"]["transfer:dtype"] > 0
    without = compile(m, Plan([Request.prefill(1024)], fusion="two-pass"), "h200_sxm",
                       cost=CostMode("hybrid", transfers=()))
    assert without.graph.annotation("schedule")["L5.moe.experts"].op.tier == "sol"


@pytest.mark.parametrize("hardware", ["gb300", "h200_sxm"])
def test_v41_hybrid_prints_coverage_and_op_fails_in_one_line(capsys, hardware):
    s = run_json(capsys, "cost", "--prefill", "1024", "--hardware", hardware, "--cost", "hybrid")
    cov = s["coverage"]
    assert s["cost_mode"] == "hybrid" and cov["data"]["system"] == hardware
    assert cov["total"]["time_s"]["sol"] > 0 and "MhcCollapse" in cov["fell_back"]
    assert sum(cov["total"]["time_s"].values()) == pytest.approx(cov["total"]["total_s"])
    status, out, err = run(capsys, "cost", "--prefill", "1024", "--hardware", hardware, "--cost", "op")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("v41graph: error: --cost op: no measured data for node ") and "tokens=" in err


def test_hybrid_text_shows_the_tiers(capsys):
    status, out, _ = run(capsys, "cost", "--model", "deepseek-v4-flash", "--fusion", "two-pass", "--decode",
                         "64:8192", "--cost", "hybrid")
    assert status == 0
    assert "hybrid (OP, flagged fallback) forward" in out and "cost mode hybrid:" in out
    # the tables come from the measured extra when it is installed, else from the vendored slice
    source = "extra" if importlib.util.find_spec("aiconfigurator_core") is not None else "vendored"
    assert f"data: {source} · system h200_sxm" in out and "closed forms (v41graph formula) are SOL only" in out
    assert "per node:" not in out
    status, out, _ = run(capsys, "cost", "--model", "deepseek-v4-flash", "--fusion", "two-pass", "--decode",
                         "64:8192", "--cost", "hybrid", "--per-node")
    assert status == 0 and "per node:" in out and "    L0.dsv4_attention " in out


def test_hybrid_json_is_deterministic(capsys):
    argv = ("cost", "--model", "deepseek-v4-flash", "--fusion", "two-pass", "--prefill", "512", "--cost", "hybrid",
            "--json")
    first, second = run(capsys, *argv), run(capsys, *argv)
    assert first == second and first[0] == 0
    data = json.loads(first[1])
    assert [f["path"] for f in data["coverage"]["data"]["files"]][0].startswith("data/h200_sxm/")


def test_lookups_use_per_gpu_shapes_from_the_sharding_table():
    m = load_model("deepseek-v4-flash")
    c = compile(m, Plan([Request.prefill(8192)], tp=8, ep=8), "h200_sxm", cost=CostMode("hybrid"))
    slots = c.graph.annotation("schedule")
    coords = lambda node, i=0: dict(slots[node].op.parts[i].coords)  # noqa: E731
    # the shared expert runs on each GPU's scattered share of the tokens: 8192 / 8
    assert coords("L3.moe.shared") == {"gemm_dtype": "fp8_block", "m": 8192 // 8, "n": 2 * 2048, "k": 4096}
    assert coords("L3.moe.shared", 2) == {"gemm_dtype": "fp8_block", "m": 8192 // 8, "n": 4096, "k": 2048}
    # the LM head is vocab-parallel: 129,280 / 8 columns for the one logits row
    assert coords("head.proj") == {"gemm_dtype": "bfloat16", "m": 1, "n": 129280 // 8, "k": 4096}
    # the attention module at 64 / 8 local heads; the all-reduce of 8192 × 4096 bf16 values
    assert {k: coords("L3.dsv4_attention")[k] for k in ("num_heads", "tp_size")} == {"num_heads": 8, "tp_size": 8}
    assert coords("L3.attn.all_reduce")["message_size"] == 8192 * 4096  # elements (the tables count bf16 values)
