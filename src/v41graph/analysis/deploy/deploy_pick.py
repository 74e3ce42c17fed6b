"""What a deployment pick says besides its figures: its instances, its bottleneck, its launch flags,
and (off SOL) its analytic figures on SOL beside the forecast.

The launch lines (SGLang and vLLM) are :mod:`.deploy_launch`'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.plan import Plan, Request
from ...ir.routing import UNIFORM, Routing
from ...passes import compile
from .deploy_launch import launch_flags, launch_gpus, vllm_flags, vllm_gpus  # noqa: F401  (re-exported)
from .deploy_price import price_aggregated, price_disaggregated
from .deploy_space import Instance, prefill_prompts
from ..families import by_family


def _instance(inst: Instance, count: int, role: str) -> dict[str, Any]:
    e = inst.engine
    out = {"role": role, "count": count, "tp": e.tp, "attn_dp": e.attn_dp, "ep": e.ep, "gpus_each": e.gpus,
           "decoder_replay": inst.replay, "engram_residency": inst.engram, "dspark_verify": inst.verify,
           "overlap_schedule": inst.overlap}
    if role != "prefill":
        out["max_running_requests"] = inst.cap
    if role == "prefill+decode":
        out["schedule"] = inst.schedule()
    out["chunked_prefill_size"] = inst.chunk
    return out


def describe(mode: str, parts) -> list[dict[str, Any]]:
    """JSON-ready: the instances of a deployment, by role."""
    if mode == "aggregated":
        inst, r = parts
        return [_instance(inst, r, "prefill+decode")]
    pre, x, dec, y = parts
    return [_instance(pre, x, "prefill"), _instance(dec, y, "decode")]


def _resource(family: str, fig, hardware) -> str:
    if family == "communication":
        return "interconnect"
    compute = fig.flops / max(hardware.peak_flops.values())
    memory = fig.bytes / hardware.hbm_bandwidth
    return "compute" if compute > memory else "HBM bandwidth"


def _top_family(model, hardware, plan) -> dict[str, Any]:
    f = by_family(model, plan, compile(model, plan, hardware), hardware)
    name, fig = max(f.families.items(), key=lambda kv: (kv[1].time_s, kv[0]))
    return {"family": name, "share": fig.time_s / f.total_time_s if f.total_time_s else 0.0,
            "resource": _resource(name, fig, hardware)}


def bottleneck(model, hardware, mode: str, parts, isl: int, osl: int, routing: Routing = UNIFORM) -> dict[str, Any]:
    """The family with the most node time in the decode step at the cap (and the prefill step of a
    prefill instance), and the resource that family is nearer to (flops at the GPU's top peak vs
    bytes at HBM bandwidth; communication: the interconnect). SOL schedule."""
    dec = parts[0] if mode == "aggregated" else parts[2]
    m = dec.engine.mapping
    policies = {"tp": m.tp, "dp": m.dp, "ep": m.ep, "decoder_replay": dec.replay, "engram_residency": dec.engram,
                "routing": routing, "moe_a2a": m.a2a}
    ctx = isl + osl // 2
    req = (replace(Request.verify(ctx, dec.verify), copies=dec.cap) if dec.verify
           else Request.decode(ctx, copies=dec.cap))
    out = {"decode": _top_family(model, hardware, Plan([req], dspark="on" if dec.verify else "off", **policies))}
    if mode == "disaggregated":
        pre = parts[0]
        pm = pre.engine.mapping
        prompts = [Request.prefill(isl, seq=i) for i in range(prefill_prompts(isl) if isl <= pre.chunk else 1)]
        plan = Plan(prompts, tp=pm.tp, dp=pm.dp, ep=pm.ep, decoder_replay=pre.replay, engram_residency=pre.engram,
                    routing=routing, moe_a2a=pm.a2a)
        out["prefill"] = _top_family(model, hardware, plan)
    return out


def sol_ceiling(sol_costers, mode: str, parts, isl: int, osl: int, rate, gpus: int,
                analytic: dict[str, float]) -> dict[str, Any]:
    """A pick's analytic price on SOL step costs (``sol_costers``: a :class:`~.deploy_price.Costers`
    of no cost mode), at the rate the search offered it (None: each at its own capacity's load, so
    tokens/s on SOL is a ceiling) beside the forecast's: tokens/s per GPU, TPOT and TTFT, and each
    forecast / SOL ratio: the SOL ceiling stands beside every serving forecast."""
    from ..basis import ceiling_ratio
    price = price_aggregated if mode == "aggregated" else price_disaggregated
    p = price(sol_costers, *parts, isl, osl, rate)
    out = {"tokens_per_s_per_gpu": p.per_gpu(gpus), "tpot_s": p.tpot_s, "ttft_s": p.ttft_s}
    return {**out, "ratio": {k.removesuffix("_s"): ceiling_ratio(analytic[k], v) for k, v in out.items()}}


def why_none(rows, mode: str) -> str:
    """Why a mode has no pick: nothing fits, nothing meets the SLA analytically, or the checks failed."""
    mine = [r for r in rows if r["mode"] == mode]
    if not mine:
        return f"no {mode} deployment within the GPU budget"
    analytic = [r for r in mine if "analytic" in r or (r["reason"] or "").startswith("analytic")]
    if not analytic:
        near = min(mine, key=lambda r: r["memory_per_gpu_bytes"])  # the closest to fitting says the most
        return f"no {mode} candidate fits ({len(mine):,} tried); the closest, {near['label']}: {near['reason']}"
    if not any("simulated" in r for r in mine):
        first = analytic[0]
        return f"no {mode} candidate meets the SLA analytically, e.g. {first['reason']}"
    return f"the best {mode} candidates missed the SLA in simulation, e.g. " + \
        next(r for r in mine if "simulated" in r)["reason"]


#: significant digits figures are compared at when ranking: past them a difference is float noise (3 × tp2
#: and 4 × tp2 of one engine differ by ~1e-15 relative), so the next key ("prefer more GPUs") decides
RANK_DIGITS = 9


def rounded(x: float) -> float:
    """``x`` to :data:`RANK_DIGITS` significant digits: the figure a ranking compares.

    >>> rounded(602.0000000000004) == rounded(601.9999999999998) == 602.0
    True
    >>> rounded(602.01) > rounded(602.0)
    True
    """
    return float(f"{x:.{RANK_DIGITS - 1}e}")


def winner(picks) -> dict[str, Any] | None:
    a, d = picks.get("aggregated"), picks.get("disaggregated")
    if not a and not d:
        return None
    if not a or not d:
        return {"mode": (a or d)["mode"], "by": None, "why": "the only mode with a pick that meets the SLA"}
    fa, fd = (rounded(p["simulated"]["tokens_per_s_per_gpu"]) for p in (a, d))
    best, other = ("aggregated", fa / fd) if fa >= fd else ("disaggregated", fd / fa)
    return {"mode": best, "by": other,
            "why": "tokens/s per GPU at the SLA, simulated: each mode's checked candidates ranked on their "
                   "simulated figures"}
