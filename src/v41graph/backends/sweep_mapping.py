"""Per-GPU figures of a sweep point under its parallel mapping: the GPU count, memory per GPU and
the fit verdict, from ``model/sharding.py`` and ``model/gpu_memory.py`` (through
:func:`~v41graph.backends.gpu_summary.memory_per_gpu`, the same figures ``cost`` reports).

The memory is one GPU's while it serves the point's ``batch`` requests at ``context`` (its DP
rank's share of them, as the decode plan places them): resident weights under the mapping, their
caches, and the workspace of the larger of the point's two forwards (the largest node's
activations in and out plus its workspace). A mapping the model rejects gives no figures: the
point is already a row with that reason.

>>> f = mapping_figures({"model": "deepseek-v4.1-flash", "hardware": "h200_sxm", "tp": 8, "ep": 8, "dp": 1,
...                      "batch": 1, "prompt": 8192, "context": None, "dspark": "off", "engram": "hbm"}, 0)
>>> f["gpus"], f["fits"], f["fit_note"]
(8, True, '')
"""

from __future__ import annotations

from typing import Any

from ..costs.hardware import load_hardware
from ..errors import V41Error
from ..ir.plan import Plan, Request
from ..model.config import load_model
from ..model.sharding import mapping_of
from ..reuse import cached
from .gpu_summary import memory_per_gpu
from .terminal import GIB


@cached(4096)
def _memory(model: str, hardware: str, tp: int, ep: int, dp: int, batch: int, context: int, dspark: str,
            engram: str, workspace: int) -> tuple[int, bool, int]:
    m = load_model(model)
    plan = Plan([Request.decode(context, copies=batch)], tp=tp, ep=ep, dp=dp, dspark=dspark, engram_residency=engram)
    mem = memory_per_gpu(m, plan, load_hardware(hardware), workspace=workspace)
    return mem["total_bytes"], mem["fits"], mem["capacity_bytes"]


def mapping_figures(point: dict[str, Any], workspace: int | None) -> dict[str, Any]:
    """``gpus``, ``per_gpu_memory_gib``, ``fits`` and ``fit_note`` of one sweep point.

    ``workspace`` is the larger forward's live bytes (``None``: the forwards did not run, so no
    memory figure is given).
    """
    context = point["prompt"] if point["context"] is None else point["context"]
    try:
        gpus = mapping_of(Plan([Request.decode(1)], tp=point["tp"], ep=point["ep"], dp=point["dp"])).gpus
        if workspace is None:
            return {"gpus": gpus, "per_gpu_memory_gib": None, "fits": None, "fit_note": "no forward ran"}
        total, fits, capacity = _memory(point["model"], point["hardware"], point["tp"], point["ep"], point["dp"],
                                        point["batch"], context, point["dspark"], point["engram"], workspace)
    except V41Error as exc:
        return {"gpus": None, "per_gpu_memory_gib": None, "fits": None, "fit_note": f"{type(exc).__name__}: {exc}"}
    note = "" if fits else (f"does not fit: {total / GIB:.2f} GiB per GPU against {capacity / GIB:.2f} GiB of HBM")
    return {"gpus": gpus, "per_gpu_memory_gib": total / GIB, "fits": fits, "fit_note": note}
