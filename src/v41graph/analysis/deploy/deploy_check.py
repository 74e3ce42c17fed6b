"""A deployment replayed through the simulator: the check of an analytic pick.

Arrivals (Poisson at the rate the pick claims, or the trace) are dealt round-robin to the
instances that take them first; each instance is one ``simulate`` run with SGLang's scheduler at
the pick's cap and chunk size and a KV pool of what its HBM holds beyond the weights. A
disaggregated pick hands each finished prefill, after its KV crossed the NIC
(:func:`~v41graph.analysis.deploy.deploy_price.transfer_s`, the same bytes ``serving_summary.disaggregated``
moves), to the decode instances round-robin. The step costs are the search's own costers. Tokens
are emitted as the instance's ``overlap`` says (analysis/serving/simulate.py, "Emission"): one step late
under SGLang's overlap scheduler, so a prefill instance hands over when its first token is emitted.

TPOT here is per request: (last token − first token) / (tokens − 1), the figure an SLA on TPOT
means; its percentile is over requests, as TTFT's is. Percentiles skip the requests that arrived
in the first ``since`` seconds (the warm-up, while the batch fills); throughput counts the tokens
emitted between the warm-up's end and the last arrival (the steady state: neither the fill nor the
drain after the last arrival, an idle tail), or every token over the whole run when that window is empty.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import replace

import numpy as np

from ...model.paging import pool_pages
from ...workload.arrivals import Arrival
from .deploy_price import Costers, transfer_s
from .deploy_space import MAX_PREFILL_TOKENS, Instance
from ..serving.simulate import Scheduler, simulate


def _scheduler(costers: Costers, inst: Instance) -> Scheduler:
    pages = pool_pages(costers.model, inst.engine.mapping, costers.hardware.hbm_capacity,
                       engram_on_host=inst.engram == "host")
    return Scheduler(MAX_PREFILL_TOKENS, inst.chunk, inst.cap, mixed=inst.mixed, kv_pages=pages, overlap=inst.overlap)


def _deal(arrivals, n: int) -> list[list[Arrival]]:
    return [arrivals[i::n] for i in range(n)]


def _pct(values, q: float) -> float | None:
    return None if not values else round(float(np.percentile(np.asarray(values, dtype=float), q)), 9)


def _steady_tokens(times: list, arrivals_t, since: float) -> tuple[float, float]:
    """(tokens, seconds) emitted between the warm-up's end and the last arrival: the steady state, without
    the batch filling up before it or draining after it (a drain is an idle tail, not a rate)."""
    if not arrivals_t:
        return 0.0, 0.0
    end = max(arrivals_t)
    start = since if since < end else 0.0
    # bisect on each request's sorted token times: numpy's searchsorted would convert every tuple to an array
    tokens = sum(bisect_right(t, end) - bisect_left(t, start) for t in times)
    return float(tokens), end - start


def _figures(firsts, lasts, counts, arrivals_t, q: float, gpus: int, t_end: float, since: float,
             times=None) -> dict:
    tokens, span = sum(counts), max(t_end, 1e-12)
    steady, window = _steady_tokens(times, arrivals_t, since) if times else (0.0, 0.0)
    if window > 0 and steady > 0:
        tokens, span = steady, window
    keep = [i for i, a in enumerate(arrivals_t) if a >= since] or list(range(len(arrivals_t)))
    firsts, lasts, counts, arrivals_t = ([v[i] for i in keep] for v in (firsts, lasts, counts, arrivals_t))
    ttft = [f - a for f, a in zip(firsts, arrivals_t)]
    tpot = [(last - f) / (n - 1) for f, last, n in zip(firsts, lasts, counts) if n > 1]
    return {"requests": len(ttft), "warmup_s": since, f"ttft_p{q:g}_s": _pct(ttft, q), f"tpot_p{q:g}_s": _pct(tpot, q),
            "ttft_p50_s": _pct(ttft, 50), "tpot_p50_s": _pct(tpot, 50),
            "tokens_per_s": tokens / span, "tokens_per_s_per_gpu": tokens / span / gpus}


def check_aggregated(costers: Costers, inst: Instance, replicas: int, arrivals: list[Arrival], q: float,
                     since: float = 0.0) -> dict:
    """Simulated percentiles of ``replicas`` aggregated instances serving ``arrivals``."""
    sched = _scheduler(costers, inst)
    coster = costers.get(inst)
    firsts, lasts, counts, arr_t, end, steps, times = [], [], [], [], 0.0, 0, []
    for share in _deal(sorted(arrivals, key=lambda a: a.t), replicas):
        if not share:
            continue
        run = simulate(share, coster, sched, dspark=costers.drafts(inst))
        steps += len(run.log)
        end = max(end, run.log[-1].end)
        for r in run.records:
            firsts.append(r.token_times[0])
            lasts.append(r.token_times[-1])
            counts.append(len(r.token_times))
            arr_t.append(r.arrival)
            times.append(r.token_times)
    return {**_figures(firsts, lasts, counts, arr_t, q, replicas * inst.engine.gpus, end, since, times),
            "steps": steps}


def check_disaggregated(costers: Costers, pre: Instance, x: int, dec: Instance, y: int,
                        arrivals: list[Arrival], q: float, since: float = 0.0) -> dict:
    """Simulated percentiles of ``x`` prefill instances feeding ``y`` decode instances."""
    arrivals = sorted(arrivals, key=lambda a: a.t)
    pc, dc = costers.get(pre), costers.get(dec)
    handoffs, steps = [], 0
    for share in _deal(arrivals, x):
        if not share:
            continue
        run = simulate(share, pc, replace(_scheduler(costers, pre), kv_pages=None), prefill_only=True)
        steps += len(run.log)
        for r, a in zip(run.records, share):  # records come back in the share's (arrival) order
            move = transfer_s(costers.model, costers.hardware, a.prompt)
            handoffs.append((r.token_times[0] + move, a))
    handoffs.sort(key=lambda h: (h[0], h[1].t))
    firsts, lasts, counts, arr_t, end, times = [], [], [], [], 0.0, []
    for share in _deal(handoffs, y):
        if not share:
            continue
        run = simulate([Arrival(t, a.prompt, a.output) for t, a in share], dc, _scheduler(costers, dec),
                       decode_only=True, dspark=costers.drafts(dec))
        steps += len(run.log)
        end = max(end, run.log[-1].end)
        for r, (_, a) in zip(run.records, share):
            firsts.append(r.token_times[0])
            lasts.append(r.token_times[-1])
            counts.append(len(r.token_times))
            arr_t.append(a.t)
            times.append(r.token_times)
    gpus = x * pre.engine.gpus + y * dec.engine.gpus
    return {**_figures(firsts, lasts, counts, arr_t, q, gpus, end, since, times), "steps": steps}
