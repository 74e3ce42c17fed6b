"""Per-GPU figures of a plan under its parallel mapping: the mapping, the tokens one GPU handles,
and its memory against the GPU's capacity (``fits``: weights + cache within the 90 % budget of
``model/gpu_memory.py``, with the shortfall; ``total_bytes`` with the workspace is the raw HBM
figure), JSON-ready.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.costs.hardware import load_hardware
>>> m, plan = load_model("deepseek-v4-flash"), Plan([Request.decode(8192, copies=64)], dp=8, ep=8)
>>> tokens_per_gpu(m, plan)
{'attention': 8, 'moe_dispatch': 8, 'expert_copies': 48}
>>> memory_per_gpu(m, plan, load_hardware("h200_sxm"))["fits"]
True
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..algebra import ceildiv
from ..costs.hardware import Hardware
from ..ir.dp import rank_copies, rank_load, rank_tokens
from ..ir.graph import Graph
from ..ir.plan import Plan
from ..model.config import ModelSpec
from ..model.gpu_memory import gpu_memory
from ..model.sharding import mapping_of
from ..model.formats import GIB


def mapping_summary(plan: Plan) -> dict[str, int]:
    mp = mapping_of(plan)
    return {"tp": mp.tp, "dp": mp.dp, "ep": mp.ep, "gpus": mp.gpus, "attention_group": mp.attention_group,
            "moe_tp": mp.moe_tp}


def _exact(v: Fraction) -> int | float:
    return int(v) if v.denominator == 1 else float(v)


def tokens_per_gpu(model: ModelSpec, plan: Plan) -> dict[str, int | float]:
    """New tokens one GPU runs through attention (its DP rank's), dispatches to the MoE (its own
    share under EP), and routed copies its experts compute (every token's top-k over all GPUs)."""
    mp = mapping_of(plan)
    attention = rank_tokens(plan, rank_copies(plan))
    everyone = sum(r.new * r.copies for r in plan.requests)
    dispatch = Fraction(attention, mp.attention_group) if mp.ep > 1 else everyone
    return {"attention": attention, "moe_dispatch": _exact(Fraction(dispatch)),
            "expert_copies": _exact(Fraction(everyone * model.experts_per_token, mp.gpus))}


def dp_ranks(plan: Plan) -> list[dict[str, int]]:
    """Each attention-DP rank's requests, query tokens and attention work (Σ tokens × context) as
    ``ir/dp.py`` deals them (one entry when dp = 1); rank 0, the busiest, is the one costed.

    >>> from v41graph import Plan, Request
    >>> [r["tokens"] for r in dp_ranks(Plan([Request.prefill(100), Request.prefill(8000)], dp=2))]
    [8000, 100]
    """
    return [{"rank": j, **load} for j, load in enumerate(rank_load(plan))]


def workspace_bytes(graph: Graph) -> int:
    """The largest single node's activations in and out plus its workspace (candidate pool,
    scores), per GPU: what must be live at once beyond weights and caches."""
    costs = graph.annotations.get("cost", {})
    peak = max((c.byte("act_in") + c.byte("act_out") + c.byte("workspace") for c in costs.values()), default=0)
    return int(ceildiv(Fraction(peak), 1))


def memory_per_gpu(model: ModelSpec, plan: Plan, hardware: Hardware, *, workspace: int | None = None,
                   contexts: list[tuple[int, int]] | None = None, hot_cache_rows: int = 0) -> dict[str, Any]:
    """One GPU's memory: weights by group, cache of its DP rank's requests (or the given
    ``contexts``: (tokens, copies) pairs), workspace, verdict; with ``engram_residency='host'`` a
    hot cache of ``hot_cache_rows`` rows per Engram table replaces the tables."""
    if contexts is None:
        share = rank_copies(plan)
        contexts = [(r.end, c) for r, c in zip(plan.requests, share) if c != 0]
    basis = ("none: no forward is costed here (cost measures it)" if workspace is None
             else "the largest node's activations in and out plus its workspace (candidate pool, scores)")
    g = gpu_memory(model, mapping_of(plan), hardware.hbm_capacity, contexts, workspace_bytes=workspace or 0,
                   dspark=plan.dspark == "on", engram_on_host=plan.engram_residency == "host",
                   engram_hot_cache_rows=hot_cache_rows)
    return {
        "hardware": hardware.name, "capacity_bytes": g.capacity_bytes,
        "weights_bytes": g.weights_bytes, "weights_gib": g.weights_bytes / GIB,
        "weights_by_group": g.weights_by_group,
        "requests": g.requests, "cache_bytes": g.cache_bytes, "cache_by_kind": g.cache_by_kind,
        "workspace_bytes": g.workspace_bytes, "workspace_basis": basis,
        "total_bytes": g.total_bytes, "total_gib": g.total_bytes / GIB,
        # the verdict: weights + cache within the budget (model/gpu_memory.py), as the deployment's
        "static_bytes": g.static_bytes, "budget_bytes": g.budget_bytes,
        "fits": g.fits, "shortfall_bytes": g.shortfall_bytes, "kv_tokens_fit": g.kv_tokens_fit,
    }
