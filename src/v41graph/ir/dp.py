"""DP attention: which requests each DP rank serves, and which rank is costed (the busiest).

Under attention data parallelism (SGLang ``--attn-dp-size``) each DP rank runs attention, KV and
mHC over its own requests, and every rank waits for the others at the MoE collectives, so a step
takes as long as its busiest rank. The rule here, stated once:

* **the unit dealt is a sequence** (``ir/sequences.py``): the chunks of one prompt share one KV
  cache and so one rank; ``copies`` identical sequences are that many units;
* **largest first**: sequences are put in a canonical order — most attention work per copy first
  (Σ over its requests of tokens × context, ``new × end``), then most tokens, then their content —
  so the same multiset of requests deals the same way in whatever order the plan lists them;
* **round-robin**, as SGLang's data-parallel controller deals requests (``--load-balance-method
  round_robin``), one copy at a time in that order: a unit of ``c`` copies starting at running
  offset ``o`` puts ⌈(o + c − j)/dp⌉ − ⌈(o − j)/dp⌉ copies on rank ``j``.

Rank 0 is then the busiest by attention work — not by assumption but by construction: it takes
positions 0, dp, 2·dp, … of a non-increasing sequence, each at least the item rank ``j`` takes
at ``k·dp + j``, and never fewer of them. The per-GPU cost is rank 0's: its attention, KV and mHC
work over its own rows; the routed experts see every rank's tokens (lowering hands them the global
rows). Image requests keep their vision work whole. Lengths that are symbols cannot be ordered:
such a plan deals in its own order, which for the usual closed form (one request of ``B`` copies)
is the same thing.

>>> from v41graph.ir.plan import Plan, Request
>>> rank_copies(Plan([Request.decode(8192, copies=64)], dp=8))
(8,)
>>> rank_copies(Plan([Request.prefill(100), Request.prefill(8000)], dp=2))  # the 8,000 is the busiest
(0, 1)
>>> rank_shares(Plan([Request.prefill(100), Request.prefill(200), Request.prefill(300)], dp=2))
((1, 0, 1), (0, 1, 0))
"""

from __future__ import annotations

from dataclasses import replace

from ..algebra import Value, ceildiv, is_symbolic
from .ledger import Row
from .plan import Plan


def deal_order(plan: Plan) -> tuple[int, ...]:
    """The plan's sequences (``plan.sequences()`` positions) in the order they are dealt."""
    spans = plan.sequences()
    reqs = plan.requests
    keys = []
    for s in spans:
        members = [reqs[i] for i in s.requests]
        work = sum(r.new * r.end for r in members)
        tokens = sum(r.new for r in members)
        if is_symbolic(work, tokens):
            return tuple(range(len(spans)))  # symbols do not order: the plan's own order
        content = tuple(sorted((r.kind, r.cached, r.new, r.swa_cached, r.images, r.image_size or (0, 0),
                                r.verify_len or 0) for r in members))
        keys.append((-work, -tokens, content))
    return tuple(sorted(range(len(spans)), key=lambda k: keys[k]))


def rank_shares(plan: Plan) -> tuple[tuple[Value, ...], ...]:
    """Copies of each request (plan order) on each DP rank: ``dp`` tuples, rank 0 the busiest."""
    spans = plan.sequences()
    shares: list[list[Value]] = [[0] * len(plan.requests) for _ in range(plan.dp)]
    offset: Value = 0
    for k in deal_order(plan):
        c = spans[k].copies
        for j, share in enumerate(shares):
            n = ceildiv(offset + c - j, plan.dp) - ceildiv(offset - j, plan.dp)
            for i in spans[k].requests:
                share[i] = n
        offset = offset + c
    return tuple(tuple(s) for s in shares)


def rank_copies(plan: Plan) -> tuple[Value, ...]:
    """Copies of each request on the costed DP rank (rank 0 of :func:`rank_shares`, the busiest)."""
    if plan.dp == 1:
        return tuple(r.copies for r in plan.requests)
    return rank_shares(plan)[0]


def rank_tokens(plan: Plan, share: tuple[Value, ...]) -> Value:
    """Query tokens of a rank holding ``share`` copies of each request."""
    return sum(r.new * c for r, c in zip(plan.requests, share))


def rank_load(plan: Plan) -> tuple[dict[str, Value], ...]:
    """Each DP rank's requests, query tokens and attention work (Σ tokens × context), for reports."""
    return tuple({"requests": sum(share), "tokens": rank_tokens(plan, share),
                  "attention_work": sum(r.new * r.end * c for r, c in zip(plan.requests, share))}
                 for share in rank_shares(plan))


def rank_rows(plan: Plan, rows: tuple[Row, ...]) -> tuple[Row, ...]:
    """``rows`` as the costed DP rank holds them (the same tuple when dp = 1)."""
    if plan.dp == 1:
        return rows
    share = rank_copies(plan)
    return tuple(replace(r, copies=share[r.request]) for r in rows if share[r.request] != 0)
