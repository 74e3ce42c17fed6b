"""The cost of one engine step, from the compiled graph, cached by the step's shape.

A serving run takes hundreds of thousands of steps but few distinct **shapes**. A shape is the
step's prefill pieces (prompt, start, length, hit) plus its decode batch (requests, context).
Decode contexts are bucketed up to the page (256 tokens: the mean context of the batch, rounded
up), batch sizes up to the next value of ``BATCH_BUCKETS``, so a shape is compiled and scheduled
once (``passes.compile``: SOL, or OP/hybrid with a ``cost`` mode) and looked up afterwards.
Rounding up makes a step cost at least what its exact shape costs; ``bucket=False`` costs every shape exactly.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> c = StepCoster(load_model(), load_hardware("h200_sxm"), tp=8, ep=8)
>>> c.decode_key(5, 4100 * 5)             # 5 requests at 4,100 tokens: costed as 6 at 4,352
(6, 4352)
>>> t = c.forward_s((), (4, 4352))
>>> t > 0 and c.forward_s((), (4, 4352)) == t and c.compiled == 1
True
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace

from ...algebra import ceildiv
from ...errors import CostError
from ...ir.plan import Plan, Request
from ...ir.routing import UNIFORM, Routing
from ...model.config import ModelSpec
from ...model.paging import PAGE_TOKENS
from ...passes import compile

#: decode batch sizes a batch is rounded up to (SGLang's max_running_requests default is 256)
BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 80, 96, 128, 160, 192, 224, 256, 320, 384,
                 448, 512, 640, 768, 896, 1024)


@dataclass(frozen=True)
class Piece:
    """One request's prefill work in a step: tokens [start, start + length) of ``prompt``;
    ``hit`` > 0 on its first piece after a prefix hit of ``hit`` tokens (``swa_cached`` says
    whether the hit's SWA state survived)."""

    prompt: int
    start: int
    length: int
    hit: int = 0
    swa_cached: bool = True

    def request(self, seq: int) -> Request:
        if self.hit:
            if self.start != self.hit:
                raise CostError(f"step piece: a prefix hit of {self.hit} must start its first piece there, "
                                f"got start {self.start}")
            # an extend even when more chunks follow: it carries the SWA hit state, so a lost SWA is
            # replayed in this first piece (a chunk cannot say so); it costs one extra logits row
            return Request.extend(self.hit, self.length, self.swa_cached, seq=seq)
        if self.start == 0 and self.length == self.prompt:
            return Request.prefill(self.prompt, seq=seq)
        return Request.chunk(self.prompt, self.start, self.length, seq=seq)


def tier_counts(answers: dict[str, int]) -> dict[str, dict]:
    """A step coster's answers per tier, counted per step, and each tier's share of the steps
    (``answers_by_tier``, ``steps_share_by_tier``: the FPM and runtime costers' basis records).

    >>> tier_counts({"measured": 3, "extrapolated": 1})["steps_share_by_tier"]
    {'extrapolated': 0.25, 'measured': 0.75}
    """
    total = sum(answers.values())
    return {"answers_by_tier": dict(sorted(answers.items())),
            "steps_share_by_tier": {k: v / total for k, v in sorted(answers.items())} if total else {}}


def _up(n: int, step: int) -> int:
    return ceildiv(n, step) * step


class StepCoster:
    """Compiles and schedules each distinct step shape once; ``compiled`` counts them."""

    def __init__(self, model: ModelSpec, hardware, *, tp: int = 1, ep: int = 1, dp: int = 1,
                 bucket: bool = True, cost=None, decoder_replay: str = "off", engram_residency: str = "hbm",
                 routing: Routing = UNIFORM, moe_a2a: str = "deepep"):
        self.model, self.hardware, self.bucket, self.cost = model, hardware, bucket, cost
        # every policy a step's cost depends on is fixed per coster, so the shape cache below is keyed fully;
        # the routing (expert loads, ir/routing.py) among them: a coster never mixes two routings' shapes
        self.policies = {"tp": tp, "ep": ep, "dp": dp, "decoder_replay": decoder_replay,
                         "engram_residency": engram_residency, "routing": routing, "moe_a2a": moe_a2a}
        Plan([Request.prefill(1)], **self.policies).check(model)  # a bad mapping fails here, once
        self._cache: dict = {}
        self.compiled = 0
        self.measured_s = self.node_s = 0.0  # Σ over compiled shapes: measured-or-interpolated and all node time

    def decode_key(self, batch: int, context_sum: int) -> tuple[int, int]:
        """(batch, context) a decode batch is costed at: rounded up unless ``bucket`` is off."""
        if batch == 0:
            return (0, 0)
        if not self.bucket:
            return (batch, ceildiv(context_sum, batch))
        i = bisect_left(BATCH_BUCKETS, batch)
        b = BATCH_BUCKETS[i] if i < len(BATCH_BUCKETS) else _up(batch, 128)
        return (b, _up(ceildiv(context_sum, batch), PAGE_TOKENS))

    def piece_key(self, piece: Piece) -> Piece:
        """A prefill piece as costed: hits and lengths rounded up to a page when bucketing."""
        if not self.bucket or piece.hit:
            return piece
        start, length = piece.start, _up(piece.length, PAGE_TOKENS)
        return Piece(max(piece.prompt, start + length), start, length)

    def forward_s(self, pieces: tuple[Piece, ...], decode: tuple[int, int], verify_len: int = 0) -> float:
        """Forward time of one step: ``pieces`` (already keyed) plus a decode batch (b, ctx); with
        ``verify_len`` the batch is DSpark verify requests of that many drafted tokens."""
        key = (tuple(sorted(pieces, key=lambda p: (p.prompt, p.start, p.length, p.hit, p.swa_cached))), decode,
               verify_len)
        if key not in self._cache:
            reqs = [p.request(i) for i, p in enumerate(key[0])]
            if decode[0] and verify_len:
                reqs.append(replace(Request.verify(decode[1], verify_len), copies=decode[0], seq=len(reqs)))
            elif decode[0]:
                reqs.append(Request.decode(decode[1], copies=decode[0], seq=len(reqs)))
            if not reqs:
                raise CostError("step: no prefill piece and no decode request")
            bounded = any(p.hit and not p.swa_cached for p in key[0])
            plan = Plan(reqs, encoder_restore="bounded" if bounded else "persisted",
                        dspark="on" if verify_len else "off", **self.policies)
            report = compile(self.model, plan, self.hardware, cost=self.cost).report("schedule")
            measured = node = 0.0
            if report.coverage:  # OP / hybrid: the node time a table measured or interpolated, per shape
                node = report.coverage["total"]["total_s"]
                measured = report.coverage["measured_or_interpolated"] * node
            self.adopt({key: (float(report.total_time_s), measured, node)})
        return self._cache[key][0]

    def entries(self) -> dict:
        """The compiled shapes: key → (step seconds, measured-or-interpolated node s, node s)."""
        return dict(self._cache)

    def adopt(self, entries: dict) -> None:
        """Take shapes a coster of the same model, hardware, cost mode and policies compiled (a Dask
        worker's, :mod:`.deploy_dask`): the key is the whole shape, so the value is the one this
        coster would compile; a shape already here is kept."""
        for key, value in entries.items():
            if key not in self._cache:
                self._cache[key] = value
                self.compiled += 1
                self.measured_s += value[1]
                self.node_s += value[2]
