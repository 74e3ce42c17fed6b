"""``v41graph deploy``: which deployment meets an SLA on N GPUs — enumerate, prune, price, check.

1. **Enumerate** aggregated (``replicas`` × one instance) and disaggregated (``x`` prefill + ``y``
   decode instances) deployments within the GPU budget (:mod:`.deploy_space`).
2. **Prune** every instance whose weights and cache do not fit, before any compile; the reason
   is kept with the figures.
3. **Price** the rest from the simulator's compiled step costs (:mod:`.deploy_price`) and drop
   what misses the SLA analytically (or, under a trace, cannot carry its rate).
4. **Check** the best ``check`` of each mode by simulation (:mod:`.deploy_check`); the pick of a
   mode is the best one whose *simulated* TTFT and TPOT at the percentile meet the SLA.

Ranking: tokens/s per GPU (highest first), then tokens/s per user, then the lower TTFT — each compared
at 9 significant digits (:func:`~.deploy_pick.rounded`), so float noise never outranks the next key —
then more GPUs (more rate), then the label, so the order and the JSON are deterministic. The walk and
its bounds are :mod:`.deploy_walk`'s, the answer's shape :mod:`.deploy_answer`'s.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> q = Question(isl=4000, osl=200, ttft_s=2.0, tpot_s=0.05, gpus=8, requests=40)
>>> r = search(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), q, check=1, caps=(32,), chunks=(8192,))
>>> r["picks"]["aggregated"]["simulated"]["meets_sla"]
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil
from typing import Any, Callable

from ...errors import PlanError
from ...ir.routing import UNIFORM, Routing
from ...workload.arrivals import Arrival, poisson_arrivals
from .deploy_answer import _analytic, answer
from .deploy_check import check_aggregated, check_disaggregated
from .deploy_launch import host_gpus, knob_notes, launch_flags, vllm_flags
from .deploy_pick import bottleneck, describe, rounded, sol_ceiling, why_none
from .deploy_price import LOAD, Costers, aggregated_steps, prefill_s, price_aggregated, price_disaggregated
from .deploy_space import CAPS, CHUNKS, launchable_axes, prefill_prompts
from .deploy_walk import _agg_bound, _Best, _chunks, _counts, _instances, _memory, _replicas


@dataclass(frozen=True)
class Question:
    """The SLA question: lengths (or a trace's means), targets at ``percentile``, the GPU budget;
    ``requests``: how many Poisson requests a check simulates; ``rate``: a target request rate every
    candidate must carry (Poisson at that rate; None: each at :data:`LOAD` of its own capacity)."""

    isl: int
    osl: int
    ttft_s: float
    tpot_s: float
    gpus: int
    percentile: float = 90.0
    requests: int = 400
    seed: int = 1
    rate: float | None = None


def trace_lengths(trace: list[Arrival]) -> tuple[int, int]:
    """(isl, osl) a trace's analytic price runs at: its mean prompt and its mean output (at least 2: TPOT
    needs a second token).

    >>> trace_lengths([Arrival(0.0, 100, 1), Arrival(1.0, 201, 1)])  # 150.5 rounds to even; 1 output: 2
    (150, 2)
    """
    return (round(sum(a.prompt for a in trace) / len(trace)),
            max(2, round(sum(a.output for a in trace) / len(trace))))


def _row(mode, parts, model, hardware, q: Question, memo) -> dict[str, Any]:
    if mode == "aggregated":
        inst, r = parts
        gpus, label = r * inst.engine.gpus, f"{r}× [{inst.label()}]"
        memory = _memory(model, hardware, inst, q, "both", memo)
    else:
        pre, x, dec, y = parts
        gpus = x * pre.engine.gpus + y * dec.engine.gpus
        label = f"P {x}× [{pre.engine.label()}] + D {y}× [{dec.engine.label()} cap{dec.cap}] chunk{pre.chunk}" + \
            dec.knobs()
        memory = max(_memory(model, hardware, pre, q, "prefill", memo), _memory(model, hardware, dec, q, "both", memo))
    return {"mode": mode, "label": label, "gpus": gpus, "memory_per_gpu_bytes": memory, "status": "ok",
            "reason": None, "deployment": describe(mode, parts)}


def _sla_reason(p, q: Question, basis: str, offered, whose: str = "the trace's") -> str | None:
    why = []
    if offered is not None and offered > LOAD * p.capacity_per_s:
        why.append(f"capacity {p.capacity_per_s:.3g} req/s: {whose} {offered:.3g} req/s is over "
                   f"{LOAD:.0%} of it")
    if p.ttft_s > q.ttft_s:
        why.append(f"{basis} TTFT {p.ttft_s * 1e3:,.1f} ms > {q.ttft_s * 1e3:,.0f} ms")
    if p.tpot_s > q.tpot_s:
        why.append(f"{basis} TPOT {p.tpot_s * 1e3:,.2f} ms > {q.tpot_s * 1e3:,.1f} ms")
    return "; ".join(why) or None


def search(model, hardware, q: Question, *, cost=None, trace: list[Arrival] | None = None, check: int = 2,
           top: int = 5, caps=CAPS, chunks=CHUNKS, axes: dict | None = None,
           progress: Callable | None = None, scheduler=None, costers: Costers | None = None,
           overlap: bool = True, allow_unlaunchable: bool = False, routing: Routing = UNIFORM) -> dict[str, Any]:
    """Every candidate with its status and reason, the top ``top`` of each mode, and the picks.
    ``axes`` fixes V4.1 knobs (:func:`axes_for`); ``scheduler`` (a Dask address or client) compiles the
    step shapes on a cluster first (:mod:`.deploy_dask`: the same answer); ``costers``: step costers of
    the same model, hardware and cost to reuse (:mod:`.deploy_fewest` passes one across budgets);
    ``overlap``: every engine runs SGLang's overlap scheduler (its default; the price and the check
    emit a step's tokens when the next step ends; False: ``--disable-overlap-schedule``);
    ``allow_unlaunchable``: search knob values no engine flag expresses (:func:`~.deploy_launch.launchable_axes`);
    ``routing``: the expert loads every step is priced under (ir/routing.py; ``costers``' own when given). Off
    SOL each pick carries ``sol_ceiling``: its analytic figures on SOL beside the forecast (the picks only).

    The space is walked lazily (:func:`_instances`): instances first, each checked for memory and for a
    decode step within the TPOT before any price; a deployment is priced only when an upper bound of its
    tokens/s per GPU — the decode-only rate at the cap, and for a prefill/decode pair the best split of
    GPUs between the two rates, p·d / (p + d) — can still reach the ``max(top, check)`` best met so far
    (``pruned_by_bound`` counts the rest). The checked ones are ranked on their simulated figures."""
    costers, memo = costers or Costers(model, hardware, cost, routing=routing), {}
    if costers.routing != routing and routing is not UNIFORM:
        raise PlanError(f"deploy routing: the costers price {costers.routing.describe()}, not {routing.describe()}")
    axes = launchable_axes(model, axes, allow_unlaunchable)
    trace_rate = None
    if trace is not None:
        span = max(a.t for a in trace) - min(a.t for a in trace)
        trace_rate = len(trace) / span if span > 0 else float(len(trace))
    offered, whose = (trace_rate, "the trace's") if trace is not None else (q.rate, "the target")
    caps, chunks = tuple(sorted(caps)), _chunks(chunks, q.isl)
    if scheduler is not None:
        from .deploy_dask import compile_on_dask
        compile_on_dask(scheduler, costers, q, caps, chunks, axes, overlap, memo)
    rows: list[dict[str, Any]] = []
    parts_of: dict[int, tuple] = {}
    pruned = {"aggregated": 0, "disaggregated": 0}
    best = {"aggregated": _Best(max(top, check)), "disaggregated": _Best(max(top, check))}
    osl1 = max(1, q.osl - 1)

    def add(mode, parts, reason=None, price=None):
        row = _row(mode, parts, model, hardware, q, memo)
        row["reason"] = reason
        if price is not None:
            row["analytic"] = _analytic(price, row["gpus"], q.osl)
            row["reason"] = _sla_reason(price, q, "analytic", offered, whose)
            if row["reason"] is None:
                best[mode].add(row["analytic"]["tokens_per_s_per_gpu"])
        if row["reason"]:
            row["status"] = "rejected"
        parts_of[len(rows)] = (mode, parts)
        rows.append(row)

    # aggregated: one row per instance (its replicas chosen by _replicas)
    agg = []
    for inst, why, td in _instances(model, hardware, q, caps, chunks, axes, overlap, memo, costers, "both"):
        if why:
            add("aggregated", (inst, max(1, q.gpus // inst.engine.gpus)), why)
        else:
            agg.append((_agg_bound(costers, inst, td, q, offered), inst))
    for bound, inst in sorted(agg, key=lambda t: (-t[0], t[1].label())):
        if not best["aggregated"].beats(bound):
            pruned["aggregated"] += 1
            continue
        steps = aggregated_steps(costers, inst, q.isl, q.osl)
        one = price_aggregated(costers, inst, 1, q.isl, q.osl, None if offered is None else offered, steps)
        r = _replicas(one, inst.engine.gpus, q, offered)
        add("aggregated", (inst, r), price=price_aggregated(costers, inst, r, q.isl, q.osl, offered, steps))

    # disaggregated: prefill instances × decode instances, each pair at the instance counts of _counts
    pres, decs = [], []
    for inst, why, _ in _instances(model, hardware, q, caps, chunks, axes, overlap, memo, costers, "prefill"):
        pres.append((inst, why))
    for inst, why, td in _instances(model, hardware, q, caps, chunks, axes, overlap, memo, costers, "decode"):
        decs.append((inst, why, td))
    pairs = []
    for pre, pwhy in pres:
        pc = None
        for dec, dwhy, td in decs:
            if (dec.replay, dec.engram) != (pre.replay, pre.engram):
                continue
            dec = replace(dec, chunk=pre.chunk)
            if pre.engine.gpus + dec.engine.gpus > q.gpus:
                continue
            if pwhy or dwhy:
                add("disaggregated", (pre, 1, dec, 1), ("prefill instance: " + pwhy) if pwhy else dwhy)
                continue
            if pc is None:
                pc = prefill_prompts(q.isl) / prefill_s(costers.get(pre), q.isl, pre.chunk, prefill_prompts(q.isl))
            dc = dec.cap / (osl1 * td)
            p_gpu, d_gpu = pc / pre.engine.gpus, dc / dec.engine.gpus
            bound = (LOAD * q.osl * p_gpu * d_gpu / (p_gpu + d_gpu) if offered is None
                     else offered * q.osl / (pre.engine.gpus + dec.engine.gpus))
            pairs.append((bound, pre, dec, pc, dc))
    for bound, pre, dec, pc, dc in sorted(pairs, key=lambda t: (-t[0], t[1].label(), t[2].label())):
        if not best["disaggregated"].beats(bound):
            pruned["disaggregated"] += 1
            continue
        gp, gd = pre.engine.gpus, dec.engine.gpus
        for x, y in _counts(q.gpus // gp, lambda x: (q.gpus - x * gp) // gd, pc, dc, offered):
            add("disaggregated", (pre, x, dec, y),
                price=price_disaggregated(costers, pre, x, dec, y, q.isl, q.osl, offered))
    if progress:
        progress(len(rows))

    picks: dict[str, Any] = {}
    sol = None if getattr(costers.cost, "mode", "sol") == "sol" else Costers(model, hardware, None, costers.acceptance,
                                                                             costers.routing)

    def rank(i, basis="analytic"):
        a = rows[i].get(basis) or {}
        ttft = a.get("ttft_s") if basis == "analytic" else a.get(f"ttft_p{q.percentile:g}_s")
        return (-rounded(a.get("tokens_per_s_per_gpu") or 0), -rounded(a.get("tokens_per_s_per_user") or 0),
                rounded(ttft or 0), -rows[i]["gpus"], rows[i]["label"])
    order = sorted(range(len(rows)), key=rank)
    tops = {m: [i for i in order if rows[i]["mode"] == m and rows[i]["status"] == "ok"][:top]
            for m in ("aggregated", "disaggregated")}
    for mode in ("aggregated", "disaggregated"):
        ranked = [i for i in order if rows[i]["mode"] == mode and rows[i]["status"] == "ok"]
        met = []
        for i in ranked[:check]:
            sim = _simulate(costers, *parts_of[i], q, trace, rows[i]["analytic"])
            rows[i]["simulated"] = sim
            if not sim["meets_sla"]:
                rows[i]["status"], rows[i]["reason"] = "rejected", sim["reason"]
                continue
            met.append(i)
        picks[mode] = None
        if met:  # the checked ones that met the SLA, ranked on their simulated figures
            i = min(met, key=lambda j: rank(j, "simulated"))
            parts, served = parts_of[i][1], model.checkpoint or model.name  # the Hugging Face id where known
            host, v41 = host_gpus(hardware), model.family == "v4.1"
            picks[mode] = {**rows[i], "index": i, "ranked_on": "simulated",
                           "bottleneck": bottleneck(model, hardware, mode, parts, q.isl, q.osl, costers.routing),
                           "launch": launch_flags(mode, parts, served, host, replay_flag=v41),
                           "vllm_launch": vllm_flags(mode, parts, served, host),
                           "launch_notes": knob_notes(mode, parts)}
            if sol is not None:
                picks[mode]["sol_ceiling"] = sol_ceiling(sol, mode, parts, q.isl, q.osl, offered, rows[i]["gpus"],
                                                         rows[i]["analytic"])
    for i in order:
        if rows[i]["status"] == "ok" and "simulated" not in rows[i]:
            rows[i]["status"] = "ok (not simulated)"
    return answer(q, costers, axes, overlap, rows, {m: [rows[i]["label"] for i in v] for m, v in tops.items()},
                  picks, {m: why_none(rows, m) for m in picks if picks[m] is None}, trace, trace_rate, pruned)


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


def _simulate(costers, mode, parts, q: Question, trace, analytic) -> dict[str, Any]:
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
