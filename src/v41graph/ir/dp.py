"""DP attention: which requests one DP rank serves (SGLang ``--enable-dp-attention``).

Requests are dealt over the ``dp`` ranks one copy at a time, in order: a request of ``c``
identical copies starting at running offset ``o`` puts ⌈(o + c)/dp⌉ − ⌈o/dp⌉ of them on rank 0,
which therefore carries the most requests. The per-GPU cost is rank 0's: its attention, KV
and mHC work over its own rows; the routed experts see every rank's tokens (lowering hands them
the global rows). Image requests keep their vision work whole.

>>> from v41graph.ir.plan import Plan, Request
>>> rank_copies(Plan([Request.decode(8192, copies=64)], dp=8))
(8,)
>>> rank_copies(Plan([Request.prefill(100), Request.prefill(200), Request.prefill(300)], dp=2))
(1, 0, 1)
"""

from __future__ import annotations

from dataclasses import replace

from ..algebra import Value, ceildiv
from .ledger import Row
from .plan import Plan


def rank_copies(plan: Plan) -> tuple[Value, ...]:
    """Copies of each request on DP rank 0."""
    out, offset = [], 0
    for r in plan.requests:
        out.append(ceildiv(offset + r.copies, plan.dp) - ceildiv(offset, plan.dp))
        offset = offset + r.copies
    return tuple(out)


def rank_rows(plan: Plan, rows: tuple[Row, ...]) -> tuple[Row, ...]:
    """``rows`` as DP rank 0 holds them (the same tuple when dp = 1)."""
    if plan.dp == 1:
        return rows
    share = rank_copies(plan)
    return tuple(replace(r, copies=share[r.request]) for r in rows if share[r.request] != 0)
