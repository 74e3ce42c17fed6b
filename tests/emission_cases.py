"""Simulations whose step logs and token times tests/golden/serving/step_end.json holds, written by the
code before the emission model existed (commit c3b7347, every token at the end of its step); with the
overlap scheduler off the simulation must give them byte for byte (tests/test_emission.py)."""

from __future__ import annotations

import json

from v41graph import load_model
from v41graph.analysis.serving.serving_summary import disaggregated
from v41graph.analysis.serving.simulate import Arrival, poisson_arrivals, simulate
from v41graph.analysis.serving.step_cost import StepCoster
from v41graph.costs.hardware import load_hardware


def cases(scheduler):
    """(name, Run or (prefill Run, joined records)) for each case; ``scheduler(**fields)`` makes a Scheduler."""
    model, hw = load_model(), load_hardware("h200_sxm")
    c = StepCoster(model, hw, tp=8, ep=8)
    busy = poisson_arrivals(6.0, 4.0, 3000, 24, seed=2)
    long = [Arrival(0.0, 1000, 30), Arrival(0.02, 20000, 3), Arrival(0.3, 512, 5), Arrival(5.0, 700, 4)]
    hits = [Arrival(0.0, 4352, 3, hit=4096, swa_cached=False, tier="host_dram"), Arrival(0.05, 600, 1)]
    out = [("poisson", simulate(busy, c, scheduler())),
           ("mixed_chunked", simulate(long, c, scheduler(mixed=True))),
           ("chunked_idle", simulate(long, c, scheduler(chunked_prefill_size=4096, max_prefill_tokens=8192))),
           ("kv_pages", simulate(busy[:12], c, scheduler(kv_pages=40))),
           ("dspark", simulate(busy[:15], c, scheduler(), dspark=(0.8, 0.5), seed=3)),
           ("hits", simulate(hits, c, scheduler())),
           ("cap", simulate(busy[:20], c, scheduler(max_running_requests=4)))]
    run_p, joined, _ = disaggregated(busy[:20], c, c, scheduler(), hw.scaleout_bandwidth, dspark=(0.7,), seed=1)
    out.append(("disaggregated", (run_p, joined)))
    return out


def _run(run) -> dict:
    return {"log": [[s.start, s.end, s.kind, s.restore_s] for s in run.log],
            "records": [[r.rid, r.arrival, list(r.steps), list(r.token_times), r.transfer_s] for r in run.records]}


def dump(named) -> str:
    """JSON text of the cases (floats as repr: the same float, the same text)."""
    data = {}
    for name, run in named:
        if isinstance(run, tuple):
            p, joined = run
            data[name] = {**_run(p), "joined": [[r.rid, r.arrival, list(r.steps), list(r.token_times), r.transfer_s]
                                                for r in joined]}
        else:
            data[name] = _run(run)
    return json.dumps(data, separators=(",", ":")) + "\n"
