"""Bounded trace input (issue 38, item 6): traces are streamed row by row, a cut
(``--trace-requests``, ``--duration``) stops reading at the first row past it, and a trace past
the ceiling is refused in one line (exit 2) before any simulation."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from v41graph.cli.main import main
from v41graph.errors import CostError
from v41graph.workload import arrivals
from v41graph.workload.arrivals import Arrival, read_trace

AZURE = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "azure-llm-2023"
#: every row past the first ten of a trace would stop a reader that got to it
BROKEN_TAIL = "not,a,row\n" * 5 + "1.0,oops\n"


def _write(path: Path, n: int, step: float = 0.01, tail: str = "") -> Path:
    path.write_text("t,prompt,output\n" + "".join(f"{i * step:.3f},{64 + i % 7},{2 + i % 3}\n" for i in range(n))
                    + tail, encoding="utf-8")
    return path


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _old_read(path: Path) -> list[Arrival]:
    """The reader before streaming: every row read into memory first, then parsed."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for row in rows:
        row = {arrivals.TRACE_ALIASES.get(k, k): v for k, v in row.items()}
        out.append(Arrival(float(row["t"]), int(row["prompt"]), int(row["output"]), int(row.get("hit") or 0),
                           (row.get("swa_cached") or "1") not in ("0", "false", "False"), row.get("tier") or "hbm"))
    return out


@pytest.mark.parametrize("name, rows", [("conv.csv", 19_366), ("code.csv", 8_819)])
def test_streaming_reader_matches_the_old_one_on_the_azure_traces(name, rows):
    path = AZURE / name
    if not path.is_file():
        pytest.skip("the shared Azure traces are not on this machine")
    old = _old_read(path)
    assert len(old) == rows and read_trace(path) == old
    assert read_trace(path, requests=1000, bounded=True) == old[:1000]
    assert read_trace(path, until=old[1000].t) == [a for a in old if a.t < old[1000].t]
    if name == "conv.csv":
        assert old[:2] == [Arrival(0.0, 374, 44), Arrival(4.314579, 396, 109)]


def test_a_cut_stops_reading_before_the_malformed_rows(tmp_path):
    path = _write(tmp_path / "t.csv", 10, tail=BROKEN_TAIL)
    assert [a.prompt for a in read_trace(path, requests=10)] == [64 + i % 7 for i in range(10)]
    assert len(read_trace(path, requests=3)) == 3
    with pytest.raises(CostError, match="line 12"):  # read whole, the tail is an error
        read_trace(path)
    late = _write(tmp_path / "late.csv", 10, tail="5.0,oops,x\n" + BROKEN_TAIL)
    assert len(read_trace(late, until=1.0)) == 10  # the first row at t >= 1 s ends the read, unparsed


def test_simulate_trace_requests_stops_reading(capsys, tmp_path):
    path = _write(tmp_path / "t.csv", 10, tail=BROKEN_TAIL)
    status, out, err = _run(capsys, "simulate", "--trace", str(path), "--trace-requests", "10", "--cost", "sol",
                            "--tp", "8", "--ep", "8", "--json")
    assert status == 0, err
    assert json.loads(out)["rates"][0]["requests"] == 10
    status, _, err = _run(capsys, "simulate", "--trace-requests", "10")
    assert status == 2 and err.count("\n") == 1 and "needs --trace" in err


def test_a_trace_past_the_ceiling_is_refused_in_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(arrivals, "MAX_TRACE_REQUESTS", 50)
    path = _write(tmp_path / "t.csv", 100, tail=BROKEN_TAIL)  # 2 × the limit; the refusal reads 51 rows
    status, out, err = _run(capsys, "simulate", "--trace", str(path))
    assert status == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert "more than 50 requests" in err and "--trace-requests N or --duration S" in err
    # a cut within the ceiling is answered: by rows, or by time (rows 0.00 … 0.49 s)
    assert _run(capsys, "simulate", "--trace", str(path), "--trace-requests", "50", "--cost", "sol",
                "--tp", "8", "--ep", "8")[0] == 0
    status, out, _ = _run(capsys, "simulate", "--trace", str(path), "--duration", "0.5", "--cost", "sol",
                          "--tp", "8", "--ep", "8", "--json")
    assert status == 0 and json.loads(out)["rates"][0]["requests"] == 50
    status, _, err = _run(capsys, "deploy", "--model", "deepseek-v4-flash", "--gpus", "2", "--ttft", "2s",
                          "--tpot", "50ms", "--trace", str(path), "--trace-requests", "0", "-o", str(tmp_path / "o"))
    assert status == 2 and err.count("\n") == 1 and "more than 50 requests" in err


def test_the_output_token_ceiling_and_the_row_order(tmp_path, monkeypatch):
    monkeypatch.setattr(arrivals, "MAX_OUTPUT_TOKENS", 20)
    path = _write(tmp_path / "t.csv", 20)
    with pytest.raises(CostError, match="more than 20 output tokens by line"):
        read_trace(path, bounded=True)
    assert len(read_trace(path)) == 20  # unbounded: a library caller's choice
    back = tmp_path / "back.csv"
    back.write_text("t,prompt,output\n1.0,8,2\n0.5,8,2\n", encoding="utf-8")
    assert len(read_trace(back)) == 2  # read whole, order does not matter (the simulator sorts)
    with pytest.raises(CostError, match="line 3: t 0.5 is earlier"):
        read_trace(back, requests=2)


def test_deploy_reads_only_the_rows_it_uses(tmp_path, capsys):
    path = _write(tmp_path / "t.csv", 12, step=0.5, tail=BROKEN_TAIL)
    status, out, err = _run(capsys, "deploy", "--model", "deepseek-v4-flash", "--gpus", "2", "--ttft", "2s",
                            "--tpot", "50ms", "--trace", str(path), "--trace-requests", "12", "--check", "1",
                            "--cost", "sol", "--json", "-o", str(tmp_path / "o"))
    assert status == 0, err
    assert json.loads(out)["question"]["trace_requests"] == 12
    status, _, err = _run(capsys, "deploy", "--model", "deepseek-v4-flash", "--gpus", "2", "--ttft", "2s",
                          "--tpot", "50ms", "--trace", str(path), "--trace-requests", "-1")
    assert status == 2 and "whole number of rows" in err


def test_a_trace_replay_describes_the_trace_and_measures_all_of_it(capsys):
    """Issue 37, item 4: `simulate --trace` reports the trace's own requests, span, rate and lengths (not the
    Poisson defaults 4096/256), and measures throughput over the whole trace unless --duration cuts it."""
    import numpy as np
    path = AZURE / "conv.csv"
    if not path.exists():
        pytest.skip("the shared Azure traces are not on this machine")
    rows = _old_read(path)[:400]
    status, out, err = _run(capsys, "simulate", "--trace", str(path), "--trace-requests", "400", "--cost", "sol",
                            "--tp", "8", "--ep", "8", "--json")
    assert status == 0, err
    data = json.loads(out)
    w, prompts, outputs = data["workload"], [a.prompt for a in rows], [a.output for a in rows]
    span = rows[-1].t - rows[0].t
    assert (w["arrivals"], w["requests"], w["span_s"], w["rate_per_s"]) == ("trace", 400, span, 400 / span)
    assert w["prompt"] == {"mean": sum(prompts) / 400, "p50": float(np.percentile(prompts, 50)),
                           "p99": round(float(np.percentile(prompts, 99)), 12)}
    assert w["output"]["mean"] == sum(outputs) / 400 and "prompt" in w and w["prompt"] != 4096
    assert w["duration_s"] is None  # measured whole: from 0 to the last token, every token counted
    row = data["rates"][0]
    assert data["window_s"] == row["window_s"] and row["window_s"][1] > rows[-1].t
    assert row["throughput_tok_s"] == sum(outputs) / row["window_s"][1]
    status, text, _ = _run(capsys, "simulate", "--trace", str(path), "--trace-requests", "400", "--cost", "sol",
                           "--tp", "8", "--ep", "8")
    assert f"workload: trace of 400 requests over {span:,.1f} s" in text
    assert "(the whole trace, to its last token)" in text
    status, out, _ = _run(capsys, "simulate", "--trace", str(path), "--duration", "60", "--cost", "sol",
                          "--tp", "8", "--ep", "8", "--json")
    cut = json.loads(out)
    assert (cut["workload"]["duration_s"], cut["window_s"]) == (60.0, [0.0, 60.0])
    assert cut["workload"]["requests"] == sum(1 for a in _old_read(path) if a.t < 60)


def test_simulate_window_poisson_default_trace_as_given_and_refusals(tmp_path):
    """simulate's window is decided in analysis (issue 36, item 5): Poisson 600 s unless --duration, a trace
    whole or cut at --duration; an oversized Poisson workload and --trace-requests without --trace refused."""
    from v41graph.analysis.serving.simulate_answer import POISSON_DURATION_S, simulate_window
    assert POISSON_DURATION_S == 600.0
    assert simulate_window(rates=(2.0,), output=256) == (None, 600.0)
    assert simulate_window(duration=5.0, rates=(1.0,), output=100) == (None, 5.0)
    path = _write(tmp_path / "t.csv", 10)
    rows, window = simulate_window(str(path))
    assert (len(rows), window, rows[3]) == (10, None, Arrival(0.03, 67, 2))
    rows, window = simulate_window(str(path), duration=0.05)
    assert (len(rows), window) == (5, 0.05)
    rows, window = simulate_window(str(path), requests=3, rates=(1e12,))  # a trace ignores the Poisson rates
    assert (len(rows), window) == (3, None)
    with pytest.raises(CostError, match=r"^simulate --trace-requests: needs --trace FILE$"):
        simulate_window(requests=3)
    with pytest.raises(CostError, match=r"^simulate --rate 1e\+09 × --duration 600 s"):
        simulate_window(rates=(1.0, 1e9), output=256)


def test_simulate_workload_holds_one_requests_prompt_and_output():
    from v41graph import Plan, Request
    from v41graph.analysis.serving.simulate_answer import simulate_workload
    assert simulate_workload(4096, 256) == Plan([Request.decode(4352)])
