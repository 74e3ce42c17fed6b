"""Speed and picks of ``v41graph deploy`` on the issue-35 question, beside AIConfigurator's ``cli default``
when it is installed, and the simulator's rate on the Azure conversation trace.

The question: DeepSeek-V4-Flash on 8 × h200_sxm, ISL 4000, OSL 1000, TTFT 1 s, TPOT 50 ms and 20 ms, on the
default basis (hybrid: measured kernel tables cover h200_sxm) and the checkpoint h200 runs (FP8 experts) —
exactly the command a user types, run as a child process, so its CPU time (``getrusage`` of the children:
user + system) and peak memory are the command's own. Also ``--gpus 1000`` (the guard rail: an answer within
60 s and 2 GB). AIConfigurator 0.12's ``aiconfigurator cli default`` for the same question runs in the same
way when the ``aiconfigurator`` package (its CLI) is importable; only ``aiconfigurator-core`` (the modelling
library, no ``cli default`` search) is installed here, and then the bench says so and skips it.

Run: ``python benchmarks/bench_deploy.py``. Prints one line per run: wall, CPU, peak memory and the picks
(tokens/s per GPU, analytic and simulated, and the winner); asserts nothing (tests never depend on time).
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACE = Path(__file__).resolve().parents[2] / "shared/data/traces/azure-llm-2023/conv.csv"
QUESTION = ["--model", "deepseek-v4-flash", "--hardware", "h200_sxm", "--isl", "4000", "--osl", "1000",
            "--ttft", "1s"]
#: AIConfigurator's figures for the same question (issue 35, measured outside this repository: its CLI is not
#: installed here): best tokens/s per GPU per mode at the SLA
AIC_QUOTED = {"50ms": {"aggregated": 1460, "disaggregated": 1647}, "20ms": {"aggregated": 625}}


def _child(argv: list[str]) -> tuple[subprocess.CompletedProcess, float, float, int]:
    """(the run, wall s, CPU s of the child: user + system, its peak resident set in bytes)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - w
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return run, wall, cpu, after.ru_maxrss * 1024  # ru_maxrss: the largest child so far, in KiB on Linux


def _picks(data: dict) -> str:
    out = []
    for mode in ("aggregated", "disaggregated"):
        p = data["picks"].get(mode)
        if p is None:
            out.append(f"{mode}: none")
            continue
        out.append(f"{mode}: {p['label']} {p['analytic']['tokens_per_s_per_gpu']:,.0f} analytic / "
                   f"{p['simulated']['tokens_per_s_per_gpu']:,.0f} simulated tok/s/GPU")
    w = data.get("winner")
    return "; ".join(out) + (f"; winner {w['mode']}" if w else "; no winner")


def deploy(gpus: int, tpot: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "v41graph.cli", "deploy", *QUESTION, "--gpus", str(gpus), "--tpot", tpot,
                "--json", "-o", os.path.join(tmp, "out")]
        run, wall, cpu, rss = _child(argv)
    head = f"v41graph deploy {gpus} × h200_sxm, TPOT {tpot} (default basis)"
    if run.returncode not in (0, 2) or not run.stdout.strip():
        print(f"{head}: exit {run.returncode}, {wall:.1f} s wall, {cpu:.1f} s CPU; {run.stderr.strip()[-300:]}")
        return
    data = json.loads(run.stdout)
    quoted = AIC_QUOTED.get(tpot) if gpus == 8 else None
    print(f"{head}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak {rss / 2**30:.2f} GiB, basis {data['basis']['name']}; "
          f"{_picks(data)}" + (f"; AIConfigurator (quoted, issue 35): {quoted}" if quoted else ""))


def aiconfigurator(tpot_ms: int) -> None:
    if importlib.util.find_spec("aiconfigurator") is None:
        print("AIConfigurator cli default: skipped — the aiconfigurator package (its CLI) is not installed, only "
              "aiconfigurator-core (the modelling library); its figures are quoted from issue 35 above")
        return
    argv = [sys.executable, "-m", "aiconfigurator.main", "cli", "default", "--model",
            "sgl-project/DeepSeek-V4-Flash-FP8", "--system", "h200_sxm", "--backend", "sglang", "--total-gpus", "8",
            "--isl", "4000", "--osl", "1000", "--ttft", "1000", "--tpot", str(tpot_ms)]
    run, wall, cpu, rss = _child(argv)
    tail = " | ".join(line for line in run.stdout.splitlines()[-12:] if "tokens/s" in line.lower())
    print(f"AIConfigurator cli default, TPOT {tpot_ms} ms: exit {run.returncode}, {wall:.1f} s wall, {cpu:.1f} s "
          f"CPU, peak {rss / 2**30:.2f} GiB; {tail or run.stdout.strip()[-300:]}")


def simulate_rate(basis: str, requests: int = 5000) -> None:
    """Cold: a fresh coster (every step shape compiled during the run, as ``simulate --trace`` does);
    warm: the same run again on the same coster (every shape compiled: the event loop alone)."""
    from v41graph import load_model
    from v41graph.analysis.deploy.deploy_check import check_aggregated
    from v41graph.analysis.deploy.deploy_price import Costers
    from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance
    from v41graph.costs.hardware import load_hardware
    from v41graph.costs.measured.tiers import TRANSFERS, CostMode
    from v41graph.workload.arrivals import read_trace
    if not TRACE.is_file():
        print(f"simulate: no trace at {TRACE}; skipped")
        return
    arrivals = sorted(read_trace(TRACE), key=lambda a: a.t)[:requests]
    cost = None if basis == "sol" else CostMode(basis, TRANSFERS, None)
    costers = Costers(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), cost)
    inst = Instance(EngineMapping(8, 1, 8), 256, 8192)
    walls = []
    for _ in ("cold", "warm"):
        w = time.perf_counter()
        check_aggregated(costers, inst, 1, arrivals, 90)
        walls.append(time.perf_counter() - w)
    print(f"simulate conversation trace, first {len(arrivals):,} requests, TP8/EP8 ({basis}): cold {walls[0]:.1f} s "
          f"wall = {len(arrivals) / walls[0]:,.0f} simulated requests per wall-second ({costers.compiled} step shapes "
          f"compiled); warm {walls[1]:.1f} s = {len(arrivals) / walls[1]:,.0f}/s")


if __name__ == "__main__":
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{os.cpu_count()} CPUs", sys.platform)
    deploy(8, "50ms")
    deploy(8, "20ms")
    aiconfigurator(50)
    deploy(1000, "50ms")
    if "--simulate" in sys.argv:
        simulate_rate("sol")
        simulate_rate("hybrid")
