"""Text of an OP / hybrid coverage dict (``costs/measured/coverage.py`` computes it; this only formats)."""

from __future__ import annotations

from typing import Any

from ...costs.measured.tiers import coords_text
from ..units import ms


def coverage_text(c: dict[str, Any], top: int | None = 12) -> str:
    """Coverage in a few lines, then the ``top`` longest nodes (all with None) with their tier and table."""
    lines = [f"cost mode {c['mode']}: {c['measured_or_interpolated']:.1%} of node time measured or interpolated "
             f"({c['critical_measured_or_interpolated']:.1%} on the critical path)"]
    for label, block in (("all nodes", c["total"]), ("critical path", c["critical_path"])):
        parts = " · ".join(f"{t} {ms(block['time_s'][t])} ({block['nodes'][t]} nodes)" for t in block["time_s"])
        lines.append(f"  {label}: {parts}")
    if c["fell_back"]:
        lines.append("  fell back to SOL: " + ", ".join(f"{k} {ms(v)}" for k, v in c["fell_back"].items()))
    d = c["data"]
    where = d["source"] if d["root"] == d["source"] else f"{d['source']} {d['root']}"
    lines.append(f"  data: {where} · system {d['system']} · {len(d['files'])} tables")
    for f in d["files"]:
        lines.append(f"    {f['path']}  sha256 {f['sha256'][:16]}…")
    lines.append(f"  longest nodes (of {len(c['nodes'])}):" if top is not None else "  per node:")
    rows = c["nodes"] if top is None else sorted(c["nodes"], key=lambda r: (-r["time_s"], r["node"]))[:top]
    for row in rows:
        p = row["parts"][0]
        where = f"{p['table']} at {coords_text(p['coords'].items())}" if p["table"] else "SOL rules"
        lines.append(f"    {row['node']:<24} {ms(row['time_s']):>12}  {row['tier']:<15} {where}")
    return "\n".join(lines)
