"""``deploy --rate R``: the fewest GPUs that serve a target request rate within the SLA.

The GPU budget grows in the units engines come in — 1, 2, 4, 8, … up to ``max_gpus`` (an engine
spans a power of two of GPUs, and a budget of N holds every deployment of ≤ N GPUs, replicas and
prefill/decode pairs of any count included). At each budget the whole search runs with every
candidate priced *at the target rate* (Poisson at R, the decode batch that rate keeps running),
so tokens/s per GPU = R · OSL / GPUs and the ranking puts the fewest GPUs first; the best of each
mode are checked by simulation at R as usual. The first budget with a pick that meets the SLA in
simulation ends the climb: no smaller budget had one, so its picks (which may use fewer GPUs than
the budget, e.g. 3 × tp2 = 6 of 8) are the fewest. The step costers are shared across budgets.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.analysis.deploy_search import Question
>>> q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=1, requests=40, rate=30.0)
>>> r = fewest(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), q, max_gpus=8, check=1,
...            caps=(64,), chunks=(8192,))
>>> r["fewest"]["budgets"], r["fewest"]["gpus"]
([1, 2, 4], 4)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import PlanError
from .deploy_price import Costers
from .deploy_search import Question, search


def budgets(max_gpus: int) -> list[int]:
    """1, 2, 4, … ≤ ``max_gpus``, and ``max_gpus`` itself when it is not a power of two."""
    out, g = [], 1
    while g <= max_gpus:
        out.append(g)
        g *= 2
    return out + ([max_gpus] if out[-1] != max_gpus else [])


def fewest(model, hardware, q: Question, *, max_gpus: int = 64, cost=None, **kwargs: Any) -> dict[str, Any]:
    """The search at the smallest budget whose picks meet the SLA at ``q.rate``, with ``fewest``:
    the budgets tried, the fewest GPUs and the mode that needs them (None when no budget ≤
    ``max_gpus`` serves the rate)."""
    if q.rate is None or q.rate <= 0:
        raise PlanError(f"deploy rate: the fewest-GPU search needs a positive target rate, got {q.rate!r}")
    costers, tried, result = Costers(model, hardware, cost), [], None
    for n in budgets(max_gpus):
        tried.append(n)
        result = search(model, hardware, replace(q, gpus=n), cost=cost, costers=costers, **kwargs)
        picks = [p for p in result["picks"].values() if p is not None]
        if picks:
            best = min(picks, key=lambda p: (p["gpus"], p["mode"] != "aggregated"))
            result["fewest"] = {"rate_per_s": q.rate, "budgets": tried, "gpus": best["gpus"], "mode": best["mode"],
                                "label": best["label"]}
            return result
    result["fewest"] = {"rate_per_s": q.rate, "budgets": tried, "gpus": None, "mode": None, "label": None}
    return result
