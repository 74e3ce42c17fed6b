"""Serving results as JSON-ready dicts: simulations per rate, disaggregated stages, one restore.

Every dict states its measurement boundary (costs/requests/lifecycle.py ``BOUNDARY``), its observation
window and its cost basis, so a figure never travels without what it means.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> s = restore_summary(load_model(), load_hardware("h200_sxm"), prefix=65536, suffix=1024,
...                     tier="host_dram", swa_cached=True, tp=8, ep=8)
>>> s["fetch_bytes"], s["replayed_token_layers"]
(58327040, 0)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ...costs.requests.lifecycle import (BOUNDARY, EMISSION, RequestRecord, itl_samples, percentiles, throughput,
                                         ttft_parts)
from ...costs.requests.restore import family_ratios, persisted, restore_timeline
from ...costs.requests.system import expected_emitted
from ...errors import CostError
from ...ir.plan import Plan, Request
from ...model.paging import pool_pages
from ...model.sharding import Mapping
from ...passes import compile
from ...workload.arrivals import Arrival, check_workload, poisson_arrivals, read_trace  # noqa: F401  (read_trace re-exported)
from .simulate import Run, Scheduler, simulate
from .step_cost import StepCoster

def disaggregated(arrivals, prefill: StepCoster, decode: StepCoster, scheduler: Scheduler,
                  link_bandwidth: int, *, dspark=None, seed: int = 0
                  ) -> tuple[Run, tuple[RequestRecord, ...], dict[int, int]]:
    """Prefill and decode on separate instances: each request's KV (global pages + SWA window
    pages, costs/requests/restore.py ``persisted``) crosses the link after its first token is emitted (one
    step late under ``scheduler.overlap``, as SGLang starts the send while processing the prefill's
    result); the decode instance then streams the rest, its first token the one handed over
    (analysis/serving/simulate.py, "Disaggregated instances"). Returns the prefill run, the joined records
    and bytes by rid."""
    arrivals = sorted(arrivals, key=lambda a: a.t)
    run_p = simulate(arrivals, prefill, scheduler, prefill_only=True)
    moved, handoff = {}, []
    for r, a in zip(run_p.records, arrivals):
        moved[r.rid] = persisted(prefill.model, a.prompt).with_swa
        handoff.append(Arrival(r.token_times[0] + moved[r.rid] / link_bandwidth, a.prompt, a.output))
    run_d = simulate(handoff, decode, scheduler, decode_only=True, dspark=dspark, seed=seed)
    joined = tuple(RequestRecord(p.rid, p.arrival, p.steps, d.token_times, moved[p.rid] / link_bandwidth)
                   for p, d in zip(run_p.records, run_d.records))
    return run_p, joined, moved


def _figures(records, log, window: tuple[float, float], whole: bool = False) -> dict[str, Any]:
    parts = [ttft_parts(r, log) for r in records]
    return {**({"window_s": list(window)} if whole else {}),
        "requests": len(records),
        "ttft_s": percentiles([p.ttft_s for p in parts]),
        "queue_s": percentiles([p.queue_s for p in parts]),
        "itl_s": percentiles([x for r in records for x in itl_samples(r)]),
        "throughput_tok_s": throughput(records, *window),
        "steps": len(log),
    }


def _coverage(*costers) -> dict[str, Any]:
    """OP / hybrid: the share of node time, over the distinct step shapes compiled, that a table measured or
    interpolated (each shape counted once, not per step it ran); nothing under SOL."""
    costers = [c for c in dict.fromkeys(costers) if hasattr(c, "node_s")]  # an FPM step coster has no node times
    node = sum(c.node_s for c in costers)
    return {} if not node else {"coverage": {"measured_or_interpolated": sum(c.measured_s for c in costers) / node,
                                             "over": "node time of the distinct step shapes compiled"}}


def means(records, log) -> dict[str, float | None]:
    """Mean TTFT, mean TPOT (per request: (last − first token) / (tokens − 1), then averaged over
    requests, as serving benchmarks report it) and mean forward interval (step durations)."""
    tpot = [(r.token_times[-1] - r.token_times[0]) / (len(r.token_times) - 1) for r in records
            if len(r.token_times) > 1]
    mean = lambda v: sum(v) / len(v) if v else None  # noqa: E731
    return {"ttft_mean_s": mean([r.ttft_s for r in records]), "tpot_mean_s": mean(tpot),
            "forward_mean_s": mean([s.end - s.start for s in log])}


def trace_figures(trace) -> dict[str, Any]:
    """A trace's own workload: requests, span (first to last arrival), mean rate, and prompt and output
    lengths (mean, p50, p99) — what a replay of it describes instead of the Poisson defaults.

    >>> from v41graph.workload.arrivals import Arrival
    >>> f = trace_figures([Arrival(0.0, 100, 10), Arrival(2.0, 300, 30)])
    >>> f["requests"], f["span_s"], f["rate_per_s"], f["prompt"]["mean"], f["output"]["p50"]
    (2, 2.0, 1.0, 200.0, 20.0)
    """
    first, last = min(a.t for a in trace), max(a.t for a in trace)
    span = last - first

    def lengths(values):
        return {"mean": sum(values) / len(values), **{k: v for k, v in percentiles(values, (50, 99)).items()}}
    return {"requests": len(trace), "span_s": span, "rate_per_s": len(trace) / span if span > 0 else None,
            "prompt": lengths([a.prompt for a in trace]), "output": lengths([a.output for a in trace])}


def _window(duration: float | None, records) -> tuple[float, float]:
    """The throughput window: [0, duration), or for a whole trace from 0 to just past the run's last token
    (the next float: the window is half-open and the last token counts)."""
    if duration is not None:
        return (0.0, duration)
    return (0.0, math.nextafter(max((r.token_times[-1] for r in records if r.token_times), default=0.0), math.inf))


def _check_inputs(rates, output: int, duration: float | None, trace, disagg, coster) -> None:
    """Every input error of :func:`simulate_summary`, before any compile."""
    if trace is None and duration is None:
        raise CostError("simulate duration: a Poisson workload needs an arrival window (seconds)")
    if coster is not None and disagg is not None:
        raise CostError("simulate: an FPM or runtime step coster prices one instance; --disagg needs graph step costs")
    for rate in (() if trace is not None else rates):
        check_workload(rate, duration, output)


def simulate_summary(model, hardware, *, rates, prompt: int, output: int, duration: float | None, seed: int,
                     tp: int = 1, ep: int = 1, dp: int = 1, scheduler: Scheduler = Scheduler(),
                     trace=None, bucket: bool = True, disagg: dict | None = None, cost=None,
                     dspark=None, coster=None, sol_ceiling: bool = False) -> dict[str, Any]:
    """``v41graph simulate --json``: one row per rate (or one for ``trace``); ``cost`` a CostMode (SOL if None).

    ``coster``: a step coster to use instead of the graph's (``simulate --cost fpm``: an
    :class:`~.fpm_step_cost.FpmStepCoster`); the rows then add the means and the basis says so.
    ``sol_ceiling``: each row adds the same arrivals simulated on SOL step costs beside the forecast
    (:func:`_sol_ceiling`). ``duration``: the Poisson arrival window and the throughput window; with a
    ``trace``, None measures throughput over the whole trace (from 0 to the run's last token) and a
    number over [0, duration) (the caller cut the trace there); the workload record then holds the
    trace's own figures (:func:`trace_figures`), not ``prompt`` / ``output``.
    """
    _check_inputs(rates, output, duration, trace, disagg, coster)
    expected = None if not dspark else expected_emitted(dspark)  # validates the probabilities too
    if scheduler.kv_pages is None:  # the decode (or only) instance's pool; a prefill instance frees at once
        scheduler = replace(scheduler, kv_pages=pool_pages(model, Mapping(tp, dp, ep), hardware.hbm_capacity))
    given = coster
    coster = coster or StepCoster(model, hardware, tp=tp, ep=ep, dp=dp, bucket=bucket, cost=cost)
    pcoster = coster if disagg is None else StepCoster(model, hardware, tp=disagg["tp"], ep=disagg["ep"],
                                                      dp=disagg.get("dp", 1), bucket=bucket, cost=cost)
    def run_rate(arrivals, coster, pcoster, extra: bool) -> dict[str, Any]:
        if disagg is None:
            run = simulate(arrivals, coster, scheduler, dspark=dspark, seed=seed)
            row = _figures(run.records, run.log, _window(duration, run.records), duration is None)
            if given is not None and extra:
                row.update(means(run.records, run.log))
            return row
        run_p, joined, moved = disaggregated(arrivals, pcoster, coster, scheduler, hardware.scaleout_bandwidth,
                                             dspark=dspark, seed=seed)
        row = _figures(joined, run_p.log, _window(duration, joined), duration is None)
        if extra:
            row["kv_transfer_bytes"] = percentiles(list(moved.values()))
            row["kv_transfer_s"] = percentiles([r.transfer_s for r in joined])
        return row

    workloads = [(rate, trace if trace is not None else poisson_arrivals(rate, duration, prompt, output, seed))
                 for rate in ([None] if trace is not None else rates)]
    rows = [{"rate_per_s": rate, **run_rate(arrivals, coster, pcoster, True)} for rate, arrivals in workloads]
    shapes = coster.compiled + (pcoster.compiled if pcoster is not coster else 0)  # the forecast's, not SOL's
    if sol_ceiling:
        sol = _sol_coster(coster, bucket)
        psol = sol if pcoster is coster else _sol_coster(pcoster, bucket)
        for row, (_, arrivals) in zip(rows, workloads):
            row["sol_ceiling"] = _sol_ceiling(row, run_rate(arrivals, sol, psol, False))
    return {
        "model": model.name, "hardware": hardware.name,
        "cost_basis": given.basis if given is not None else "sol" if cost is None else cost.mode,
        "mapping": {"tp": tp, "ep": ep, "dp": dp},
        "disaggregated": None if disagg is None else {"prefill": disagg, "decode": {"tp": tp, "ep": ep, "dp": dp},
                                                       "link": "scaleout_bandwidth (the GPU's NIC)",
                                                       "link_bandwidth": hardware.scaleout_bandwidth},
        "workload": ({"arrivals": "poisson", "prompt": prompt, "output": output, "duration_s": duration, "seed": seed}
                     if trace is None else {"arrivals": "trace", **trace_figures(trace), "duration_s": duration,
                                            "seed": seed}),
        "scheduler": {"policy": "fcfs", "max_prefill_tokens": scheduler.max_prefill_tokens,
                      "chunked_prefill_size": scheduler.chunked_prefill_size,
                      "max_running_requests": scheduler.max_running_requests, "mixed": scheduler.mixed,
                      "kv_pages": scheduler.kv_pages},
        "window_s": [0.0, duration] if duration is not None else rows[0]["window_s"], "boundary": BOUNDARY,
        "emission": EMISSION[scheduler.overlap],
        "step_shapes_costed": shapes,
        **_coverage(coster, pcoster),
        "dspark": None if not dspark else {"acceptance": list(dspark), "verify_len": len(dspark),
                                           "expected_tokens_per_step": expected},
        "bucketed": bucket and given is None, "rates": rows,
        **({} if given is None else {given.basis: given.basis_record()}),
    }


def _sol_coster(coster, bucket: bool) -> StepCoster:
    """SOL step costs of the plan ``coster`` prices (its model, hardware and policies: an FPM coster's
    are its runtime fallback's): the runtime basis's own kernels where they are SOL, else a SOL
    StepCoster of the same policies."""
    kernels = (getattr(coster, "kernels", None) or getattr(getattr(coster, "fallback", None), "kernels", None)
               or coster)
    if isinstance(kernels, StepCoster) and getattr(kernels.cost, "mode", "sol") == "sol" and kernels.bucket == bucket:
        return kernels
    return StepCoster(kernels.model, kernels.hardware, bucket=bucket, **kernels.policies)


def _sol_ceiling(forecast: dict[str, Any], sol: dict[str, Any]) -> dict[str, Any]:
    """The same arrivals on SOL step costs beside the forecast: TTFT and ITL p50 (lower bounds), throughput
    (a ceiling), and each forecast / SOL ratio."""
    from ..basis import ceiling_ratio
    out = {"ttft_p50_s": sol["ttft_s"]["p50"], "itl_p50_s": sol["itl_s"]["p50"],
           "throughput_tok_s": sol["throughput_tok_s"]}
    ratio = {"ttft_p50": ceiling_ratio(forecast["ttft_s"]["p50"], out["ttft_p50_s"]),
             "itl_p50": ceiling_ratio(forecast["itl_s"]["p50"], out["itl_p50_s"]),
             "throughput": ceiling_ratio(forecast["throughput_tok_s"], out["throughput_tok_s"])}
    return {**out, "ratio": ratio}


def restore_summary(model, hardware, *, prefix: int, suffix: int, tier: str, swa_cached: bool,
                    tp: int = 1, ep: int = 1, dp: int = 1) -> dict[str, Any]:
    """One prefix hit: fetch from ``tier`` overlapped with the extend forward (+ SWA replay if lost)."""
    plan = Plan([Request.extend(prefix, suffix, swa_cached)], tp=tp, ep=ep, dp=dp,
                encoder_restore="persisted" if swa_cached else "bounded")
    compiled = compile(model, plan, hardware)
    replay = next(p.report for p in compiled.passes if p.name == "replay")
    forward = float(compiled.report("schedule").total_time_s)
    t = hardware.tier(tier)
    r = restore_timeline(model, prefix=prefix, fetch_bandwidth=t.bandwidth, latency_s=t.latency_ns * 1e-9,
                         forward_s=forward)
    return {"model": model.name, "hardware": hardware.name, "prefix": prefix, "suffix": suffix, "tier": tier,
            "swa_cached": swa_cached, "tier_bandwidth": t.bandwidth, "tier_latency_ns": t.latency_ns,
            "fetch_bytes": r.fetch_bytes, "fetch_s": r.fetch_s, "forward_s": forward,
            "replayed_token_layers": int(replay.tokens_added),
            "ttft_s": r.done_s, "exposed_fetch_s": r.exposed_fetch_s, "boundary": BOUNDARY + "; no queueing"}


def ratios_summary(v41, v4, context: int) -> dict[str, Any]:
    """V4.1 / V4-Flash cache ratios at ``context`` tokens, with the bytes behind them."""
    r = family_ratios(v41, v4, context)
    a, b = persisted(v41, context), persisted(v4, context)
    return {"context": context, "models": [v41.name, v4.name],
            "global_kv_ratio_exact_entries": float(r.global_exact), "global_kv_ratio_paged": float(r.global_paged),
            "persisted_ratio_v41_no_swa_vs_v4_with_swa": float(r.persisted_no_swa),
            "v41_persisted_bytes": {"global": a.global_bytes, "swa": a.swa_bytes},
            "v4_persisted_bytes": {"global": b.global_bytes, "swa": b.swa_bytes},
            "paper": {"global_kv": "1/4", "persisted_without_swa": "1/8"}}
