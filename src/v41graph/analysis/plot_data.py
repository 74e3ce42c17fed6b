"""The figures the plots draw, computed here so that ``render/plots.py`` only draws.

- :func:`latency_series` — TTFT (one prefill forward) vs prompt length, one series per replay
  policy, from the closed-form fast path (8 points per octave);
- :func:`memory_series` — cache memory of one request vs context, by owner;
- :func:`ops_bars` — prefill time by op family, one bar per (prompt, replay).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from ..errors import V41Error
from ..ir.plan import Plan, Request
from ..model.config import ModelSpec
from ..model.memory import cache_memory
from ..symbols import N
from .sweep.length_sweep import LengthSweep


def geometric(lo: int, hi: int, per_octave: int = 8) -> np.ndarray:
    """Integers from ``lo`` to ``hi`` spaced ``per_octave`` to a doubling (both ends included).

    >>> geometric(1024, 4096, 2).tolist()
    [1024, 1448, 2048, 2896, 4096]
    """
    if not 1 <= lo <= hi:
        raise V41Error(f"plot lengths: need 1 <= low <= high, got {lo}..{hi}")
    octaves = np.log2(hi / lo)
    points = lo * 2 ** np.linspace(0, octaves, int(np.ceil(octaves * per_octave)) + 1)
    return np.unique(np.rint(points)).astype(np.int64)


def latency_series(model: ModelSpec, prompts: Sequence[int], replays: Sequence[str], *,
                   hardware: str = "h200_sxm", tp: int = 1, ep: int = 1, batch: int = 1) -> dict[str, Any]:
    """TTFT in seconds over [min(prompts), max(prompts)], one series per replay policy."""
    x = geometric(min(prompts), max(prompts))
    lines = {}
    for replay in replays:
        plan = Plan([replace(Request.prefill(N), copies=batch)], decoder_replay=replay, tp=tp, ep=ep)
        lines[replay] = LengthSweep(model, plan, hardware).evaluate(x, bound=False)["forward_s"]
    return {"model": model.name, "hardware": hardware, "tp": tp, "ep": ep, "batch": batch, "x": x, "ttft_s": lines}


def memory_series(model: ModelSpec, contexts: Sequence[int], *, dspark: bool = False) -> dict[str, Any]:
    """Cache bytes of one request vs context, one series per owner (then SWA rings, compressor state)."""
    x = geometric(min(contexts), max(contexts))
    caches = [cache_memory(model, int(n), dspark=dspark) for n in x]
    layers: dict[str, list[float]] = {}
    for c in caches:
        for o in c.owners:
            layers.setdefault(f"layer {o.owner} (1/{o.ratio}) main KV + index K", []).append(
                float(o.main_kv_bytes + o.index_k_bytes))
        layers.setdefault("SWA rings", []).append(float(c.swa_bytes + c.dspark_swa_bytes))
        layers.setdefault("compressor state", []).append(float(c.state_bytes))
    return {"model": model.name, "x": x, "bytes": layers}


def ops_bars(model: ModelSpec, prompts: Sequence[int], replays: Sequence[str], *,
             hardware: str = "h200_sxm", tp: int = 1, ep: int = 1) -> dict[str, Any]:
    """Prefill time by op family (analysis/families.py: seconds summed over nodes, a fused module
    split over the families it covers), one bar per (prompt, replay)."""
    from ..passes import compile
    from .families import by_family
    bars, labels = [], []
    for n in prompts:
        for replay in replays:
            plan = Plan([Request.prefill(int(n))], decoder_replay=replay, tp=tp, ep=ep)
            split = by_family(model, plan, compile(model, plan, hardware), hardware)
            bars.append({k: v.time_s for k, v in split.families.items()})
            labels.append(f"{n}\n{replay}")
    return {"model": model.name, "hardware": hardware, "tp": tp, "ep": ep, "labels": labels, "by_family_s": bars}
