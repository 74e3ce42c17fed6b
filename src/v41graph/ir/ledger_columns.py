"""The ledger of a many-request plan in columns: base rows, DP rank 0's share and the replay
policies, one numpy step per layer class instead of one Row per request and layer.

The ledger's own functions do the work: :func:`~.ledger.base_row` runs once on columns (a Row
whose fields are arrays), and each policy's update of a request's row
(:func:`~.ledger.restore_update`, :func:`~.ledger.replay_update`) is taken once per request and
layer class, then set on every row of that class at once. Layers that agree (every non-owner
encoder layer, say) share one :class:`~.rows.RowColumns`, so a 40-layer plan of a thousand
requests builds a handful of columns, not 40,000 rows.

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

from types import SimpleNamespace

import numpy as np

from ..model.config import ModelSpec
from .ledger import POLICY_FIELDS, base_row, past_cut, replay_update, restore_update
from .plan import Plan
from .rows import FIELDS, RowColumns, RowTable


def base_tables(model: ModelSpec, plan: Plan) -> dict[int, RowTable]:
    """``base_rows`` by layer, as tables: :func:`~.ledger.base_row` over the requests' columns."""
    reqs = plan.requests
    n = len(reqs)
    columns = SimpleNamespace(cached=np.array([r.cached for r in reqs], dtype=np.int64),
                              end=np.array([r.end for r in reqs], dtype=np.int64),
                              copies=np.array([r.copies for r in reqs], dtype=np.int64))
    seq = np.array([plan.sequence_of(i) for i in range(n)], dtype=np.int64)
    kinds: dict[bool, RowColumns] = {}  # owners' rows and everyone else's: one set of columns each
    for layer in model.layers:
        if layer.owns_kv not in kinds:
            row = base_row(model, columns, np.arange(n, dtype=np.int64), layer, seq)
            kinds[layer.owns_kv] = RowColumns(**{f: np.broadcast_to(getattr(row, f), n) for f in FIELDS})
    return {l.index: RowTable(l.index, kinds[l.owns_kv]) for l in model.layers}


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
    spec = model.layers[table.layer]
    # what the updates read of the layer: an owner's compress ratio (restore), being past the cut (replay)
    ratio = spec.compress_ratio if spec.owns_kv and spec.compress_ratio > 1 else 0
    key = (id(table.cols), ratio, past_cut(model, plan, table.layer))
    if key not in memo:
        memo[key] = (table.cols, _apply(model, plan, table.cols, spec))  # holds the input: its id stays unique
    cols = memo[key][1]
    return table if cols is table.cols else RowTable(table.layer, cols)


def _apply(model: ModelSpec, plan: Plan, c: RowColumns, layer) -> RowColumns:
    """Both policies' updates of each row's request (the decoder's after the restore's, as
    ``apply_policies`` applies them), set on the columns."""
    reqs = plan.requests
    updates = [{**restore_update(model, plan, reqs[i], layer), **replay_update(model, plan, reqs[i], layer.index)}
               for i in c.request.tolist()]
    if not any(updates):
        return c
    changes = {f: np.array([u.get(f, v) for u, v in zip(updates, getattr(c, f).tolist())], dtype=np.int64)
               for f in POLICY_FIELDS if any(f in u for u in updates)}
    return c.replace(**changes)


def changed_rows(before: RowTable, after: RowTable) -> int:
    """How many rows the policies changed (what the replay pass reports as its edits)."""
    if before.cols is after.cols:
        return 0
    changed = np.zeros(len(before.cols), dtype=bool)
    for f in POLICY_FIELDS:
        changed |= getattr(before.cols, f) != getattr(after.cols, f)
    return int(changed.sum())
