"""Engram locality report: the rows real text touches, against synthetic all-pad / repeated input.

``locality_summary`` is JSON-ready; ``locality_text`` prints it. Each input is hashed as in the
V4.1 reference (``ir/engram_rows.py``) and its lookups at each Engram layer are run through an LRU
cache of each given size (``costs/requests/engram_cache.py``). A row is 264 bytes (256 FP8 values and 8
UE8M0 scales), so a cache of C rows holds 264·C bytes.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...costs.requests.engram_cache import layer_locality
from ...ir.engram_rows import request_rows
from ...workload.tokens import TokenContent
from ...model.config import ModelSpec
from ...model.engram_hash import HashLayout
from ...model.formats import FP8_E4M3_G32


def row_bytes(model: ModelSpec) -> int:
    """Bytes of one Engram row: ``engram_head_dim`` FP8 values plus one UE8M0 scale per 32."""
    return int(FP8_E4M3_G32.bytes_for(model.engram_head_dim))


def locality_summary(model: ModelSpec, layout: HashLayout, fold, inputs: Sequence[TokenContent],
                     capacities: Sequence[int], layers: Sequence[int] | None = None) -> dict[str, Any]:
    """Distinct rows, reuse and LRU hit rates of each input at each (selected) Engram layer."""
    rb = row_bytes(model)
    chosen = [l.layer_id for l in layout.layers] if layers is None else [layout.layer(l).layer_id for l in layers]
    out = []
    for content in inputs:
        rows = request_rows(content, layout, fold)
        per_layer = []
        for lid in chosen:
            loc = layer_locality(lid, rows.rows[lid], capacities)
            per_layer.append({
                "layer": lid, "positions": loc.positions, "lookups": loc.lookups, "distinct_rows": loc.distinct,
                "distinct_fraction": round(loc.distinct_fraction, 6),
                "distinct_rows_per_column": list(loc.distinct_per_column),
                "min_column_distinct_fraction": round(min(loc.distinct_per_column) / loc.positions, 6)
                if loc.positions else 0.0,
                "reuses": loc.reuses, "median_reuse_distance_rows": loc.median_reuse_distance,
                "lru": [{"cache_rows": c, "cache_bytes": c * rb, "hits": h,
                         "hit_rate": round(h / loc.lookups, 6) if loc.lookups else 0.0} for c, h in loc.hits],
            })
        out.append({"source": content.source, "tokenizer": content.tokenizer, "digest": content.digest,
                    "tokens": len(content), "image_positions": sum(b - a for a, b in content.image_spans),
                    "layers": per_layer})
    return {
        "model": model.name, "columns_per_position": layout.columns, "compressed_vocab": layout.compressed_vocab,
        "row_bytes": rb, "table_rows": {str(l.layer_id): l.rows for l in layout.layers},
        "inputs": out,
    }


__all__ = ["locality_summary", "row_bytes"]
