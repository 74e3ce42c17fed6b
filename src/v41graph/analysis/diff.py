"""Graph diff: two graphs (other passes, policies or models) compared node by node.

A node is *added* or *removed* when its id is in one graph only, *changed* when both have it but
its payload, token count, rows or edges differ; each carries its SOL-time and byte delta when both
graphs are scheduled (their ``cost`` / ``schedule`` side tables), else its payload change only.
Ids are compared as they are, so a fused module (``L3.kv_quant+``) shows as the members removed
and the module added. Each list is sorted by the size of its time delta, largest first (ties, and
unscheduled graphs, by id), so the nodes that matter lead. Output is a JSON-ready dict;
``render/text/diff_text.py`` renders it.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.passes import compile
>>> m = load_model()
>>> a = compile(m, Plan([Request.prefill(1000)]), "h200_sxm").graph
>>> b = compile(m, Plan([Request.prefill(1000)], decoder_replay="bounded"), "h200_sxm").graph
>>> d = graph_diff(a, b)
>>> [e["id"] for e in d["removed"]], len(d["added"])  # the cut at layer 21 splits layer 20's Mega-mHC
(['L20.hc_ffn.mega'], 4)
>>> d["total_time_delta_s"] < 0
True
"""

from __future__ import annotations

from typing import Any

from ..ir.graph import Graph

__all__ = ["graph_diff", "plans_diff"]


def _edges(g: Graph, nid: str) -> tuple:
    return (tuple(sorted((e.src, e.role, e.dims, e.format) for e in g.inputs(nid))),
            tuple(sorted((e.dst, e.role, e.dims, e.format) for e in g.outputs(nid))))


def _time(g: Graph, nid: str) -> float | None:
    slots = g.annotations.get("schedule")
    return None if slots is None or nid not in slots else float(slots[nid].sol.time)


def _bytes(g: Graph, nid: str) -> float | None:
    costs = g.annotations.get("cost")
    return None if costs is None or nid not in costs else float(costs[nid].total_bytes)


def _tokens(g: Graph, nid: str) -> list:
    return [[r.request, str(r.q_start), str(r.q_end)] for r in g.nodes[nid].rows]


def _delta(new, old) -> float | None:
    return None if new is None and old is None else (new or 0.0) - (old or 0.0)


def _entry(nid: str, a: Graph | None, b: Graph | None, what: list[str]) -> dict[str, Any]:
    node = (b or a).nodes[nid]
    ta, tb = (_time(a, nid) if a else None), (_time(b, nid) if b else None)
    ba, bb = (_bytes(a, nid) if a else None), (_bytes(b, nid) if b else None)
    return {"id": nid, "op": node.op.kind, "layer": node.layer, "what": what,
            "time_s_a": ta, "time_s_b": tb, "time_delta_s": _delta(tb, ta), "bytes_delta": _delta(bb, ba)}


def graph_diff(a: Graph, b: Graph) -> dict[str, Any]:
    """Nodes of ``b`` against ``a``: added, removed, changed (what changed), with cost deltas."""
    added = [_entry(n, None, b, ["added"]) for n in sorted(set(b.nodes) - set(a.nodes))]
    removed = [_entry(n, a, None, ["removed"]) for n in sorted(set(a.nodes) - set(b.nodes))]
    changed = []
    for n in sorted(set(a.nodes) & set(b.nodes)):
        na, nb = a.nodes[n], b.nodes[n]
        what = [name for name, x, y in (("op", na.op, nb.op), ("count", na.count, nb.count),
                                        ("tokens", _tokens(a, n), _tokens(b, n)), ("edges", _edges(a, n), _edges(b, n)))
                if x != y]
        entry = _entry(n, a, b, what)
        if what or entry["time_delta_s"] or entry["bytes_delta"]:
            changed.append(entry if what else {**entry, "what": ["cost"]})
    for entries in (added, removed, changed):
        entries.sort(key=lambda e: (-abs(e["time_delta_s"] or 0.0), e["id"]))
    totals = [sum(t for t in (_time(g, n) for n in g.nodes) if t is not None) for g in (a, b)]
    scheduled = all("schedule" in g.annotations for g in (a, b))
    return {"models": [a.model, b.model], "nodes": [len(a.nodes), len(b.nodes)],
            "counts": {"added": len(added), "removed": len(removed), "changed": len(changed)},
            "total_time_delta_s": totals[1] - totals[0] if scheduled else None,
            "added": added, "removed": removed, "changed": changed}


def plans_diff(a: tuple, b: tuple, hardware, prefill: int) -> dict[str, Any]:
    """``diff``: the scheduled graphs of one prompt of ``prefill`` tokens under plan a and plan b (each
    ``(model, plan policies)``, :func:`~v41graph.analysis.symbolic.ask_answers.two_plans`) on ``hardware``,
    compared node by node (:func:`graph_diff`).

    >>> from v41graph import load_model
    >>> m = load_model()
    >>> d = plans_diff((m, {"decoder_replay": "off"}), (m, {"decoder_replay": "bounded"}), "h200_sxm", 1000)
    >>> [e["id"] for e in d["removed"]]
    ['L20.hc_ffn.mega']
    """
    from ..passes import compile
    from .symbolic.ask_answers import prompt_plan
    ga = compile(a[0], prompt_plan(a[1], prefill), hardware).graph
    gb = compile(b[0], prompt_plan(b[1], prefill), hardware).graph
    return graph_diff(ga, gb)
