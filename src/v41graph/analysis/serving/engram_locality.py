"""Engram locality report: the rows real text touches, against synthetic all-pad / repeated input.

``locality_summary`` is JSON-ready; ``locality_text`` prints it. Each input is hashed as in the
V4.1 reference (``ir/engram_rows.py``) and its lookups at each Engram layer are run through an LRU
cache of each given size (``costs/requests/engram_cache.py``). A row is 264 bytes (256 FP8 values and 8
UE8M0 scales), so a cache of C rows holds 264·C bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ...errors import PlanError
from ...workload.tokens import TokenContent, corpus_tokens
from ...model.config import ModelSpec
from ...model.formats import FP8_E4M3_G32

if TYPE_CHECKING:
    from ...model.engram_hash import HashLayout


#: the synthetic inputs the real text is contrasted with: all pad tokens, and the corpus's first 16 tokens repeated
SYNTHETIC = ("pad", "repeat")
#: the stack-distance pass is a pure-Python loop over tokens × 24 lookups per layer: 64K tokens take
#: about half a minute per input, and more is refused up front rather than left to run for minutes
MAX_TOKENS = 1 << 16


def bounded_tokens(tokens: int) -> int:
    """``tokens``, refused past :data:`MAX_TOKENS` before any work (the report and ``--prefetch`` alike).

    >>> bounded_tokens(8192)
    8192
    >>> bounded_tokens(100_000)
    Traceback (most recent call last):
    ...
    v41graph.errors.PlanError: engram --tokens: 100,000 is more than the 65,536 tokens this report handles
    """
    if tokens > MAX_TOKENS:
        raise PlanError(f"engram --tokens: {tokens:,} is more than the {MAX_TOKENS:,} tokens this report handles")
    return tokens


def locality_inputs(corpus: str, tokens: int, compare: Sequence[str] = SYNTHETIC) -> list[TokenContent]:
    """The inputs of the locality report: the ``corpus``'s first ``tokens`` tokens, then each synthetic input of
    ``compare`` (:data:`SYNTHETIC`) of the same length: ``pad`` all pad tokens, ``repeat`` the corpus's first 16
    tokens over and over."""
    real = corpus_tokens(corpus, tokens)
    out = [real]
    for name in compare:
        out.append(TokenContent.pad(tokens) if name == "pad" else TokenContent.repeated(tokens, real.ids[:16]))
    return out


def row_bytes(model: ModelSpec) -> int:
    """Bytes of one Engram row: ``engram_head_dim`` FP8 values plus one UE8M0 scale per 32."""
    return int(FP8_E4M3_G32.bytes_for(model.engram_head_dim))


def locality_summary(model: ModelSpec, layout: HashLayout, fold, inputs: Sequence[TokenContent],
                     capacities: Sequence[int], layers: Sequence[int] | None = None) -> dict[str, Any]:
    """Distinct rows, reuse and LRU hit rates of each input at each (selected) Engram layer."""
    # loaded here, not with the module: the CLI reads SYNTHETIC when it builds its parser, for every command
    from ...costs.requests.engram_cache import layer_locality
    from ...ir.engram_rows import request_rows
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


__all__ = ["MAX_TOKENS", "SYNTHETIC", "bounded_tokens", "locality_inputs", "locality_summary", "row_bytes"]
