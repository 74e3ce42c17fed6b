"""Token flow along edges: a consumer never uses a token position its producer did not produce.

Each compute node is charged for the positions its ``count`` names over its rows (``q``: the
queries, ``kv``: an owner's compressor tokens, ``in``: both). An edge
is consistent when, for every sequence, the positions the consumer counts lie inside those the
producer counts. A consumer may take fewer (the replay tail past the cut reads a subset of the
cut layer's rows) but never more: ``L20.cmp.wkv`` consuming 8,192 tokens of an ``L20.attn_norm``
charged for 128 is a graph that under-charges its producer. Collectives that receive other GPUs'
rows are where a graph of one DP rank legitimately widens: an all-gather counts every rank's rows
while its input is this GPU's share (SGLang's DP gather before a TP MoE), and the experts after an
all-to-all dispatch compute every rank's routed tokens while the dispatch sends this GPU's. Into
such a node — an all-gather, or a node fed by an all-to-all — the inclusion runs the other way:
it must hold the positions each of its inputs hands it (the routes from this GPU's gate as well).

Positions are grouped by sequence, so the last chunk's late-layer tail may read rows an earlier
chunk of the same prompt produced; the positions before a row's ``cached − restored`` are history
an earlier forward left, not checked.

Only numeric rows are checked (a symbolic interval has no decidable inclusion here); storage,
vision and DSpark-to-backbone edges carry no per-position token flow and are skipped.

>>> positions_within([(0, 990), (990, 1000)], [(872, 1000)])
True
>>> positions_within([(8064, 8192)], [(0, 8192)])
False
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Iterable

from ..algebra import is_symbolic
from ..errors import GraphError

# ``logits`` (the head) is not checked: it counts a request's last position only when the request
# emits logits (a non-final chunk does not), which rows alone do not say; every replay tail ends at
# its request's end, so the last position is always produced.
_COUNTED = ("q", "kv", "in")


def _span(count: str, row: Any) -> tuple[Any, Any]:
    if count == "q":
        return row.q_start, row.q_end
    if count == "kv":
        return row.kv_start, row.kv_end
    return row.in_start, row.q_end  # in


def _domain(node: Any) -> str:
    return {"dspark": "draft", "vision": "vision"}.get(node.stage, "backbone")


def node_positions(node: Any, carried: bool = False) -> dict[Any, list[tuple[int, int]]] | None:
    """Positions a node counts, per sequence, merged and sorted; None when it counts none or they
    are symbolic.

    With ``carried``, positions before ``cached − restored`` are left out: they are the sequence's
    history, state an earlier forward left (the last chunk's late layers read the prompt's tail
    from the earlier chunks' forwards), not positions this forward must produce."""
    if node.op.storage or node.count not in _COUNTED or not node.rows:
        return None
    out: dict[Any, list[tuple[int, int]]] = {}
    for r in node.rows:
        a, b = _span(node.count, r)
        history = r.cached - r.restored
        if is_symbolic(a) or is_symbolic(b) or is_symbolic(history):
            return None
        if carried and history > a:
            a = history
        if b > a:
            out.setdefault(("seq", r.seq) if r.seq is not None else ("request", r.request), []).append((a, b))
    return {k: _merged(v) for k, v in out.items()}


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def positions_within(produced: Iterable[tuple[int, int]], needed: Iterable[tuple[int, int]]) -> bool:
    """True when every interval of ``needed`` lies inside the union of ``produced``."""
    merged = _merged(produced)
    return all(any(a >= lo and b <= hi for lo, hi in merged) for a, b in needed)


def check_token_flow(graph: Any, where) -> None:
    """Raise :class:`GraphError` on the first edge whose consumer counts positions its producer
    does not (``where(graph, node_id)`` describes a node and its neighbours)."""
    nodes = tuple(graph.nodes.values())
    check_flow(graph, nodes, flow_checks(graph, nodes, rows_classes(nodes)), where)


def numbered(keys: Iterable[Any]) -> tuple[int, ...]:
    """Each key's number in order of first sight: equal keys, one number (how rows classes and a graph's
    stated slots are numbered, ``ir.shapes.rows_slots``).

    >>> numbered(["b", "a", "b", "c"])
    (0, 1, 0, 2)
    """
    keys = tuple(keys)
    number = {k: i for i, k in enumerate(dict.fromkeys(keys))}  # a loop over the distinct keys only
    return tuple(map(number.__getitem__, keys))


def rows_classes(nodes: tuple[Any, ...]) -> tuple[int, ...]:
    """Which nodes carry one rows tuple: each node's number for its rows object, in order of first
    sight (nodes of one layer share one tuple, so the positions of a class are computed once)."""
    return numbered(map(id, map(attrgetter("rows"), nodes)))


def flow_checks(graph: Any, nodes: tuple[Any, ...], classes: tuple[int, ...]) -> tuple[tuple, ...]:
    """The structural half of the check: the edges whose two ends count positions, one per distinct
    (producer side, consumer side) — a side is a rows class, a count and whether history is left out —
    as (edge index, made node index, carried, used node index, carried, gathers), in edge order. Every
    edge of one pair sees the same positions on both sides, so checking its first edge checks them all
    (and the first failing edge in edge order is the first edge of the first failing pair). Reads only
    the edges, the nodes' stages, counts, ops and ``classes``: a pure function of those."""
    index = {n.id: i for i, n in enumerate(nodes)}
    wide = _receiving(graph)
    out, seen = [], set()
    for k, e in enumerate(graph.edges):
        s, d = index[e.src], index[e.dst]
        src, dst = nodes[s], nodes[d]
        if src.stage == "vision" or (src.stage != dst.stage and _domain(src) != _domain(dst)):
            continue
        gathers = e.dst in wide
        (m, mc), (u, uc) = ((d, False), (s, False)) if gathers else ((s, False), (d, True))
        if not _counts(nodes[m]) or not _counts(nodes[u]):
            continue  # storage, or a count not checked: no positions (check_token_flow's None)
        made, used = (classes[m], nodes[m].count, mc), (classes[u], nodes[u].count, uc)
        if made == used or (made, used, gathers) in seen:
            continue  # one positions object on both sides / an edge of a pair already listed
        seen.add((made, used, gathers))
        out.append((k, m, mc, u, uc, gathers))
    return tuple(out)


def _counts(node: Any) -> bool:
    return not node.op.storage and node.count in _COUNTED


def check_flow(graph: Any, nodes: tuple[Any, ...], checks: tuple[tuple, ...], where,
               memo: dict | None = None) -> None:
    """The rows-dependent half: each of ``checks`` (:func:`flow_checks`) on the nodes' rows.

    ``memo``: a dict the caller keeps over the graphs of one pipeline run (the passes hand most rows
    tuples on unchanged), so the positions of a (rows, count) and a pair of sides that passed are
    computed once per run. Its entries hold the rows tuples they were keyed by, so an id in a key
    names the same tuple while the dict lives."""
    memo = {} if memo is None else memo

    def positions(node: Any, carried: bool):
        key = (id(node.rows), node.count, carried)
        found = memo.get(key)
        if found is None:
            found = memo[key] = (node.rows, node_positions(node, carried))
        return found[1]

    def columns(node: Any, carried: bool):
        key = ("columns", id(node.rows), node.count, carried)
        found = memo.get(key)
        if found is None:
            found = memo[key] = (node.rows, _columns(node, carried))
        return found[1]

    for k, m, mc, u, uc, gathers in checks:
        a, b = nodes[m], nodes[u]
        pair = (id(a.rows), a.count, mc, id(b.rows), b.count, uc)
        if pair in memo:
            continue
        if not (hasattr(a.rows, "cols") and hasattr(b.rows, "cols") and _covers(columns(a, mc), columns(b, uc))):
            _check_spans(graph, (k, gathers), positions(a, mc), positions(b, uc), where)
        memo[pair] = (a.rows, b.rows)


def _check_spans(graph: Any, edge: tuple[int, Any], made, used, where) -> None:
    """The per-row check of one edge (index, gathers): every span the consumer counts lies in one its producer
    was charged for; refused naming the edge and the sequence."""
    if made is None or used is None:
        return
    for seq, spans in used.items():
        have = made.get(seq, ())
        if have != spans and not all(any(x >= lo and y <= hi for lo, hi in have) for x, y in spans):
            _refuse(graph, graph.edges[edge[0]], edge[1], seq, spans, have, where)


def _columns(node: Any, carried: bool):
    """A node over a row table (``ir/rows.py``): its positions as columns — the sequence keys sorted
    (a request of no sequence keyed −1 − its index), each key's start and end — when every key has
    one span; None when some key has several (the per-row path merges them)."""
    import numpy as np  # a row table exists only once numpy is imported
    cols = node.rows.cols
    a, b = _span(node.count, cols)
    if carried:
        a = np.maximum(a, cols.cached - cols.restored)  # positions before cached − restored are history
    keep = b > a
    keys = np.where(cols.seq >= 0, cols.seq, -1 - cols.request)[keep]
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    if len(keys) > 1 and bool((keys[1:] == keys[:-1]).any()):
        return None
    return keys, a[keep][order], b[keep][order]


def _covers(made, used) -> bool:
    """True when each key's one span in ``used`` lies inside its one span in ``made`` (both
    :func:`_columns`); False when not, or not decidable here: the per-row path then decides, and
    names the first edge that fails."""
    if made is None or used is None:
        return False
    (mk, ma, mb), (uk, ua, ub) = made, used
    if not len(uk):
        return True
    if not len(mk):
        return False
    import numpy as np
    i = np.minimum(np.searchsorted(mk, uk), len(mk) - 1)
    return bool((mk[i] == uk).all() and (ma[i] <= ua).all() and (ub <= mb[i]).all())


def _refuse(graph: Any, e: Any, gathers: bool, seq, spans, have, where) -> None:
    src, dst = graph.nodes[e.src], graph.nodes[e.dst]
    if gathers:
        raise GraphError(
            f"verify: {e.dst!r} ({dst.count} count) holds positions {_fmt(have)} of {seq[0]} "
            f"{seq[1]}, not the positions {_fmt(spans)} that {e.src!r} ({e.role}) hands it across "
            f"the collective: the side that receives other GPUs' rows must hold this GPU's own; "
            f"{where(graph, e.dst)}")
    raise GraphError(
        f"verify: {e.dst!r} ({dst.count} count) consumes positions {_fmt(spans)} of {seq[0]} "
        f"{seq[1]} from {e.src!r} ({e.role}), which is charged for {_fmt(have)} "
        f"({src.count} count): producer and consumer disagree on token counts; "
        f"{where(graph, e.dst)}")


def _receiving(graph: Any) -> set[str]:
    """Nodes that hold rows other GPUs sent: every all-gather, and every node an all-to-all feeds."""
    out = {i for i, n in graph.nodes.items() if getattr(n.op, "collective", None) == "all_gather"}
    out.update(e.dst for e in graph.edges if getattr(graph.nodes[e.src].op, "collective", None) == "all_to_all")
    return out


def _fmt(spans) -> str:
    return "+".join(f"[{a}, {b})" for a, b in sorted(spans)) or "none"
