"""Text of the Engram reports: locality (``analysis/serving/engram_locality.py``) and host prefetch
(``analysis/serving/engram_host.py``); they compute, this only formats."""

from __future__ import annotations

from typing import Any

from ..units import human_bytes

__all__ = ["locality_text", "prefetch_text"]


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


def prefetch_text(data: dict[str, Any]) -> str:
    lines = [f"Host-resident Engram — decode step of {data['batch']} requests at context {data['context']:,} on "
             f"{data['hardware']}, TP {data['tp']}, per GPU "
             f"(host link {data['host_bandwidth_bytes_per_s'] / 1e9:g} GB/s); hot cache "
             f"{data['hot_cache_rows']:,} rows per layer; misses averaged over the last {data['window_steps']} steps"]
    for l in data["layers"]:
        lines.append(f"  layer {l['layer']}: {l['missed_rows_per_step']:.2f} of {l['lookups_per_step']} rows missed "
                     f"per step -> {l['prefetch_bytes']:,.0f} B over the host link, lands at "
                     f"{1e6 * l['lands_s']:.2f} us, needed by {1e6 * l['deadline_s']:.2f} us: "
                     + ("hidden" if l["hidden"] else f"STALLS {1e6 * l['stall_s']:.2f} us"))
    lines.append(f"  prefetch per step: {data['prefetch_bytes']:,.0f} B — "
                 + ("hidden behind the layers before each Engram layer" if data["hidden"]
                    else f"not hidden: the step waits {1e6 * data['stall_s']:.2f} us"))
    return "\n".join(lines)
