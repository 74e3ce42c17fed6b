"""``deploy``'s answer as JSON-ready data: the question, the routing, every candidate, the top, the picks and
the winner, the basis's coverage; a price as its analytic figures.
"""

from __future__ import annotations

from dataclasses import asdict
from math import fsum
from typing import Any

from ...costs.requests.lifecycle import EMISSION
from ...ir.routing import Routing
from .deploy_pick import winner
from .deploy_price import LOAD, Costers


def answer(q, costers: Costers, axes: dict, overlap: bool, rows: list, top: dict, picks: dict,
           why: dict, trace=None, trace_rate=None, pruned: dict | None = None,
           space: dict | None = None) -> dict[str, Any]:
    """The search's answer as JSON-ready data (a search's, or a bounded "none" that searched nothing:
    :mod:`.deploy_fewest`); ``pruned``: the candidates of each mode whose bound could not reach the best;
    ``space``: the caps and the chunk sizes searched (those that schedule differently), and whether EP sizes
    below TP were."""
    return {"question": {**asdict(q), "workload": "trace" if trace is not None else "poisson",
                         "trace_requests": None if trace is None else len(trace), "trace_rate_per_s": trace_rate,
                         "load": LOAD},
            "routing": routing_record(costers.routing),
            "candidates": rows, "top": top, "pruned_by_bound": pruned or {"aggregated": 0, "disaggregated": 0},
            "picks": picks, "why_none": why,
            "axes": {k: list(v) for k, v in axes.items()},
            "space": space or {}, "emission": EMISSION[overlap],
            "winner": winner(picks), "step_shapes_compiled": costers.compiled,
            "coverage": _coverage(costers)}


def routing_record(routing: Routing) -> dict[str, Any]:
    """The routing as ``deploy.json`` states it: its model, parameters and the words the text prints.

    >>> from v41graph.ir.routing import UNIFORM, parse_routing
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
