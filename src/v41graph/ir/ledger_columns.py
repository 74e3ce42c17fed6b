"""The ledger of a many-request plan in columns: base rows, DP rank 0's share and the replay
policies, one numpy step per layer class instead of one Row per request and layer.

Each policy's decision for a request — how many prefix tokens encoder restore replays
(:func:`~.ledger.replayed`), where the decoder's tail starts (:func:`~.ledger.tail_start`) — is
taken by the ledger's own function, once per request; what a table adds is applying it to every
layer at once, the assignments ``apply_encoder_restore`` and ``apply_decoder_replay`` make to one
row. Layers that agree (every non-owner encoder layer, say) share one :class:`~.rows.RowColumns`,
so a 40-layer plan of a thousand requests builds a handful of columns, not 40,000 rows.

>>> from v41graph import load_model
>>> from v41graph.ir.plan import Plan, Request
>>> from v41graph.ir.ledger import ledger
>>> m = load_model()
>>> p = Plan([Request.prefill(1000 + i) for i in range(16)], decoder_replay="bounded")
>>> tables = policy_tables(m, p, base_tables(m, p))
>>> [tuple(tables[l]) == tuple(r for r in ledger(m, p).rows if r.layer == l) for l in (0, 2, 20, 21, 39)]
[True, True, True, True, True]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algebra import smax
from ..model.config import ModelSpec
from .ledger import replayed, tail_start
from .plan import Plan
from .rows import RowColumns, RowTable

@dataclass(frozen=True)
class RequestColumns:
    """Per request of a numeric plan: positions, copies, and each replay policy's decision."""

    cached: np.ndarray
    end: np.ndarray
    copies: np.ndarray
    seq: np.ndarray
    lost: np.ndarray  # the SWA state of the cached prefix was lost (encoder restore replays)
    replay: np.ndarray  # prefix tokens encoder restore replays (0 where nothing is lost)
    extend: np.ndarray  # prefill-like: where decoder bounded replay cuts to the tail
    tail: np.ndarray  # first position past the cut (extend-like requests; else unused)
    tail_restored: np.ndarray  # restored count past the cut (0 where the SWA state survived)


def request_columns(model: ModelSpec, plan: Plan) -> RequestColumns:
    reqs = plan.requests
    bounded = plan.decoder_replay == "bounded"
    tails = [tail_start(model, plan, r) if bounded and r.is_extend else 0 for r in reqs]
    return RequestColumns(
        cached=np.array([r.cached for r in reqs], dtype=np.int64), end=np.array([r.end for r in reqs], dtype=np.int64),
        copies=np.array([r.copies for r in reqs], dtype=np.int64),
        seq=np.array([plan.sequence_of(i) for i in range(len(reqs))], dtype=np.int64),
        lost=np.array([not r.swa_cached for r in reqs]),
        replay=np.array([replayed(model, plan, r) for r in reqs], dtype=np.int64),
        extend=np.array([bounded and r.is_extend for r in reqs]), tail=np.array(tails, dtype=np.int64),
        tail_restored=np.array([0 if r.swa_cached else smax(0, r.cached - t) for r, t in zip(reqs, tails)],
                               dtype=np.int64))


def base_tables(model: ModelSpec, plan: Plan) -> dict[int, RowTable]:
    """``base_rows`` by layer, as tables: an owner's compressor sees exactly the new tokens."""
    q = request_columns(model, plan)
    n = len(q.cached)
    zero = np.zeros(n, dtype=np.int64)
    common = dict(request=np.arange(n, dtype=np.int64), q_start=q.cached, q_end=q.end, swa_start=zero,
                  cached=q.cached, restored=zero, copies=q.copies, seq=q.seq)
    owner = RowColumns(kv_start=q.cached, kv_end=q.end, **common)
    other = RowColumns(kv_start=zero, kv_end=zero, **common)
    return {l.index: RowTable(l.index, owner if l.owns_kv else other) for l in model.layers}


def rank_table(plan: Plan, table: RowTable, share: tuple[int, ...]) -> RowTable:
    """``dp.rank_rows`` of a table: rank 0's copies of each request, requests it holds none of left out."""
    copies = np.array(share, dtype=np.int64)[table.cols.request]
    return RowTable(table.layer, table.cols.replace(copies=copies).take(copies != 0))


def policy_tables(model: ModelSpec, plan: Plan, tables: dict[int, RowTable]) -> dict[int, RowTable]:
    """``apply_policies`` on every layer's table; layers of one class share the result's columns."""
    memo: dict = {}
    return {layer: policy_table(model, plan, table, memo) for layer, table in tables.items()}


def policy_table(model: ModelSpec, plan: Plan, table: RowTable, memo: dict) -> RowTable:
    """``apply_policies`` on one layer's table (``memo``: shared by the tables of one plan)."""
    q = memo.get("requests")
    if q is None:
        q = memo["requests"] = request_columns(model, plan)
    spec = model.layers[table.layer]
    late = plan.late_start(model) if plan.decoder_replay == "bounded" else None
    ratio = spec.compress_ratio if spec.owns_kv and spec.compress_ratio > 1 else 0
    key = (id(table.cols), ratio, late is not None and table.layer >= late)
    if key not in memo:
        memo[key] = (table.cols, _apply(table.cols, q, ratio, key[2]))  # holds the input: its id stays unique
    cols = memo[key][1]
    return table if cols is table.cols else RowTable(table.layer, cols)


def _apply(c: RowColumns, q: RequestColumns, ratio: int, cut: bool) -> RowColumns:
    r = c.request
    q_start, swa_start, kv_start, restored = c.q_start, c.swa_start, c.kv_start, c.restored
    lost = q.lost[r]
    if lost.any():  # apply_encoder_restore, where the SWA state was lost
        prefix, replay = q.cached[r], q.replay[r]
        start = prefix - replay
        q_start, swa_start, restored = (np.where(lost, start, q_start), np.where(lost, start, swa_start),
                                        np.where(lost, replay, restored))
        if ratio:
            kv_start = np.where(lost, prefix - (prefix - prefix // ratio * ratio), kv_start)
    if cut:  # apply_decoder_replay, on the extend-like requests
        ext = q.extend[r]
        tail = q.tail[r]
        q_start, swa_start, restored = (np.where(ext, tail, q_start), np.where(ext, tail, swa_start),
                                        np.where(ext, q.tail_restored[r], restored))
    if q_start is c.q_start and kv_start is c.kv_start and restored is c.restored:
        return c
    return c.replace(q_start=q_start, swa_start=swa_start, kv_start=kv_start, restored=restored)


def changed_rows(before: RowTable, after: RowTable) -> int:
    """How many rows the policies changed (what the replay pass reports as its edits)."""
    if before.cols is after.cols:
        return 0
    a, b = before.cols, after.cols
    return int(((a.q_start != b.q_start) | (a.swa_start != b.swa_start) | (a.kv_start != b.kv_start)
                | (a.restored != b.restored)).sum())
