"""Plain text of a graph diff (``analysis/diff.py`` computes it; this only formats)."""

from __future__ import annotations

from typing import Any

__all__ = ["diff_text"]


def diff_text(d: dict[str, Any], *, limit: int = 40) -> str:
    """Plain text of :func:`graph_diff`: the counts, then each node (the first ``limit`` of each kind)."""
    c = d["counts"]
    lines = [f"graph a: {d['models'][0]} ({d['nodes'][0]} nodes)   graph b: {d['models'][1]} ({d['nodes'][1]} nodes)",
             f"added {c['added']}  removed {c['removed']}  changed {c['changed']}"]
    if d["total_time_delta_s"] is not None:
        lines.append(f"Σ node SOL time delta (b − a): {d['total_time_delta_s'] * 1e3:+.6f} ms")
    for kind in ("added", "removed", "changed"):
        for e in d[kind][:limit]:
            dt = "" if e["time_delta_s"] is None else f"  Δt {e['time_delta_s'] * 1e6:+.3f} µs"
            db = "" if e["bytes_delta"] is None else f"  Δbytes {e['bytes_delta']:+,.0f}"
            lines.append(f"  {kind:8} {e['id']:28} {e['op']:16} {','.join(e['what']):18}{dt}{db}")
        if len(d[kind]) > limit:
            lines.append(f"  … {len(d[kind]) - limit} more {kind}")
    return "\n".join(lines) + "\n"
