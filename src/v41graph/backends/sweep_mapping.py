"""Per-GPU figures of a sweep point — the GPUs a mapping occupies, memory per GPU and fit.

These come from the parallel mapping (``model/sharding.py`` and per-GPU memory in
``model/memory.py``, SPEC §8). Until that mapping is part of the package, this module says so
instead of guessing: every figure is ``None`` and ``fit_note`` gives the reason. Nothing here
may invent a per-GPU number (tokens/s per GPU divides by :func:`mapping_figures`' ``gpus``).

>>> mapping_figures({"tp": 8, "ep": 8, "dp": 1, "batch": 1, "prompt": 1024, "context": None})["gpus"] is None
True
"""

from __future__ import annotations

from typing import Any

UNAVAILABLE = ("not available: per-GPU memory, fit and the GPU count of a mapping need the parallel "
               "mapping (model/sharding.py), which this build does not have")


def mapping_figures(point: dict[str, Any]) -> dict[str, Any]:
    """``gpus``, ``per_gpu_memory_gib``, ``fits`` and ``fit_note`` of one sweep point."""
    return {"gpus": None, "per_gpu_memory_gib": None, "fits": None, "fit_note": UNAVAILABLE}
