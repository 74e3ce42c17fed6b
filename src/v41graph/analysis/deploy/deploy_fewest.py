"""``deploy --rate R``: the fewest GPUs that serve a target request rate within the SLA.

The GPU budget grows in the units engines come in — 1, 2, 4, 8, … up to ``max_gpus`` (an engine
spans a power of two of GPUs, and a budget of N holds every deployment of ≤ N GPUs, replicas and
prefill/decode pairs of any count included). At each budget the whole search runs with every
candidate priced *at the target rate* (Poisson at R, the decode batch that rate keeps running),
so tokens/s per GPU = R · OSL / GPUs and the ranking puts the fewest GPUs first; the best of each
mode are checked by simulation at R as usual. The first budget with a pick that meets the SLA in
simulation ends the climb: no smaller budget had one, so its picks (which may use fewer GPUs than
the budget, e.g. 3 × tp2 = 6 of 8) are the fewest. The step costers are shared across budgets.

A budget is searched only when the rate could fit it (:func:`rate_bound`): no deployment of n GPUs
carries more than n × the best decode-only rate per GPU of any engine that fits (an aggregated
instance also prefills, so its TPOT is at least its decode step's; a disaggregated one's capacity is
at most its decode instances'), and the search asks for :data:`~.deploy_price.LOAD` of capacity. A rate
past that bound at the largest budget is a "none" that searched nothing, with that reason, in the
time the bound takes (one decode step per engine, cap and DSpark length), however large the rate.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.analysis.deploy.deploy_search import Question
>>> q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=1, requests=40, rate=30.0)
>>> r = fewest(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), q, max_gpus=8, check=1,
...            caps=(64,), chunks=(8192,))
>>> r["fewest"]["budgets"], r["fewest"]["gpus"]
([1, 2, 4], 4)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import PlanError
from ...ir.routing import UNIFORM
from .deploy_price import LOAD, Costers, _decode_context, decode_s
from .deploy_answer import answer
from .deploy_search import Question, search
from .deploy_walk import space_record
from .deploy_space import launchable_axes
from .deploy_space import CAPS, CHUNKS, Instance, fit_reason, instance_mappings


def budgets(max_gpus: int) -> list[int]:
    """1, 2, 4, … ≤ ``max_gpus``, and ``max_gpus`` itself when it is not a power of two."""
    out, g = [], 1
    while g <= max_gpus:
        out.append(g)
        g *= 2
    return out + ([max_gpus] if out[-1] != max_gpus else [])


def rate_bound(costers: Costers, q: Question, max_gpus: int, caps=CAPS, axes: dict | None = None,
               allow_unlaunchable: bool = False, below_tp: bool = False) -> dict[int, tuple[float, str]]:
    """Per engine size g ≤ ``max_gpus``: the most requests/s per GPU any engine of ≤ g GPUs carries,
    and which (label): its decode-only rate cap · E[tokens per step] / ((OSL − 1) · t_decode(cap)) / GPUs,
    over every engine mapping, cap that fits and DSpark length searched. Decode steps do not depend on
    decoder replay (it prunes prefill) or on where Engram lives (tests/test_deploy.py); the cap fits
    with the Engram residency that frees the most HBM.

    >>> from v41graph import load_model
    >>> from v41graph.costs.hardware import load_hardware
    >>> q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=1)
    >>> b = rate_bound(Costers(load_model("deepseek-v4-flash"), load_hardware("h200_sxm")), q, 8, caps=(64,))
    >>> sorted(b), b[2][1]
    ([2, 4, 8], 'tp2 ep2 cap64')
    """
    model, hardware = costers.model, costers.hardware
    axes = launchable_axes(model, axes, allow_unlaunchable)  # the knobs the search takes
    engram = "host" if "host" in axes["engram"] else axes["engram"][0]
    best: dict[int, tuple[float, str]] = {}
    for e in instance_mappings(model, max_gpus, below_tp):
        for v in axes["verify"]:
            for cap in caps:
                inst = Instance(e, cap, max(CHUNKS), axes["replay"][0], engram, v)
                if fit_reason(model, hardware, inst, q.isl, q.osl):
                    continue
                t = decode_s(costers.get(inst), cap, _decode_context(q.isl, q.osl), v) / costers.emitted(inst)
                r = cap / (max(1, q.osl - 1) * t) / e.gpus
                if r > best.get(e.gpus, (0.0, ""))[0]:
                    best[e.gpus] = (r, inst.label().replace(f" chunk{inst.chunk}", ""))
    out, top = {}, (0.0, "")
    for g in sorted(best):  # the best of every engine size up to g
        top = max(top, best[g])
        out[g] = top
    return out


def fewest(model, hardware, q: Question, *, max_gpus: int = 64, cost=None, **kwargs: Any) -> dict[str, Any]:
    """The search at the smallest budget whose picks meet the SLA at ``q.rate``, with ``fewest``:
    the budgets tried, the fewest GPUs and the mode that needs them (None when no budget ≤
    ``max_gpus`` serves the rate); budgets :func:`rate_bound` rules out are skipped unsearched
    (``skipped``, and ``bound``: why)."""
    if q.rate is None or q.rate <= 0:
        raise PlanError(f"deploy rate: the fewest-GPU search needs a positive target rate, got {q.rate!r}")
    costers = Costers(model, hardware, cost, routing=kwargs.get("routing", UNIFORM))
    tried, skipped, result = [], [], None
    allow = kwargs.get("allow_unlaunchable", False)
    bound = rate_bound(costers, q, max_gpus, kwargs.get("caps", CAPS), kwargs.get("axes"), allow,
                       kwargs.get("ep_below_tp", False))

    def most(n: int) -> tuple[float, str]:  # requests/s a budget of n GPUs can carry at most, and whose
        per_gpu, label = max((v for g, v in bound.items() if g <= n), default=(0.0, "no engine fits"))
        return n * per_gpu, label

    record = {"rate_per_s": q.rate, "budgets": tried, "skipped": skipped, "bound": None}
    for n in budgets(max_gpus):
        tried.append(n)
        most_rate, label = most(n)
        if q.rate > LOAD * most_rate:
            skipped.append(n)
            record["bound"] = (f"{q.rate:,.4g} req/s is over {LOAD:.0%} of the most {n} GPUs can carry, "
                               f"{most_rate:,.4g} req/s ({n} × the best decode-only rate per GPU, {label})")
            continue
        result = search(model, hardware, replace(q, gpus=n), cost=cost, costers=costers, **kwargs)
        picks = [p for p in result["picks"].values() if p is not None]
        if picks:
            best = min(picks, key=lambda p: (p["gpus"], p["mode"] != "aggregated"))
            result["fewest"] = {**record, "gpus": best["gpus"], "mode": best["mode"], "label": best["label"]}
            return result
    if result is None:  # every budget ruled out: a bounded answer, nothing searched
        q = replace(q, gpus=max_gpus)
        axes = launchable_axes(model, kwargs.get("axes"), allow)
        why = {m: f"no budget up to {max_gpus} GPUs can carry the rate: {record['bound']}"
               for m in ("aggregated", "disaggregated")}
        result = answer(q, costers, axes, kwargs.get("overlap", True), [], {"aggregated": [], "disaggregated": []},
                        {"aggregated": None, "disaggregated": None}, why,
                        space=space_record(kwargs.get("caps", CAPS), kwargs.get("chunks", CHUNKS), q.isl,
                                           kwargs.get("ep_below_tp", False)))
    result["fewest"] = {**record, "gpus": None, "mode": None, "label": None}
    return result
