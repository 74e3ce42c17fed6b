"""Which of a search's ranked candidates are simulated, and how: the best ``check`` of a mode and, when all of
them miss the SLA, the next ones down the ranking (:func:`_check`); a large deployment checked on a slice of
it (:func:`_slice`); one simulation and its SLA verdict (:func:`_simulate`, :func:`_sla_reason`, which the
analytic filter of :mod:`.deploy_search` shares; ``q`` is its ``Question``). The replay itself is
:mod:`.deploy_check`'s.
"""

from __future__ import annotations

from math import ceil
from typing import Any

from ...workload.arrivals import poisson_arrivals
from .deploy_check import check_aggregated, check_disaggregated
from .deploy_price import LOAD


def _sla_reason(p, q, basis: str, offered, whose: str = "the trace's") -> str | None:
    why = []
    if offered is not None and offered > LOAD * p.capacity_per_s:
        why.append(f"capacity {p.capacity_per_s:.3g} req/s: {whose} {offered:.3g} req/s is over "
                   f"{LOAD:.0%} of it")
    if p.ttft_s > q.ttft_s:
        why.append(f"{basis} TTFT {p.ttft_s * 1e3:,.1f} ms > {q.ttft_s * 1e3:,.0f} ms")
    if p.tpot_s > q.tpot_s:
        why.append(f"{basis} TPOT {p.tpot_s * 1e3:,.2f} ms > {q.tpot_s * 1e3:,.1f} ms")
    return "; ".join(why) or None


def _check(costers, table, ranked: list[int], q, trace, check: int) -> list[int]:
    """Simulate the best ``check`` of ``ranked``; when all of them miss the SLA, go on down the ranking one at a
    time until one meets it, at most :data:`FALLBACK` × ``check`` simulated in all (an analytic figure is a
    steady-state mean, the SLA a percentile: the best by the mean can be the one a tail misses). Those whose
    simulation misses the SLA become rejected with its reason. Returns the ones that met it."""
    met = []
    for n, i in enumerate(ranked[:FALLBACK * check]):
        if n >= check and met:
            break
        row = table.rows[i]
        sim = _simulate(costers, *table.parts_of[i], q, trace, row["analytic"])
        row["simulated"] = sim
        if not sim["meets_sla"]:
            row["status"], row["reason"] = "rejected", sim["reason"]
            continue
        met.append(i)
    return met


#: how far down its ranking a mode's check goes, in multiples of ``check``, when the best all miss the SLA
FALLBACK = 4


#: instances per role a check simulates at most: a larger deployment is checked on a slice of it at its share of
#: the rate (its instances are alike and dealt round-robin), so that the check's requests fill each instance's
#: batch whatever the budget (1,600 Poisson requests over 250 replicas would leave each with 6)
SLICE = 8


def _slice(mode: str, parts, rate: float, life: float, requests: int) -> tuple[tuple, float]:
    """The deployment a check simulates and the share of the rate it takes: as many of the instances that
    carry the decode batch (aggregated replicas; decode instances) as ``4 × requests`` Poisson requests keep
    busy for three lifetimes, at least one and at most :data:`SLICE`; a disaggregated slice takes the prefill
    instances in the deployment's proportion (rounded, at least one) and the smaller of its roles' shares."""
    def fill(n: int) -> int:
        return max(1, min(n, SLICE, int(4 * requests / max(3 * rate / n * life, 1e-12))))
    if mode == "aggregated":
        inst, r = parts
        return (inst, fill(r)), fill(r) / r
    pre, x, dec, y = parts
    ys = fill(y)
    if ys == y:
        return parts, 1.0
    xs = max(1, min(x, round(x * ys / y)))
    return (pre, xs, dec, ys), min(xs / x, ys / y)


def _simulate(costers, mode, parts, q, trace, analytic) -> dict[str, Any]:
    # one request's lifetime is the warm-up (the batch fills); Poisson runs last two lifetimes past it
    life = analytic["ttft_s"] + max(1, q.osl - 1) * analytic["tpot_s"]
    parts, share = _slice(mode, parts, analytic["rate_per_s"], life, q.requests)
    rate = analytic["rate_per_s"] * share
    n = min(max(q.requests, ceil(3 * rate * life)), 4 * q.requests)
    if trace is not None:  # the slice's share of the trace, every arrival dealt as in the whole deployment
        arrivals = [a for i, a in enumerate(sorted(trace, key=lambda a: a.t)) if int((i + 1) * share) > int(i * share)]
    else:
        arrivals = poisson_arrivals(rate, n / rate, q.isl, q.osl, q.seed)
    since = 0.0 if trace is not None else min(life, 0.5 * n / rate)
    if mode == "aggregated":
        sim = check_aggregated(costers, *parts, arrivals, q.percentile, since)
    else:
        sim = check_disaggregated(costers, *parts, arrivals, q.percentile, since)
    if share < 1:
        sim["slice"] = {"instances": [parts[1]] if mode == "aggregated" else [parts[1], parts[3]],
                        "share_of_rate": share}
    ttft, tpot = sim[f"ttft_p{q.percentile:g}_s"], sim[f"tpot_p{q.percentile:g}_s"]
    sim["tokens_per_s_per_user"] = 1.0 / tpot if tpot else None
    why = _sla_reason(type("P", (), {"ttft_s": ttft, "tpot_s": tpot or 0.0})(), q, f"simulated p{q.percentile:g}",
                      None)
    return {**sim, "meets_sla": why is None, "reason": why}
