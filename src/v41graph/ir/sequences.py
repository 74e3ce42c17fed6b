"""Which requests of a plan are one sequence (one KV cache), and what each sequence holds.

A request is work in a forward; a *sequence* is what owns a cache. The chunks of one prompt are
several requests but one sequence: they fill one cache, so memory counts the sequence once, at
the furthest position any of its requests reaches. ``copies`` identical requests are that many
sequences. The rules, in order:

* a request with an explicit ``seq`` belongs to every other request with the same ``seq``;
* a chunk without one belongs to the other chunks of the same prompt length (the common case:
  ``Request.chunk(1000, s, 100)`` for s in 0, 100, …, 900 is one 1,000-token prompt);
* any other request is its own sequence.

Requests of one sequence must agree on ``copies`` and must not process the same position twice
(two prompts of one length chunked in one plan need their own ``seq``), else :class:`PlanError`.

>>> from v41graph.ir.plan import Request
>>> sequence_ids([Request.chunk(1000, 0, 500), Request.decode(64), Request.chunk(1000, 500, 500)])
(0, 1, 0)
>>> sequence_ids([Request.chunk(1000, 0, 500), Request.chunk(1000, 0, 500)])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
v41graph.errors.PlanError: request seq: requests 0 and 1 both process positions [0, 500) of sequence ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Sequence

from ..algebra import Value, is_symbolic, smax
from ..errors import PlanError


def _key(index: int, request: Any) -> Hashable:
    if request.seq is not None:
        return ("seq", request.seq)
    if request.kind == "chunk":
        return ("prompt", request.prompt)
    return ("request", index)


def _numeric(*values: Value) -> bool:
    return not any(is_symbolic(v) and not v.is_number for v in values)


def sequence_ids(requests: Sequence[Any]) -> tuple[int, ...]:
    """The sequence number of each request (0, 1, … in order of first appearance), validated."""
    numbers: dict[Hashable, int] = {}
    ids = tuple(numbers.setdefault(_key(i, r), len(numbers)) for i, r in enumerate(requests))
    members: dict[int, list[int]] = {}
    for i, s in enumerate(ids):
        members.setdefault(s, []).append(i)
    for s, idx in members.items():
        _check(_key(idx[0], requests[idx[0]]), [(i, requests[i]) for i in idx])
    return ids


def _check(key: Hashable, members: list[tuple[int, Any]]) -> None:
    (first, r0), rest = members[0], members[1:]
    for i, r in rest:
        if r.copies != r0.copies:
            raise PlanError(f"request seq: requests {first} and {i} of sequence {key} have copies {r0.copies} "
                            f"and {r.copies}; one sequence is one cache, its requests share its copies")
    spans = sorted((r.cached, r.end, i) for i, r in members if _numeric(r.cached, r.end))
    for (a0, a1, i), (b0, b1, j) in zip(spans, spans[1:]):
        if b0 < a1:
            lo, hi = b0, min(a1, b1)
            raise PlanError(f"request seq: requests {min(i, j)} and {max(i, j)} both process positions "
                            f"[{lo}, {hi}) of sequence {key}; give each prompt its own seq=")


@dataclass(frozen=True)
class SequenceSpan:
    """One sequence of a plan: its requests, the position its cache reaches, its copies."""

    requests: tuple[int, ...]
    end: Value  # tokens held after this plan: the furthest end of its requests
    copies: Value


def sequences(requests: Sequence[Any], ids: Sequence[int]) -> tuple[SequenceSpan, ...]:
    """The plan's sequences, in order of first appearance."""
    spans: dict[int, list[int]] = {}
    for i, s in enumerate(ids):
        spans.setdefault(s, []).append(i)
    return tuple(SequenceSpan(tuple(idx), smax(*(requests[i].end for i in idx)), requests[idx[0]].copies)
                 for _, idx in sorted(spans.items()))
