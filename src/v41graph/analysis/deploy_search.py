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
then more GPUs (more rate), then the label, so the order and the JSON are deterministic.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> q = Question(isl=4000, osl=200, ttft_s=2.0, tpot_s=0.05, gpus=8, requests=40)
>>> r = search(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), q, check=1, caps=(32,), chunks=(8192,))
>>> r["picks"]["aggregated"]["simulated"]["meets_sla"]
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from math import ceil, fsum
from typing import Any, Callable

from ..costs.lifecycle import EMISSION
from ..errors import PlanError
from ..ir.routing import UNIFORM, Routing
from ..workload.arrivals import Arrival, poisson_arrivals
from .deploy_check import check_aggregated, check_disaggregated
from .deploy_launch import UNLAUNCHABLE, host_gpus, knob_notes, launch_flags, vllm_flags
from .deploy_pick import bottleneck, describe, rounded, sol_ceiling, why_none, winner
from .deploy_price import LOAD, Costers, price_aggregated, price_disaggregated
from .deploy_space import CAPS, CHUNKS, Instance, axes_for, fit_reason, instance_mappings, memory_bytes


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


def _space(model, q: Question, caps, chunks, axes, overlap: bool = True):
    engines = instance_mappings(model, q.gpus)
    knobs = [(rp, en) for rp in axes["replay"] for en in axes["engram"]]
    agg, dis = [], []
    for e in engines:
        for rp, en in knobs:
            for v in axes["verify"]:
                for ch in chunks:
                    for cap in caps:
                        inst = Instance(e, cap, ch, rp, en, v, overlap)
                        agg += [("aggregated", (inst, r)) for r in range(1, q.gpus // e.gpus + 1)]
    for p in engines:
        for rp, en in knobs:
            for ch in chunks:
                pre = Instance(p, max(caps), ch, rp, en, overlap=overlap)  # no decode batch, verifies nothing
                for d in engines:
                    for v in axes["verify"]:
                        for cap in caps:
                            dec = Instance(d, cap, ch, rp, en, v, overlap)
                            for x in range(1, q.gpus // p.gpus + 1):
                                for y in range(1, (q.gpus - x * p.gpus) // d.gpus + 1):
                                    dis.append(("disaggregated", (pre, x, dec, y)))
    return agg + dis


def launchable_axes(model, fixed: dict | None = None, allow_unlaunchable: bool = False) -> dict[str, tuple]:
    """The V4.1 knobs searched (:func:`~.deploy_space.axes_for`) less the values no engine flag expresses
    (:data:`~.deploy_launch.UNLAUNCHABLE`: Engram in host memory), unless ``allow_unlaunchable``; such a
    value asked for by name without it is an error naming the option that admits it.

    >>> from v41graph import load_model
    >>> launchable_axes(load_model("deepseek-v4.1-flash"))["engram"]
    ('hbm',)
    >>> launchable_axes(load_model("deepseek-v4.1-flash"), allow_unlaunchable=True)["engram"]
    ('hbm', 'host')
    """
    axes = axes_for(model, fixed)
    if allow_unlaunchable:
        return axes
    for name, gaps in UNLAUNCHABLE.items():
        asked = [v for v in (fixed or {}).get(name) or () if v in gaps]
        if asked:
            raise PlanError(f"deploy {name}: {asked[0]!r} has no engine flag ({gaps[asked[0]]}); "
                            "--allow-unlaunchable searches it anyway")
        axes[name] = tuple(v for v in axes[name] if v not in gaps)
    return axes


def _key(inst, role) -> tuple:
    """Everything the memory of an instance in ``role`` depends on (a prefill holds no decode batch)."""
    if role == "prefill":
        return (inst.engine, inst.engram, role)
    return (inst.engine, inst.engram, inst.verify > 0, inst.cap, role)


def _memory(model, hardware, inst, q, role, memo) -> int:
    key = ("bytes", *_key(inst, role))
    if key not in memo:
        memo[key] = memory_bytes(model, hardware, inst, q.isl, q.osl, role)
    return memo[key]


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


def _fits(mode, parts, model, hardware, q, memo) -> str | None:
    roles = [(parts[0], "both")] if mode == "aggregated" else [(parts[0], "prefill"), (parts[2], "both")]
    for inst, role in roles:
        key = _key(inst, role)
        if key not in memo:
            memo[key] = fit_reason(model, hardware, inst, q.isl, q.osl, role)
        if memo[key]:
            return ("prefill instance: " if role == "prefill" else "") + memo[key]
    return None


def _price(costers, mode, parts, q: Question, rate):
    if mode == "aggregated":
        return price_aggregated(costers, *parts, q.isl, q.osl, rate)
    return price_disaggregated(costers, *parts, q.isl, q.osl, rate)


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


def search(model, hardware, q: Question, *, cost=None, trace: list[Arrival] | None = None, check: int = 3,
           top: int = 5, caps=CAPS, chunks=CHUNKS, axes: dict | None = None,
           progress: Callable | None = None, scheduler=None, costers: Costers | None = None,
           overlap: bool = True, allow_unlaunchable: bool = False, routing: Routing = UNIFORM) -> dict[str, Any]:
    """Every candidate with its status and reason, the top ``top`` of each mode, and the picks.
    ``axes`` fixes V4.1 knobs (:func:`axes_for`); ``scheduler`` (a Dask address or client) prices
    the candidates on a cluster (:mod:`.deploy_dask`: the same answer); ``costers``: step costers of
    the same model, hardware and cost to reuse (:mod:`.deploy_fewest` passes one across budgets);
    ``overlap``: every engine runs SGLang's overlap scheduler (its default; the price and the check
    emit a step's tokens when the next step ends; False: ``--disable-overlap-schedule``);
    ``allow_unlaunchable``: search knob values no engine flag expresses (:func:`launchable_axes`);
    ``routing``: the expert loads every step is priced under (ir/routing.py; ``costers``' own when given). Off
    SOL each pick carries ``sol_ceiling``: its analytic figures on SOL beside the forecast (the picks only)."""
    costers, memo = costers or Costers(model, hardware, cost, routing=routing), {}
    if costers.routing != routing and routing is not UNIFORM:
        raise PlanError(f"deploy routing: the costers price {costers.routing.describe()}, not {routing.describe()}")
    axes = launchable_axes(model, axes, allow_unlaunchable)
    trace_rate = None
    if trace is not None:
        span = max(a.t for a in trace) - min(a.t for a in trace)
        trace_rate = len(trace) / span if span > 0 else float(len(trace))
    offered, whose = (trace_rate, "the trace's") if trace is not None else (q.rate, "the target")
    space = _space(model, q, caps, chunks, axes, overlap)
    rows, fit = [], []
    for i, (mode, parts) in enumerate(space):
        row = _row(mode, parts, model, hardware, q, memo)
        row["reason"] = _fits(mode, parts, model, hardware, q, memo)
        if row["reason"] is None:
            fit.append((i, mode, parts))
        elif progress:
            progress(1)
        rows.append(row)
    if scheduler is not None:
        from .deploy_dask import price_on_dask
        prices = price_on_dask(scheduler, costers, q.isl, q.osl, offered, fit, progress)
    else:
        prices = {}
        for i, mode, parts in fit:
            prices[i] = _price(costers, mode, parts, q, offered)
            if progress:
                progress(1)
    priced = []
    for i, mode, parts in fit:
        p, row = prices[i], rows[i]
        row["analytic"] = _analytic(p, row["gpus"], q.osl)
        row["reason"] = _sla_reason(p, q, "analytic", offered, whose)
        if row["reason"] is None:
            priced.append((i, mode, parts))
    for row in rows:
        if row["reason"]:
            row["status"] = "rejected"
    picks: dict[str, Any] = {}
    sol = None if getattr(costers.cost, "mode", "sol") == "sol" else Costers(model, hardware, None, costers.acceptance,
                                                                             costers.routing)
    def rank(i):
        a = rows[i].get("analytic") or {}
        return (-rounded(a.get("tokens_per_s_per_gpu", 0)), -rounded(a.get("tokens_per_s_per_user", 0)),
                rounded(a.get("ttft_s", 0)), -rows[i]["gpus"], rows[i]["label"])
    order = sorted(range(len(rows)), key=rank)
    tops = {m: [i for i in order if rows[i]["mode"] == m and rows[i]["status"] == "ok"][:top]
            for m in ("aggregated", "disaggregated")}
    by_index = {i: (mode, parts) for i, mode, parts in priced}
    for mode in ("aggregated", "disaggregated"):
        ranked = [i for i in order if rows[i]["mode"] == mode and rows[i]["status"] == "ok"]
        picks[mode] = None
        for i in ranked[:check]:
            sim = _simulate(costers, *by_index[i], q, trace, rows[i]["analytic"])
            rows[i]["simulated"] = sim
            if not sim["meets_sla"]:
                rows[i]["status"], rows[i]["reason"] = "rejected", sim["reason"]
                continue
            parts, served = by_index[i][1], model.checkpoint or model.name  # the Hugging Face id where known
            host, v41 = host_gpus(hardware), model.family == "v4.1"
            picks[mode] = {**rows[i], "index": i, "bottleneck": bottleneck(model, hardware, mode, parts, q.isl, q.osl,
                                                                            costers.routing),
                           "launch": launch_flags(mode, parts, served, host, replay_flag=v41),
                           "vllm_launch": vllm_flags(mode, parts, served, host),
                           "launch_notes": knob_notes(mode, parts)}
            if sol is not None:
                picks[mode]["sol_ceiling"] = sol_ceiling(sol, mode, parts, q.isl, q.osl, offered, rows[i]["gpus"],
                                                         rows[i]["analytic"])
            break
    for i in order:
        if rows[i]["status"] == "ok" and "simulated" not in rows[i]:
            rows[i]["status"] = "ok (not simulated)"
    return answer(q, costers, axes, overlap, rows, {m: [rows[i]["label"] for i in v] for m, v in tops.items()},
                  picks, {m: why_none(rows, m) for m in picks if picks[m] is None}, trace, trace_rate)


def answer(q: Question, costers: Costers, axes: dict, overlap: bool, rows: list, top: dict, picks: dict,
           why: dict, trace=None, trace_rate=None) -> dict[str, Any]:
    """The search's answer as JSON-ready data (a search's, or a bounded "none" that searched nothing:
    :mod:`.deploy_fewest`)."""
    return {"question": {**asdict(q), "workload": "trace" if trace is not None else "poisson",
                         "trace_requests": None if trace is None else len(trace), "trace_rate_per_s": trace_rate,
                         "load": LOAD},
            "routing": routing_record(costers.routing),
            "candidates": rows, "top": top, "picks": picks, "why_none": why,
            "axes": {k: list(v) for k, v in axes.items()}, "emission": EMISSION[overlap],
            "winner": winner(picks), "step_shapes_compiled": costers.compiled,
            "coverage": _coverage(costers)}


def routing_record(routing: Routing) -> dict[str, Any]:
    """The routing as ``deploy.json`` states it: its model, parameters and the words the text prints.

    >>> from v41graph.ir.routing import parse_routing
    >>> routing_record(parse_routing("power-law"))
    {'model': 'power-law', 'alpha': 1.01, 'seed': 0, 'describe': 'power-law α=1.01 (seed 0)'}
    >>> routing_record(UNIFORM)
    {'model': 'uniform', 'describe': 'uniform'}
    """
    out: dict[str, Any] = {"model": routing.model}
    if routing.model == "power-law":
        out |= {"alpha": routing.alpha, "seed": routing.seed}
    if routing.loads is not None:
        out["loads"] = list(routing.loads)
    return {**out, "describe": routing.describe()}


def _coverage(costers) -> dict[str, Any] | None:
    """OP / hybrid: the share of node time over the compiled step shapes a table measured or interpolated."""
    shapes = [v for c in costers.all() for v in c.entries().values()]
    node = fsum(v[2] for v in shapes)  # fsum: exact, so the order shapes were compiled in cannot show
    return None if not node else {"measured_or_interpolated": fsum(v[1] for v in shapes) / node}


def _analytic(p, gpus: int, osl: int) -> dict[str, float]:
    """A price as JSON: ``tokens_per_s_per_gpu`` at the offered load (what the ranking compares) and
    ``tokens_per_s_per_gpu_at_capacity``, the steady state with the cap full (capacity × OSL / GPUs)."""
    return {"ttft_s": p.ttft_s, "tpot_s": p.tpot_s, "rate_per_s": p.rate_per_s, "capacity_per_s": p.capacity_per_s,
            "tokens_per_s_per_gpu": p.per_gpu(gpus), "tokens_per_s_per_gpu_at_capacity": p.capacity_per_s * osl / gpus,
            "tokens_per_s_per_user": 1.0 / p.tpot_s}


def _simulate(costers, mode, parts, q: Question, trace, analytic) -> dict[str, Any]:
    rate = analytic["rate_per_s"]
    # one request's lifetime is the warm-up (the batch fills); Poisson runs last two lifetimes past it
    life = analytic["ttft_s"] + max(1, q.osl - 1) * analytic["tpot_s"]
    n = min(max(q.requests, ceil(3 * rate * life)), 4 * q.requests)
    arrivals = trace if trace is not None else poisson_arrivals(rate, n / rate, q.isl, q.osl, q.seed)
    since = 0.0 if trace is not None else min(life, 0.5 * n / rate)
    if mode == "aggregated":
        sim = check_aggregated(costers, *parts, arrivals, q.percentile, since)
    else:
        sim = check_disaggregated(costers, *parts, arrivals, q.percentile, since)
    ttft, tpot = sim[f"ttft_p{q.percentile:g}_s"], sim[f"tpot_p{q.percentile:g}_s"]
    sim["tokens_per_s_per_user"] = 1.0 / tpot if tpot else None
    why = _sla_reason(type("P", (), {"ttft_s": ttft, "tpot_s": tpot or 0.0})(), q, f"simulated p{q.percentile:g}",
                      None)
    return {**sim, "meets_sla": why is None, "reason": why}
