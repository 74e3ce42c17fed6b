"""Speed of ``v41graph deploy``: a whole search with its simulation checks, at 8 and 16 GPUs, and
the simulator's rate on the Azure conversation trace under SOL and hybrid, cold (every step shape
compiled during the run) and warm (the event loop alone).

Run: ``python benchmarks/bench_deploy.py``. Prints wall clock and this process's CPU time (the
machine may be shared: wall is what a user waits, CPU what the search costs), candidates per
second and simulated requests per wall-second; asserts nothing (tests never depend on time).

The peers' figures are **quoted from issue 27** (measured there on this machine; not re-run here —
AIConfigurator's ``cli default`` takes minutes): AIConfigurator 0.12 ``cli default`` for
DeepSeek-V4-Flash on 8 × h200_sxm, ~2,100 candidates in 4 min 21 s – 7 min 57 s; Vidur ~93
simulated requests per wall-second.
"""

from __future__ import annotations

import time
from pathlib import Path

from v41graph import load_model
from v41graph.analysis.deploy_check import check_aggregated
from v41graph.analysis.deploy_price import Costers
from v41graph.analysis.deploy_search import Question, search
from v41graph.analysis.deploy_space import EngineMapping, Instance
from v41graph.costs.hardware import load_hardware
from v41graph.costs.measured.tiers import TRANSFERS, CostMode
from v41graph.workload.arrivals import read_trace

TRACE = Path(__file__).resolve().parents[2] / "shared/data/traces/azure-llm-2023/conv.csv"
AIC = "AIConfigurator cli default (quoted from issue 27): ~2,100 candidates in 261–477 s = 4.4–8.0 candidates/s"
VIDUR = "Vidur (quoted from issue 27): ~93 simulated requests per wall-second"


def _search(gpus: int) -> None:
    q = Question(isl=4000, osl=1000, ttft_s=1.0, tpot_s=0.05, gpus=gpus)
    w, c = time.perf_counter(), time.process_time()
    r = search(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), q)
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    n = len(r["candidates"])
    sims = sum(x["simulated"]["requests"] for x in r["candidates"] if "simulated" in x)
    print(f"deploy V4-Flash, {gpus} × h200_sxm, ISL 4000 / OSL 1000, SLA 1 s / 50 ms (SOL): {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU; {n:,} candidates ({n / wall:,.0f}/s wall), {r['step_shapes_compiled']} step shapes, "
          f"{sims:,} requests simulated in the checks")


def _simulate_rate(basis: str, requests: int = 5000) -> None:
    """Cold: a fresh coster (every step shape compiled during the run, as ``simulate --trace`` does);
    warm: the same run again on the same coster (every shape compiled: the event loop alone)."""
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
    _search(8)
    _search(16)
    _simulate_rate("sol")
    _simulate_rate("hybrid")
    print(AIC)
    print(VIDUR)
