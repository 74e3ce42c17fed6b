"""A serving simulation: arrivals, a continuous-batching scheduler, steps costed by the graph.

**Why a plain event loop (no simpy).** One engine runs one step at a time, and every event (an
arrival, a step's end) is ordered by time on one clock. The scheduler is step-synchronous: at each
step's end it admits what has arrived and builds the next batch. A loop over steps, with
arrivals drawn by numpy, says that directly. A discrete-event library would add processes
and a dependency without modelling anything more.

**Scheduler** (SGLang's defaults, reference/kv-pool-facts.md §3): FCFS; a prefill step takes
waiting requests in order, each up to ``chunked_prefill_size`` tokens, until ``max_prefill_tokens``
are used or ``max_running_requests`` are running; a prompt longer than a chunk continues in the
next prefill step. Prefill steps take priority (SGLang ``get_next_batch_to_run``); with
``mixed=True`` the running decode requests join the prefill step (``--enable-mixed-chunk``). When
no prefill is possible, every running request decodes one token. A prefix hit in a storage tier
other than HBM fetches its pages while its first forward runs (costs/requests/restore.py). KV pool
capacity, when given (``kv_pages``), is the global-KV pool in 256-token FULL pages: a request
is admitted only when the pages for its prompt and output fit (reserved up front, released when it
finishes; FCFS, so the head of the queue blocks the rest). The SWA pool is not bounded.

**Emission** (``overlap``, SGLang's default; costs/requests/lifecycle.py :func:`emission_times`). SGLang's
``event_loop_overlap`` processes a batch's results one batch behind: it launches step k + 1, then
turns step k's outputs into tokens for the client. So every token step k produces — a prefill's
first token, a decode step's next, a DSpark burst — is emitted when step k + 1 ends if k + 1 starts
as k ends, and at k's end when the engine goes idle after k. The steps themselves, admission, page
release and finishing follow production (the step that made the token), so the step log is the
same with or without overlap; only the token times move. ``overlap=False``
(``--disable-overlap-schedule``) emits at the producing step's end, as the simulation did before.
SGLang learns that a request finished only when it processes that step's result, so under overlap
the request rides one more decode step (``process_batch_result_decode`` frees "the one extra delayed
token"): here too it stays in the running batch for one more step — costed, holding its slot and
its pages, emitting nothing — and leaves after it; its last token goes out when that step ends.

*Disaggregated instances.* A prefill instance (``prefill_only``) hands a request over when its first
token is emitted — SGLang starts the KV send while processing the prefill's result, one step late
under overlap — so the handoff carries the late emission. A decode instance (``decode_only``) takes
the request with that first token already emitted: the client saw it at the handoff (the prefill
instance's emission plus the transfer), and the instance's own tokens follow the rule above.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.analysis.serving.step_cost import StepCoster
>>> coster = StepCoster(load_model(), load_hardware("h200_sxm"), tp=8, ep=8)
>>> run = simulate([Arrival(0.0, 4096, 3)], coster)
>>> [s.kind for s in run.log], len(run.records[0].token_times)
(['prefill', 'decode', 'decode', 'decode'], 3)
>>> run.records[0].token_times == (run.log[1].end, run.log[2].end, run.log[3].end)  # one step late
True
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ...algebra import ceildiv
from ...costs.requests.lifecycle import RequestRecord, Step, emission_times
from ...costs.requests.restore import restore_timeline
from ...errors import CostError
from ...model.paging import CHUNKED_PREFILL_SIZE, PAGE_TOKENS
from ...workload.arrivals import Arrival, poisson_arrivals  # noqa: F401  (re-exported for callers)
from .step_cost import Piece, StepCoster


@dataclass(frozen=True)
class Scheduler:
    """SGLang's defaults: max_prefill_tokens 16384, max_running_requests 256 (V4 family);
    chunked_prefill_size 8192 (its heuristic on 80–160 GB GPUs; UNVERIFIED); the overlap scheduler
    on (``overlap``: tokens emitted one step late; False: ``--disable-overlap-schedule``)."""

    max_prefill_tokens: int = 16384
    chunked_prefill_size: int = CHUNKED_PREFILL_SIZE
    max_running_requests: int = 256
    mixed: bool = False
    kv_pages: int | None = None  # global-KV pool in FULL pages; None: not bounded
    overlap: bool = True  # SGLang's overlap scheduler: a step's tokens go out when the next step ends


@dataclass
class _Live:
    arrival: Arrival
    rid: int
    done: int = 0          # prompt tokens processed (the hit counts as done)
    fetched: bool = False
    steps: tuple = ()
    tokens: list | tuple = ()  # the step that produced each token (None: it came with the request);
    #                            a list once emitting: appending to a tuple is quadratic in the output
    lingering: bool = False  # its last token is made; under overlap it rides one more step (module doc)


@dataclass(frozen=True)
class Run:
    """A simulation's step log and per-request records (in arrival order)."""

    log: tuple[Step, ...]
    records: tuple[RequestRecord, ...]


def _fetch(coster: StepCoster, reqs: list[_Live]):
    """(pages' tokens, bandwidth, latency) of the prefix fetches this step starts; one link in turn."""
    tokens, seconds, latency = 0, 0.0, 0.0
    for r in reqs:
        a = r.arrival
        if a.hit and not r.fetched and a.tier != "hbm":
            tier = coster.hardware.tier(a.tier)
            pages_tokens = ceildiv(a.hit, PAGE_TOKENS) * PAGE_TOKENS
            tokens += pages_tokens
            seconds += pages_tokens / tier.bandwidth
            latency = max(latency, tier.latency_ns * 1e-9)
        r.fetched = True
    return tokens, (tokens / seconds if seconds else None), latency


def _pages(a: Arrival) -> int:
    """FULL pages a request holds at its end: prompt + output tokens."""
    return ceildiv(a.prompt + a.output, PAGE_TOKENS)


def _accepted(rng, acceptance) -> int:
    """Drafted positions kept in one verify step: position j survives only if every earlier one did."""
    k = 0
    for a in acceptance:
        if rng.random() >= a:
            break
        k += 1
    return k


def _times(r: _Live, emit: list[float]) -> tuple[float, ...]:
    """``r``'s token times: each at its producing step's emission; one it came with, at its arrival."""
    if r.tokens[0] is None:  # a decode instance's request: its first token was emitted upstream
        return (r.arrival.t, *map(emit.__getitem__, r.tokens[1:]))
    return tuple(map(emit.__getitem__, r.tokens))


def _check_pages(arrivals, scheduler: Scheduler) -> None:
    """Every request must fit the KV pool alone, else it would wait for ever."""
    for a in arrivals if scheduler.kv_pages is not None else ():
        if _pages(a) > scheduler.kv_pages:
            raise CostError(f"scheduler kv_pages: a request of {a.prompt} + {a.output} tokens needs {_pages(a)} "
                            f"pages, more than the pool's {scheduler.kv_pages}")


class _Engine:
    """What one engine holds between steps: its queues, its step log, the running batch's context
    (Σ prompt + tokens so far: a decode batch's context, kept as it moves) and the KV pages reserved."""

    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler
        self.waiting: deque[_Live] = deque()
        self.running: list[_Live] = []
        self.finished: list[_Live] = []
        self.log: list[Step] = []
        self.context = 0
        self.used_pages = 0

    def admit(self, pending: deque, t: float, rid_of: dict, decode_only: bool) -> None:
        """Take the arrivals up to ``t``: a decode instance's straight into the running batch."""
        while pending and pending[0].t <= t:
            a = pending.popleft()
            live = _Live(a, rid_of[id(a)], done=a.hit)
            if decode_only:
                live.done, live.tokens = a.prompt, [None]
                self.running.append(live)
                self.context += a.prompt + 1
            else:
                self.waiting.append(live)

    def prefill_batch(self, coster: StepCoster) -> tuple[list, list]:
        """The next prefill step's pieces and (request, tokens) chunks: FCFS within the token budget and the
        free slots; a new request first reserves its pages, and one that does not fit blocks the queue."""
        scheduler = self.scheduler
        pieces, chunked, budget = [], [], scheduler.max_prefill_tokens
        slots = scheduler.max_running_requests - len(self.running)
        for r in self.waiting:
            if budget == 0 or slots - len(chunked) <= 0:
                break
            if not r.steps and scheduler.kv_pages is not None:  # a new request reserves its pages
                if self.used_pages + _pages(r.arrival) > scheduler.kv_pages:
                    break
                self.used_pages += _pages(r.arrival)
            n = min(r.arrival.prompt - r.done, scheduler.chunked_prefill_size, budget)
            hit = r.arrival.hit if r.done == r.arrival.hit and r.arrival.hit else 0
            pieces.append(coster.piece_key(Piece(r.arrival.prompt, r.done, n, hit, r.arrival.swa_cached)))
            chunked.append((r, n))
            budget -= n
        return pieces, chunked

    def run_step(self, coster: StepCoster, t: float, pieces, chunked, decoding, verify_len: int) -> float:
        """Log one step from ``t`` (the prefix fetches it starts overlap its forward); returns its end."""
        dkey = coster.decode_key(len(decoding), self.context if decoding else 0)
        forward = coster.forward_s(tuple(pieces), dkey, verify_len if decoding else 0)
        tokens, bw, latency = _fetch(coster, [r for r, _ in chunked])
        done_s = forward
        if tokens:
            done_s = restore_timeline(coster.model, prefix=tokens, fetch_bandwidth=bw, latency_s=latency,
                                      forward_s=forward).done_s
        end = t + done_s
        kind = "mixed" if chunked and decoding else ("prefill" if chunked else "decode")
        self.log.append(Step(t, end, kind, done_s - forward))
        return end

    def prefilled(self, chunked, prefill_only: bool) -> None:
        """Advance the chunks the last step prefilled; a finished prompt has its first token and decodes from
        the next step (or, on a prefill instance, is handed over)."""
        step = len(self.log) - 1
        for r, n in chunked:
            r.done += n
            r.steps += (step,)
            if r.done == r.arrival.prompt:
                self.waiting.remove(r)
                r.tokens = [step]
                if prefill_only:  # handed over to a decode instance
                    self.finished.append(r)
                    self.used_pages -= _pages(r.arrival) if self.scheduler.kv_pages is not None else 0
                else:
                    r.lingering = r.arrival.output == 1  # done already: under overlap one more step, else out
                    self.running.append(r)
                    self.context += r.arrival.prompt + 1

    def decode(self, decoding: list[_Live], dspark, rng) -> None:
        """The last step's tokens for the batch it decoded; a request that lingered through it leaves."""
        step, grown = len(self.log) - 1, 0  # grown: the context's growth, added once (the hot path)
        for r in decoding:
            tokens, output = r.tokens, r.arrival.output
            if r.lingering:  # the step after its last token (overlap): it leaves now
                self.leave(r)
                continue
            if dspark:
                n = min(1 + _accepted(rng, dspark), output - len(tokens))
                tokens.extend((step,) * n)
                grown += n
            elif len(tokens) < output:  # one token (the hot path: no list of one to build)
                tokens.append(step)
                grown += 1
            r.lingering = len(tokens) == output
        self.context += grown

    def leave(self, r: _Live) -> None:
        """``r`` is done: out of the batch, its context and pages released."""
        self.running.remove(r)
        self.context -= r.arrival.prompt + len(r.tokens)
        self.finished.append(r)
        self.used_pages -= _pages(r.arrival) if self.scheduler.kv_pages is not None else 0


def simulate(arrivals, coster: StepCoster, scheduler: Scheduler = Scheduler(), *,
             prefill_only: bool = False, decode_only: bool = False, dspark=None, seed: int = 0) -> Run:
    """Run every arrival to completion. ``prefill_only``: a request leaves after its first token
    (a prefill instance); ``decode_only``: it arrives with its prompt cached and one token emitted
    (a decode instance). ``dspark`` (per-position acceptance, one per drafted token): each decode
    step verifies that many drafted tokens and emits 1 + the accepted ones at once (a burst),
    drawn from numpy's generator seeded with ``seed``. Token times follow ``scheduler.overlap`` (see
    the module doc: with overlap, one step late)."""
    rng = np.random.default_rng(seed)
    verify_len = len(dspark) if dspark else 0
    _check_pages(arrivals, scheduler)
    pending = deque(sorted(arrivals, key=lambda a: a.t))
    rid_of = {id(a): i for i, a in enumerate(pending)}
    engine = _Engine(scheduler)
    t = 0.0
    while pending or engine.waiting or engine.running:
        engine.admit(pending, t, rid_of, decode_only)
        if not engine.waiting and not engine.running:
            t = pending[0].t
            continue
        pieces, chunked = engine.prefill_batch(coster)
        # a snapshot: the steps below add the requests this step's prefill finished (they decode from the
        # next step on) and remove the ones that finish, neither of which may change this step's batch
        decoding = list(engine.running) if (not chunked or scheduler.mixed) else []
        end = engine.run_step(coster, t, pieces, chunked, decoding, verify_len)
        engine.prefilled(chunked, prefill_only)
        engine.decode(decoding, dspark, rng)
        for r in [r for r in engine.running if r.lingering] if not scheduler.overlap else ():  # no overlap: out at once
            engine.leave(r)
        t = end
    finished, log = engine.finished, engine.log
    finished.sort(key=lambda r: r.rid)
    emit = emission_times(log, scheduler.overlap)
    return Run(tuple(log), tuple(RequestRecord(r.rid, r.arrival.t, r.steps, _times(r, emit)) for r in finished))
