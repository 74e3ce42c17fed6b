"""JSON-ready summaries of the model layout and memory; the CLI's text and ``--json`` output
both render these dicts, so the two can never disagree.

>>> from v41graph import load_model
>>> s = layout_summary(load_model())
>>> s["path_counts"], s["layers"][29]["kv_owner"], s["layers"][29]["topk_producer"]
({'swa': 2, 'full': 4, 'reindex': 4, 'reuse': 30}, 20, 28)
"""

from __future__ import annotations

from typing import Any

from ..inventory import inventory
from ..memory import cache_memory
from ..model import ModelSpec
from .text import GIB



def layout_summary(model: ModelSpec) -> dict[str, Any]:
    """The per-layer table (``layout --json``)."""
    layers = []
    for l in model.layers:
        layers.append({
            "index": l.index, "stage": l.stage, "path": l.path, "compress_ratio": l.compress_ratio,
            "kv_owner": l.kv_owner, "topk_producer": l.topk_producer, "window": l.window,
            "candidate_source": l.candidate_source, "candidate_user": l.candidate_user,
            "engram": l.engram, "dspark_target": l.dspark_target,
        })
    drafts = [{"index": d.index, "block": d.block, "compress_ratio": d.compress_ratio, "window": d.window,
               "n_routed_experts": d.n_routed_experts, "experts_per_token": d.experts_per_token}
              for d in model.draft_blocks]
    return {"model": model.name, "family": model.family, "layers": layers,
            "path_counts": model.path_counts(), "draft_blocks": drafts}


def memory_summary(model: ModelSpec, context: int, *, dspark: bool = False) -> dict[str, Any]:
    """Resident weights by group and per-request cache memory by owner (``memory --json``)."""
    inv = inventory(model)
    cache = cache_memory(model, context, dspark=dspark)
    by_group = inv.bytes_by_group()
    owners = [{"owner": o.owner, "ratio": o.ratio, "entries": o.entries, "main_kv_bytes": o.main_kv_bytes,
               "index_k_entries": o.index_k_entries, "index_k_bytes": o.index_k_bytes,
               "partial_tokens": o.partial_tokens, "state_bytes": o.state_bytes} for o in cache.owners]
    return {
        "model": model.name,
        "context": context,
        "weights_bytes": inv.total_bytes,
        "weights_gib": inv.total_bytes / GIB,
        "weights_by_group": by_group,
        "kv": {
            "global_entries": cache.global_entries,
            "main_kv_bytes": cache.main_kv_bytes,
            "index_k_bytes": cache.index_k_bytes,
            "global_bytes": cache.global_bytes,
            "swa_bytes": cache.swa_bytes,
            "swa_payload_bytes": cache.swa_payload_bytes,
            "swa_entries_per_layer": cache.swa_entries_per_layer,
            "dspark_swa_bytes": cache.dspark_swa_bytes,
            "state_bytes": cache.state_bytes,
            "total_bytes": cache.total_bytes,
            "total_gib": cache.total_bytes / GIB,
            "owners": owners,
        },
        "engram_table_bytes": by_group.get("engram_tables", 0),
    }
