"""Coverage of an OP/hybrid schedule: how much of its time each tier answered, and with what data.

Time and node count by tier, over all nodes and on the critical path; the op kinds that fell
back to SOL (and how much time they hold); the data identity (source, root, system and the
SHA-256 of every table read); and the per-node table. A node's count goes to its worst tier;
its time is split over its parts' tiers.

>>> from v41graph.costs.measured.tiers import Part, Resolution
>>> res = {"a": Resolution("a", "Gemm", (Part("Gemm", "measured", 3.0, 2.0),)),
...        "b": Resolution("b", "Norm", (Part("Norm", "sol", 1.0, 1.0),))}
>>> c = coverage(res, ("a", "b"), {"source": "vendored"}, "hybrid")
>>> c["total"]["time_s"]["measured"], c["measured_or_interpolated"], c["fell_back"]
(3.0, 0.75, {'Norm': 1.0})
"""

from __future__ import annotations

from typing import Any

from .tiers import MEASURED_TIERS, TIERS, Resolution


def _by_tier(resolutions: dict[str, Resolution], ids, tiers: dict[int, str]) -> dict[str, Any]:
    time = {t: 0.0 for t in TIERS}
    nodes = {t: 0 for t in TIERS}
    for n in ids:
        r = resolutions[n]
        if not r.parts:
            continue  # storage: holds data, takes no time
        nodes[tiers[id(r.parts)]] += 1
        for p in r.parts:
            time[p.tier] += p.time
    keep = [t for t in TIERS if nodes[t] or time[t]]
    return {"time_s": {t: time[t] for t in keep}, "nodes": {t: nodes[t] for t in keep},
            "total_s": sum(time.values())}


def _share(block: dict[str, Any]) -> float:
    total = block["total_s"]
    return sum(block["time_s"].get(t, 0.0) for t in MEASURED_TIERS) / total if total else 1.0


def node_rows(resolutions: dict[str, Resolution], order) -> list[dict[str, Any]]:
    """The per-node table: id, kind, tier, time, SOL and each part with its table and coordinates."""
    rows = []
    made: dict[int, tuple] = {}  # per parts tuple (equal work shares one: passes/scheduling.py), its figures
    for n in order:
        r = resolutions[n]
        if not r.parts:
            continue
        fixed = made.get(id(r.parts))
        if fixed is None:
            sol, time = sum(p.sol for p in r.parts), r.time
            fixed = made[id(r.parts)] = (r.parts, r.tier, time, sol, sol / time if time else None, [
                {"what": p.what, "tier": p.tier, "time_s": p.time, "sol_s": p.sol, "table": p.table,
                 "coords": dict(p.coords),
                 "distance": [{"axis": a, "measured": m, "query": q} for a, m, q in p.distance]}
                for p in r.parts])
        _, tier, time, sol, utilisation, parts = fixed
        rows.append({"node": n, "kind": r.kind, "tier": tier, "time_s": time, "sol_s": sol,
                     "utilisation": utilisation, "parts": list(parts)})
    return rows


def coverage(resolutions: dict[str, Resolution], path, identity: dict, mode: str) -> dict[str, Any]:
    """The coverage record of one schedule (JSON-ready)."""
    order = list(resolutions)
    tiers = {id(r.parts): r.tier for r in resolutions.values()}  # (the resolutions keep each tuple alive)
    total, critical = _by_tier(resolutions, order, tiers), _by_tier(resolutions, path, tiers)
    fell: dict[str, float] = {}
    for r in resolutions.values():
        for p in r.parts:
            if p.tier == "sol" and p.time > 0:
                fell[p.what] = fell.get(p.what, 0.0) + p.time
    return {"mode": mode, "total": total, "critical_path": critical,
            "measured_or_interpolated": _share(total), "critical_measured_or_interpolated": _share(critical),
            "fell_back": dict(sorted(fell.items(), key=lambda kv: (-kv[1], kv[0]))), "data": identity,
            "nodes": node_rows(resolutions, order)}
