"""Text of the Engram locality report (``analysis/engram_locality.py`` computes it; this only formats)."""

from __future__ import annotations

from typing import Any

from .units import human_bytes

__all__ = ["locality_text"]


def locality_text(data: dict[str, Any]) -> str:
    """Readable form of :func:`locality_summary`."""
    rb = data["row_bytes"]
    lines = [f"Engram locality — {data['model']}: {data['columns_per_position']} lookups per position per layer, "
             f"{rb} B per row, compressed vocabulary {data['compressed_vocab']:,}"]
    for inp in data["inputs"]:
        lines.append(f"\n{inp['source']} ({inp['tokens']:,} tokens; {inp['tokenizer']}; sha256 {inp['digest'][:12]})")
        for l in inp["layers"]:
            cols, med = l["distinct_rows_per_column"], l["median_reuse_distance_rows"]
            lines.append(f"  layer {l['layer']}: {l['lookups']:,} lookups, {l['distinct_rows']:,} distinct rows "
                         f"({100 * l['distinct_fraction']:.2f}%); per column {min(cols):,}..{max(cols):,} of "
                         f"{l['positions']:,} positions; median reuse distance "
                         f"{'-' if med is None else format(med, 'g')} rows")
            for c in l["lru"]:
                lines.append(f"    LRU {c['cache_rows']:>10,} rows ({human_bytes(c['cache_bytes'])}): "
                             f"hit rate {100 * c['hit_rate']:6.2f}%")
    return "\n".join(lines)
