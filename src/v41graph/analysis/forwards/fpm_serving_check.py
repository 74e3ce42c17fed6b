"""Serving simulated from an FPM table, held against measured serving means.

AISimulate's GB300 packets compare real SGLang serving (TTFT, mean TPOT, native forward
interval) with their own FPM-based predictions, per decoder replay profile and verification
scope. The packets' ``report/README.md`` files are not in this project's copy (evaluation
material, kept out of shared/), so the only observed means at hand are those issue 26 quotes
for the **core scope, replay off** (:data:`OBSERVED`); the core scope's exact request mix is not
stated there either. The workload simulated here is therefore a stated stand-in:
:data:`CORE_STANDIN`, isolated single requests at the 127/128/129 boundary prompts (no
queueing: each request finishes before the next arrives).

What the comparison can and cannot say: the native forward interval is the DeviceTimer
boundary of the table itself, so it is comparable; TTFT and TPOT observed over HTTP include
costs outside that interval (tokenization, output processing, the client), which a forward
model does not contain — AISimulate's own replay also differs from v41graph's scheduler.

TTFT follows SGLang's overlap scheduler by default (analysis/serving/simulate.py, "Emission"): the first
token is emitted when the step after the prefill (the request's first decode step) ends, so the
isolated request's TTFT is its prefill plus one decode step. Ending TTFT at the prefill
(``overlap=False``, ``--disable-overlap-schedule``) put it at about half the observed mean
(GB300 TP4 table, replay off: 181.87 ms against 365.3 ms, −50.2 %) while forward time and TPOT
agreed within 5 %; with overlap it is 333.77 ms (−8.6 %). Mean TPOT stays at 151.20 ms (−4.7 %):
SGLang carries a finished request one step further under overlap (``process_batch_result_decode``
frees "the one extra delayed token"), and so does the simulation, so the last of the 63 gaps is a
full decode step too.

>>> from v41graph.costs.fpm.table import Point
>>> error_pct(105.0, 100.0)
5.0
"""

from __future__ import annotations

from typing import Any

from .fpm_step_cost import FpmStepCoster
from ..serving.serving_summary import simulate_summary
from ..serving.simulate import Arrival, Scheduler

# Observed and AISimulate-predicted means (ms), AISimulate gb300-fpm/off-v1/report/README.md,
# core scope, as quoted in issue 26 (the report itself is not in shared/).
OBSERVED = {("off", "core"): {"forward_ms": 156.41, "ttft_ms": 365.3, "tpot_ms": 158.7}}
AISIMULATE = {("off", "core"): {"forward_ms": 154.49, "ttft_ms": 393.7, "tpot_ms": 154.4}}
# The stand-in workload: prompts at the 127/128/129 boundary, 64 output tokens, one at a time.
CORE_STANDIN = {"prompts": (127, 128, 129), "output": 64, "spacing_s": 60.0}
METRICS = ("forward_ms", "ttft_ms", "tpot_ms")


def error_pct(predicted: float, observed: float) -> float:
    """Signed error in percent of the observation."""
    return (predicted - observed) / observed * 100


def isolated_trace(prompts, output: int, spacing_s: float) -> list[Arrival]:
    """One request per prompt length, ``spacing_s`` apart (longer than any request lasts)."""
    return [Arrival(i * spacing_s, p, output) for i, p in enumerate(prompts)]


def simulate_fpm(coster: FpmStepCoster, trace, duration_s: float, overlap: bool = True) -> dict[str, Any]:
    """``simulate_summary`` over ``trace`` with FPM step costs; ``overlap``: SGLang's overlap scheduler."""
    return simulate_summary(coster.model, coster.hardware, rates=(), prompt=trace[0].prompt, output=trace[0].output,
                            duration=duration_s, seed=0, tp=coster.policies["tp"], ep=coster.policies["ep"],
                            dp=coster.policies["dp"], scheduler=Scheduler(overlap=overlap), trace=trace,
                            coster=coster)


def compare(replay: str, scope: str, simulated: dict[str, float]) -> dict[str, Any]:
    """Simulated means beside the observed and AISimulate's, with signed errors (None when unknown)."""
    obs, ais = OBSERVED.get((replay, scope)), AISIMULATE.get((replay, scope))
    rows = {}
    for m in METRICS:
        o = None if obs is None else obs[m]
        a = None if ais is None else ais[m]
        rows[m] = {"v41graph": simulated[m], "observed": o, "aisimulate": a,
                   "v41graph_error_pct": None if o is None else error_pct(simulated[m], o),
                   "aisimulate_error_pct": None if o is None or a is None else error_pct(a, o)}
    return {"replay": replay, "scope": scope, "metrics": rows,
            "observed_source": None if obs is None else "AISimulate gb300-fpm report (as quoted in issue 26)",
            "why_no_observation": None if obs is not None else
            f"the {replay} {scope} observed means are in AISimulate's gb300-fpm/{replay}-v1/report/README.md, "
            "which is not in this project's copy"}


def serving_check(coster: FpmStepCoster, replay: str, scope: str = "core", workload: dict | None = None,
                  overlap: bool = True) -> dict:
    """Simulate ``workload`` (default :data:`CORE_STANDIN`) and compare its means (see module doc);
    ``overlap``: SGLang's overlap scheduler (the default: TTFT includes the step after the prefill)."""
    w = dict(workload or CORE_STANDIN)
    trace = isolated_trace(w["prompts"], w["output"], w["spacing_s"])
    s = simulate_fpm(coster, trace, duration_s=len(trace) * w["spacing_s"], overlap=overlap)
    row = s["rates"][0]
    simulated = {"forward_ms": row["forward_mean_s"] * 1000, "ttft_ms": row["ttft_mean_s"] * 1000,
                 "tpot_ms": row["tpot_mean_s"] * 1000}
    return {**compare(replay, scope, simulated), "workload": {**w, "prompts": list(w["prompts"])},
            **{k: s[k] for k in ("fpm", "runtime") if k in s}, "boundary": s["boundary"], "emission": s["emission"]}


__all__ = ["AISIMULATE", "CORE_STANDIN", "METRICS", "OBSERVED", "compare", "error_pct", "isolated_trace",
           "serving_check", "simulate_fpm"]
