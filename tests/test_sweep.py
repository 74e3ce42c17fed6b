"""Sweeps: grid order, rows against compiled forwards, invalid points as rows, the closed-form fast
path against compiles, byte-identical CSV across executors, Pareto flags, the CLI."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import numpy as np
import pytest

from v41graph import Plan, Request, compile, load_model, sweep
from v41graph.analysis.sweep.sweep_result import SweepResult
from v41graph.analysis.sweep.length_sweep import LengthSweep
from v41graph.analysis.pareto import pareto_flags
from v41graph.analysis.sweep.sweep_grid import SweepError, grid
from v41graph.analysis.sweep.sweep_jobs import Job, LengthJob, run_job, run_length_job
from v41graph.analysis.gpu_summary import memory_per_gpu, workspace_bytes
from v41graph.costs.hardware import load_hardware
from v41graph.analysis.sweep.sweep_result import COLUMNS
from v41graph.errors import CostError
from v41graph.symbols import N

from helpers import run


def _forward(plan: Plan, hardware: str = "h200_sxm", cost=None) -> float:
    return compile(load_model(), plan, hardware, cost=cost).report("schedule").total_time_s


def test_grid_is_cartesian_in_axis_order_and_zip_advances_together():
    pts = grid({"prompt": [1, 2, 3], "tp": [1, 8], "replay": ["off", "bounded"]})
    assert len(pts) == 3 * 2 * 2
    # axis order is AXES order (tp before prompt before replay), the last axis fastest
    assert [(p["tp"], p["prompt"], p["replay"]) for p in pts[:4]] == [(1, 1, "off"), (1, 1, "bounded"),
                                                                       (1, 2, "off"), (1, 2, "bounded")]
    zipped = grid({"prompt": [1, 2, 3], "batch": [4, 5, 6], "tp": [1, 8]}, zip_axes=["prompt", "batch"])
    assert [(p["tp"], p["batch"], p["prompt"]) for p in zipped] == [
        (1, 4, 1), (1, 5, 2), (1, 6, 3), (8, 4, 1), (8, 5, 2), (8, 6, 3)]


@pytest.mark.parametrize("axes, message", [
    ({"tp": [0]}, "sweep tp: expected integers >= 1, got 0"),
    ({"replay": ["sometimes"]}, "sweep replay: unknown value 'sometimes'"),
    ({"colour": [1]}, "sweep: unknown axis 'colour'"),
])
def test_bad_axes_raise(axes, message):
    with pytest.raises(SweepError, match=message):
        grid(axes)


def test_zip_needs_equal_lengths():
    with pytest.raises(SweepError, match="batch=3, prompt=2"):
        grid({"prompt": [1, 2], "batch": [1, 2, 3]}, zip_axes=["prompt", "batch"])


def test_rows_equal_the_compiled_forwards():  # tp8: V4.1-Flash fits an H200 only when split
    r = sweep(prompt=[2048], batch=[4], tp=[8], replay=["bounded"], cost_mode=["sol"], executor="serial")
    (row,) = r.rows
    prefill = Plan([Request.prefill(2048)], decoder_replay="bounded", tp=8)  # the request's own prompt
    decode = Plan([Request.decode(2048, copies=4)], decoder_replay="bounded", tp=8)
    ttft, itl = _forward(prefill), _forward(decode)
    assert row["ttft_s"] == ttft and row["itl_s"] == itl
    assert row["tok_s_per_user"] == 4 / 4 / itl  # 4 decode tokens per step, 4 users
    assert (row["valid"], row["reason"], row["coverage"], row["method"]) == (True, "", 1.0, "compiled")
    assert row["decode_bound"] == "memory"


def test_the_default_is_a_forecast_beside_its_sol_ceiling():
    """Issue 34, item 2: the sweep's serving columns are a forecast by default (hybrid, measured kernel tables
    cover h200_sxm), each point beside its SOL twin — the very figures of a SOL compile — with the ratios."""
    from v41graph.costs.measured.tiers import TRANSFERS, CostMode
    r = sweep(prompt=[2048], batch=[4], tp=[8], ep=[8], executor="serial")
    (row,) = r.rows
    hybrid = CostMode("hybrid", TRANSFERS, None)
    prefill, decode = Plan([Request.prefill(2048)], tp=8, ep=8), Plan([Request.decode(2048, copies=4)], tp=8, ep=8)
    assert row["cost_mode"] == "hybrid"
    assert row["ttft_s"] == _forward(prefill, cost=hybrid) and row["itl_s"] == _forward(decode, cost=hybrid)
    assert row["sol_ttft_s"] == _forward(prefill) and row["sol_itl_s"] == _forward(decode)
    assert row["itl_over_sol"] == row["itl_s"] / row["sol_itl_s"] > 1
    assert row["ttft_over_sol"] == row["ttft_s"] / row["sol_ttft_s"] > 1
    assert 0 < row["coverage"] < 1  # the share a table measured: V4.1's FP4 experts have no Hopper table
    assert r.note.startswith("cost_mode auto, a forecast: hybrid where measured kernel tables cover the GPU, else "
                             "sol (h200_sxm: hybrid)")
    (sol,) = sweep(prompt=[2048], batch=[4], tp=[8], ep=[8], cost_mode=["sol"], executor="serial").rows
    assert (sol["ttft_s"], sol["itl_s"], sol["sol_itl_s"]) == (row["sol_ttft_s"], row["sol_itl_s"], None)


def test_invalid_points_are_rows_with_a_reason():
    # 7 does not divide the 64 heads; bounded replay needs V4.1; V4.1-Flash's 477 GiB of weights do
    # not fit one H200 (141 GB): rows, not a crash
    r = sweep(tp=[8, 7, 1], ep=[8], prompt=[1024], executor="serial")
    assert [row["valid"] for row in r.rows] == [True, False, False]
    assert r.rows[1]["reason"] == "PlanError: plan tp: 7 does not divide the 64 attention heads"
    assert r.rows[1]["ttft_s"] is None and r.rows[1]["fits"] is None
    assert r.rows[2]["reason"].startswith("does not fit: ") and r.rows[2]["fits"] is False
    assert r.rows[2]["ttft_s"] > 0  # its figures stay
    v4 = sweep(model=["deepseek-v4-flash"], replay=["off", "bounded"], tp=[8], ep=[8], prompt=[1024],
               executor="serial")
    assert [row["valid"] for row in v4.rows] == [True, False]
    assert "needs a causal encoder-decoder" in v4.rows[1]["reason"]


def test_other_cost_modes_are_rows_that_say_so():
    r = sweep(cost_mode=["sol", "fpm"], prompt=[1024], tp=[8], executor="serial")
    assert [row["valid"] for row in r.rows] == [True, False]
    assert "'fpm' is not served by the sweep's jobs" in r.rows[1]["reason"]


def test_per_gpu_figures_come_from_the_mapping():
    (row,) = sweep(prompt=[4096], batch=[16], tp=[4], ep=[8], cost_mode=["sol"], executor="serial").rows
    m = load_model()
    prefill = Plan([Request.prefill(4096)], tp=4, ep=8)
    decode = Plan([Request.decode(4096, copies=16)], tp=4, ep=8)
    hw = load_hardware("h200_sxm")
    pre, dec = compile(m, prefill, hw), compile(m, decode, hw)
    # the decode batch's caches resident with each job's workspace, checked apart
    mem_pre = memory_per_gpu(m, decode, hw, workspace=workspace_bytes(pre.graph))
    mem_dec = memory_per_gpu(m, decode, hw, workspace=workspace_bytes(dec.graph))
    assert row["gpus"] == 8  # max(tp × dp, ep) = max(4, 8)
    assert row["prefill_memory_gib"] == mem_pre["total_bytes"] / 2**30  # the raw HBM figures, with each workspace
    assert row["decode_memory_gib"] == mem_dec["total_bytes"] / 2**30
    assert row["per_gpu_memory_gib"] == max(mem_pre["total_bytes"], mem_dec["total_bytes"]) / 2**30
    # fits: the one rule (issue 37), weights + cache within the 90 % budget, as cost's memory_per_gpu judges
    assert row["static_memory_gib"] == mem_dec["static_bytes"] / 2**30 == mem_pre["static_bytes"] / 2**30
    assert row["budget_gib"] == 126_900_000_000 / 2**30 and row["fits"] is mem_dec["fits"] is True
    itl = dec.report("schedule").total_time_s
    assert row["tok_s_per_gpu"] == 16 / itl / 8 and row["valid"] and row["fit_note"] == ""


def test_closed_form_fast_path_equals_compiled_at_20_random_points():
    rng = np.random.default_rng(13)
    lengths = np.unique(rng.integers(1, 1_000_001, 20))
    plan = Plan([replace(Request.prefill(N), copies=2)], decoder_replay="bounded", tp=8, ep=8)
    out = LengthSweep(load_model(), plan, "h200_sxm").evaluate(lengths)
    for n, got in zip(lengths.tolist(), out["forward_s"]):
        exact = _forward(Plan([replace(Request.prefill(n), copies=2)], decoder_replay="bounded", tp=8, ep=8))
        assert got == pytest.approx(exact, rel=1e-9), n


def test_fast_path_bound_and_decode_match_compiled_jobs():
    shape = Job("decode", "deepseek-v4.1-flash", "h200_sxm", 1, 1, 1, 16, 0)
    lengths = (3, 500, 4096, 70000)
    fast = run_length_job(LengthJob(shape, lengths))
    for n in lengths:
        slow = run_job(replace(shape, length=n))
        assert fast[n]["forward_s"] == pytest.approx(slow["forward_s"], rel=1e-9)
        assert fast[n]["bound"] == slow["bound"] and fast[n]["output_tokens"] == slow["output_tokens"] == 16
        assert (fast[n]["method"], slow["method"]) == ("closed-form", "compiled")


def test_length_sweep_rejects_bad_input():
    with pytest.raises(CostError, match="exactly one free length symbol"):
        LengthSweep(load_model(), Plan([Request.prefill(1024)]), "h200_sxm")
    ls = LengthSweep(load_model(), Plan([Request.decode(N)]), "h200_sxm")
    with pytest.raises(CostError, match="integers >= 1"):
        ls.evaluate(np.array([0, 5]))


def test_sweep_uses_the_fast_path_for_many_lengths_and_agrees():
    lengths = [1000 + 997 * k for k in range(6)]
    fast = sweep(prompt=lengths, batch=[2], tp=[8], cost_mode=["sol"], executor="serial", fast_min=4)
    slow = sweep(prompt=lengths, batch=[2], tp=[8], cost_mode=["sol"], executor="serial", fast_min=100)
    assert {r["method"] for r in fast.rows} == {"closed-form"} and {r["method"] for r in slow.rows} == {"compiled"}
    for a, b in zip(fast.rows, slow.rows):
        assert a["ttft_s"] == pytest.approx(b["ttft_s"], rel=1e-9) and a["itl_s"] == pytest.approx(b["itl_s"], rel=1e-9)
        assert (a["prefill_bound"], a["decode_bound"]) == (b["prefill_bound"], b["decode_bound"])
        assert a["per_gpu_memory_gib"] == pytest.approx(b["per_gpu_memory_gib"], rel=1e-12) and a["fits"] == b["fits"]


def test_local_pool_gives_byte_identical_csv(tmp_path):
    axes = dict(prompt=[1024], tp=[7, 8], replay=["off", "bounded"])
    serial = sweep(executor="serial", **axes).to_csv()
    local = sweep(executor="local", workers=2, **axes).to_csv()
    assert serial == local
    lines = serial.splitlines()
    assert lines[0] == ",".join(COLUMNS) and len(lines) == 1 + 4


def test_writers(tmp_path):
    r = sweep(prompt=[1024], tp=[8, 7], executor="serial")
    r.write(tmp_path / "s.csv")
    r.write(tmp_path / "s.jsonl")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "s.csv").read_text())))
    assert [row["valid"] for row in rows] == ["true", "false"] and rows[1]["ttft_s"] == ""
    objs = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert list(objs[0]) == list(COLUMNS) and objs[0]["ttft_s"] == r.rows[0]["ttft_s"]
    with pytest.raises(Exception, match="unsupported suffix '.xlsx'"):
        r.write(tmp_path / "s.xlsx")


def test_parquet_round_trip(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (extra v41graph[dataframe])")
    r = sweep(prompt=[1024, 2048], tp=[8], executor="serial")
    r.write(tmp_path / "s.parquet")
    table = pq.read_table(tmp_path / "s.parquet")
    assert table.num_rows == 2 and table.column("ttft_s").to_pylist() == [row["ttft_s"] for row in r.rows]


def test_pareto_flags_by_hand():
    rows = [{"valid": True, "x": 10.0, "y": 1.0, "ttft_s": 1.0, "itl_s": 0.01, "fits": True},
            {"valid": True, "x": 5.0, "y": 5.0, "ttft_s": 1.0, "itl_s": 0.01, "fits": True},
            {"valid": True, "x": 4.0, "y": 4.0, "ttft_s": 1.0, "itl_s": 0.01, "fits": True},   # dominated by row 1
            {"valid": True, "x": 1.0, "y": 9.0, "ttft_s": 9.0, "itl_s": 0.01, "fits": True},   # too slow a TTFT
            {"valid": True, "x": 20.0, "y": 20.0, "ttft_s": 1.0, "itl_s": 0.01, "fits": False},  # does not fit
            {"valid": False, "x": None, "y": None}]
    flags, note = pareto_flags(rows, x="x", y="y", ttft_max=2.0)
    assert flags == [True, True, False, False, False, False] and note == ""
    flags, _ = pareto_flags(rows, x="x", y="y", require_fit=False)
    assert flags == [False, False, False, False, True, False]


def test_result_display_and_records():
    r = sweep(prompt=[1024, 2048], tp=[8], executor="serial")
    assert len(repr(r)) <= 300 and repr(r).startswith("SweepResult(2 rows, 2 valid")
    assert "<table>" in r._repr_html_() and r._repr_html_().count("<tr>") == 3
    assert [rec["prompt"] for rec in r.to_records()] == [1024, 2048]
    pd = pytest.importorskip("pandas", reason="pandas not installed (extra v41graph[dataframe])")
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame) and df.shape == (2, len(COLUMNS))
    assert isinstance(SweepResult((), COLUMNS), SweepResult)


def test_cli_sweep_json_csv_and_bad_input(capsys, tmp_path):
    status, out, err = run(capsys, "sweep", "--prompt", "1K,2K", "--tp", "8,7", "--json")
    data = json.loads(out)
    assert (status, err) == (0, "") and [r["valid"] for r in data["rows"]] == [True, True, False, False]
    status, out, err = run(capsys, "sweep", "--prompt", "1K", "-o", str(tmp_path / "s.csv"))
    # no mapping given: the point on the smallest that fits, said first (issue 37)
    assert status == 0 and err == "" and out.startswith(
        f"deployment: 8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)\nwrote 1 rows to {tmp_path / 's.csv'}")
    status, out, err = run(capsys, "sweep", "--prompt", "1K", "--replay", "maybe")
    assert status == 2 and err.count("\n") == 1 and "unknown value 'maybe'" in err
    status, out, _ = run(capsys, "sweep", "--prompt", "1K,2K", "--tp", "1,8")
    assert status == 0 and "4 rows, 2 invalid (first: does not fit: " in out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_only(monkeypatch):
    from v41graph.cli.main import main
    for argv, bar in ((["sweep", "--prompt", "1K,2K"], True), (["sweep", "--prompt", "1K,2K", "--json"], False)):
        err, out = _Terminal(), io.StringIO()
        monkeypatch.setattr("sys.stderr", err)
        monkeypatch.setattr("sys.stdout", out)
        assert main(argv) == 0
        # 2 points × (prefill, decode) × (the hybrid forecast, its SOL ceiling) = 8 jobs
        assert ("sweep: 100%" in err.getvalue() and "8/8" in err.getvalue()) is bar
        assert bar or err.getvalue() == ""
    pipe = io.StringIO()  # not a terminal: no bar
    monkeypatch.setattr("sys.stderr", pipe)
    assert main(["sweep", "--prompt", "1K"]) == 0 and pipe.getvalue() == ""


def test_ttft_is_the_requests_own_prefill_in_scheduler_chunks():
    """A 20,000-token prompt in 8K chunks: three chunk forwards one after another, as simulate cuts it."""
    from v41graph.model.paging import CHUNKED_PREFILL_SIZE
    (row,) = sweep(prompt=[20000], batch=[8], tp=[8], ep=[8], cost_mode=["sol"], executor="serial").rows
    assert row["chunk"] == CHUNKED_PREFILL_SIZE == 8192 and row["method"] == "compiled (3 chunks)+compiled"
    chunks = [Plan([Request.chunk(20000, s, n)], tp=8, ep=8) for s, n in ((0, 8192), (8192, 8192), (16384, 3616))]
    assert row["ttft_s"] == sum(_forward(p) for p in chunks)
    whole = sweep(prompt=[20000], batch=[8], tp=[8], ep=[8], chunk=[20000], cost_mode=["sol"],
                  executor="serial").rows[0]
    assert whole["method"] == "compiled" and whole["ttft_s"] == _forward(Plan([Request.prefill(20000)], tp=8, ep=8))


def test_decode_batch_128_at_8k_fits_as_cost_says(capsys):
    """Issue 24: the batch's caches with one chunk's prefill workspace fit, as `cost --decode 128:8K` does."""
    (row,) = sweep(prompt=[8192], batch=[128], tp=[8], ep=[8], executor="serial").rows
    status, out, err = run(capsys, "cost", "--decode", "128:8K", "--tp", "8", "--ep", "8", "--json")
    mem = json.loads(out)["memory_per_gpu"]
    assert mem["fits"] and row["fits"] and row["valid"]
    assert row["static_memory_gib"] == mem["static_bytes"] / 2**30  # the same plan, the same verdict
    assert row["decode_memory_gib"] == mem["total_bytes"] / 2**30  # the same plan, the same figure
    status, out, err = run(capsys, "sweep", "--tp", "8", "--ep", "8", "--batch", "128", "--prompt", "8K")
    lines = out.splitlines()
    table = next(i for i, line in enumerate(lines) if "tp" in line.split())  # under the basis line(s)
    head, line = lines[table:table + 2]
    for column in ("dp", "gpus", "tok_s_per_gpu", "tok_s_per_user", "fits", "valid"):
        assert column in head.split()
    cells = dict(zip(head.split(), line.split()))
    assert (cells["dp"], cells["gpus"], cells["fits"], cells["valid"]) == ("1", "8", "yes", "True")


def test_sweep_text_lives_in_render_and_run_sweep_in_analysis():
    """Issue 36, item 5: the CLI parses, calls and renders; the table, its columns and the screen are render's."""
    from v41graph.analysis.sweep.sweep_answer import run_sweep
    from v41graph.analysis.sweep.sweep_result import SweepResult
    from v41graph.render.text.sweep_text import FITS_NOTE, shown_columns, sweep_screen
    rows = ({"model": "m", "hardware": "h200_sxm", "replay": "off", "valid": True, "fits": None},
            {"model": "m", "hardware": "h200_sxm", "replay": "bounded", "valid": False, "reason": "r"})
    result = SweepResult(rows)
    assert shown_columns(result) == ("model", "hardware", "tp", "ep", "dp", "gpus", "batch", "prompt", "replay",
                                     "ttft_s", "itl_s", "tok_s_per_user", "tok_s_per_gpu", "fits", "valid")
    assert "context" in shown_columns(result, given=("context",))
    assert sweep_screen(result, [], written="wrote 2 rows to x.csv") == "wrote 2 rows to x.csv (1 valid, 1 invalid)\n"
    screen = sweep_screen(result, [])
    assert screen.startswith("\nmodel ") and screen.endswith("\n" + FITS_NOTE + "no figures\n")
    assert "2 rows, 1 invalid (first: r)\n" in screen
    swept = run_sweep({"prompt": [1024], "tp": [8], "ep": [8], "batch": None}, workers=1, quiet=True, pareto=True)
    assert swept.deployments == () and [r["pareto"] for r in swept.rows] == [True]


def test_read_sweep_reads_back_what_sweep_writes(tmp_path):
    """Issue 36, item 5: the sweep-file reader lives beside the writers (analysis/sweep/sweep_result.py)."""
    from v41graph.analysis.sweep.sweep_result import COLUMNS, SweepResult, read_sweep
    from v41graph.errors import V41Error
    rows = ({"model": "m", "tp": 8, "ttft_s": 0.25, "fits": False, "valid": True, "reason": ""},)
    written = SweepResult(rows, COLUMNS)
    written.write(tmp_path / "s.jsonl")
    written.write(tmp_path / "s.csv")
    back = read_sweep(str(tmp_path / "s.jsonl")).rows[0]
    assert {k: back[k] for k in rows[0]} == rows[0]
    back = read_sweep(str(tmp_path / "s.csv")).rows[0]
    assert {k: back[k] for k in rows[0]} == {**rows[0], "tp": 8.0, "reason": None}  # CSV: numbers as floats
    (tmp_path / "s.txt").write_text("x", encoding="utf-8")
    with pytest.raises(V41Error, match=r"^plot pareto --input: expected a \.csv or \.jsonl sweep file, got '"):
        read_sweep(str(tmp_path / "s.txt"))
