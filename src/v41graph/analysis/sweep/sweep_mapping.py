"""Per-GPU figures of a sweep point under its parallel mapping: the GPU count, memory per GPU and
the fit verdict, from ``model/sharding.py`` and ``model/gpu_memory.py`` (through
:func:`~v41graph.analysis.gpu_summary.memory_per_gpu`, the same figures ``cost`` reports).

The memory is one GPU's while it serves the point's ``batch`` requests at ``context`` (its DP
rank's share of them, as the decode plan places them, all resident at once). ``fits`` is the one
rule every command uses (``model/gpu_memory.py``, as ``deploy`` and ``cost``'s deployment judge):
weights + cache (``static_memory_gib``) within the budget, 90 % of HBM (``budget_gib``). The raw
HBM figures beside it add the workspace of a prefill chunk (the scheduler's chunk, as
``simulate`` cuts prompts) and of the decode step (each: the largest node's activations in and
out plus its workspace): ``prefill_memory_gib``, ``decode_memory_gib`` and the larger,
``per_gpu_memory_gib``. A mapping the model rejects gives no figures: the point is already a row
with that reason.

>>> f = mapping_figures({"model": "deepseek-v4.1-flash", "hardware": "h200_sxm", "tp": 8, "ep": 8, "dp": 1,
...                      "batch": 1, "prompt": 8192, "context": None, "dspark": "off", "engram": "hbm"}, 0, 0)
>>> f["gpus"], f["fits"], round(f["budget_gib"], 2), f["fit_note"]
(8, True, 118.18, '')
"""

from __future__ import annotations

from typing import Any

from ...costs.hardware import load_hardware
from ...errors import V41Error
from ...ir.plan import Plan, Request
from ...model.sharding import mapping_of
from ...reuse import cached
from ...model.formats import GIB
from ..gpu_summary import memory_per_gpu


@cached(4096)
def _memory(model: str, hardware: str, checkpoint: str, fp4_on_hopper: bool, tp: int, ep: int, dp: int, batch: int,
            context: int, dspark: str, engram: str, workspace: int) -> dict[str, Any]:
    from .sweep_jobs import point_model
    m = point_model(model, hardware, checkpoint, fp4_on_hopper)[0]  # its experts' storage is what is held
    plan = Plan([Request.decode(context, copies=batch)], tp=tp, ep=ep, dp=dp, dspark=dspark, engram_residency=engram)
    mem = memory_per_gpu(m, plan, load_hardware(hardware), workspace=workspace)
    return mem


_NONE = dict.fromkeys(("per_gpu_memory_gib", "prefill_memory_gib", "decode_memory_gib", "static_memory_gib",
                       "budget_gib", "fits"))


def mapping_figures(point: dict[str, Any], prefill_workspace: int | None,
                    decode_workspace: int | None) -> dict[str, Any]:
    """``gpus``, per-GPU memory (weights + cache, and with each job's workspace), ``fits`` and ``fit_note``.

    Each workspace is that job's largest live bytes (``None``: the jobs did not run, so no memory
    figure is given); ``per_gpu_memory_gib`` is the larger of the two.
    """
    context = point["prompt"] if point["context"] is None else point["context"]
    try:
        gpus = mapping_of(Plan([Request.decode(1)], tp=point["tp"], ep=point["ep"], dp=point["dp"])).gpus
        if prefill_workspace is None or decode_workspace is None:
            return {"gpus": gpus, **_NONE, "fit_note": "no forward ran"}
        key = (point["model"], point["hardware"], point.get("checkpoint", "auto"), point.get("fp4_on_hopper", False),
               point["tp"], point["ep"], point["dp"], point["batch"], context, point["dspark"], point["engram"])
        pre, dec = _memory(*key, prefill_workspace), _memory(*key, decode_workspace)
    except V41Error as exc:
        return {"gpus": None, **_NONE, "fit_note": f"{type(exc).__name__}: {exc}"}
    note = "" if dec["fits"] else (f"does not fit: weights + cache {dec['static_bytes'] / GIB:.2f} GiB per GPU over "
                                   f"the budget {dec['budget_bytes'] / GIB:.2f} GiB (90 % of HBM; the decode batch's "
                                   "caches resident)")
    return {"gpus": gpus, "per_gpu_memory_gib": max(pre["total_bytes"], dec["total_bytes"]) / GIB,
            "prefill_memory_gib": pre["total_bytes"] / GIB, "decode_memory_gib": dec["total_bytes"] / GIB,
            "static_memory_gib": dec["static_bytes"] / GIB, "budget_gib": dec["budget_bytes"] / GIB,
            "fits": dec["fits"], "fit_note": note}


def auto_mappings(points: list[dict[str, Any]], fp4_on_hopper: bool = False) -> tuple[dict[str, Any], ...]:
    """Put each point on the smallest mapping that fits its decode batch (``cost``'s auto mapping,
    :func:`~v41graph.analysis.mapping_search.smallest_fitting`); return the distinct deployment records.

    >>> from v41graph.analysis.sweep.sweep_grid import grid
    >>> pts = grid({"prompt": [8192]})
    >>> [(d["tp"], d["ep"], d["gpus"], d["chosen"]) for d in auto_mappings(pts)], (pts[0]["tp"], pts[0]["ep"])
    ([(8, 8, 8, 'auto')], (8, 8))
    """
    from ...ir.plan import Plan, Request
    from ..mapping_search import smallest_fitting
    from .sweep_jobs import point_model
    records: dict[tuple, dict[str, Any]] = {}
    for p in points:
        context = p["prompt"] if p["context"] is None else p["context"]
        key = (p["model"], p["hardware"], p["checkpoint"], p["batch"], context, p["dspark"], p["engram"])
        if key not in records:
            model = point_model(p["model"], p["hardware"], p["checkpoint"], fp4_on_hopper)[0]
            plan = Plan([Request.decode(context, copies=p["batch"])], dspark=p["dspark"], engram_residency=p["engram"])
            records[key] = smallest_fitting(model, load_hardware(p["hardware"]), plan).summary()
        p.update({k: records[key][k] for k in ("tp", "ep", "dp")})
    return tuple({r["line"]: r for r in records.values()}.values())  # one record per deployment line
