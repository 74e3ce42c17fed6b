"""Interface ②: the execution plan — a batch of requests plus explicit policies (the data; the
checks of lengths, policies and a plan against a model are ``ir/plan_checks.py``).

Every policy is part of the plan's identity (``Plan.identity()``): two plans that differ in
replay, restore, fusion, Engram residency, DSpark mode or parallel mapping never share
measured data. Lengths may be ints or sympy expressions (``v41graph.symbols``).

>>> from v41graph.ir.plan import Plan, Request
>>> p = Plan([Request.prefill(8192), Request.decode(4096)], decoder_replay="bounded")
>>> [r.kind for r in p.requests], p.decoder_replay, p.late_layer_start
(['prefill', 'decode'], 'bounded', None)
>>> Request.chunk(1000, 900, 200)
Traceback (most recent call last):
...
v41graph.errors.PlanError: request chunk: start + length = 1100 exceeds prompt 1000
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

from ..algebra import as_int, is_symbolic
from ..errors import PlanError
from ..model.config import ModelSpec
from ..workload.tokens import TokenContent
from .plan_checks import (  # noqa: F401  (the policy values, re-exported: the CLI and the sweep offer them)
    CHUNK_TAILS, DECODER_REPLAY, DSPARK_MODES, ENCODER_RESTORE, ENGRAM_RESIDENCY, FUSION_PROFILES, REPLAY_CUTS,
    Length, _images, _length, check_against_model, check_policies)
from .routing import UNIFORM, Routing
from .sequences import SequenceSpan, sequence_ids, sequences

@dataclass(frozen=True)
class Request:
    """One request's work in this forward pass.

    ``cached`` tokens already have global KV; ``new`` tokens are processed now. ``swa_cached``
    says whether the SWA state of the cached prefix survived. ``prompt`` is the whole prompt for a
    chunk (``is_last_chunk`` when the chunk reaches its end).
    """

    kind: str  # prefill | extend | chunk | decode | verify
    cached: Length
    new: Length
    swa_cached: bool = True
    prompt: Length | None = None
    images: int = 0
    image_size: tuple[int, int] | None = None
    verify_len: Length | None = None
    copies: Length = 1  # identical requests in the batch (may be a symbol: a decode batch of B)
    seq: Hashable | None = None  # the sequence (one KV cache) it belongs to; see ir/sequences.py
    tokens: TokenContent | None = None  # the ids at positions 0..end (workload/tokens.py), when content matters

    @staticmethod
    def prefill(prompt: Length, *, images: int = 0, image_size: tuple[int, int] | None = None,
                seq: Hashable | None = None) -> "Request":
        """An uncached prompt of ``prompt`` tokens."""
        if image_size is not None:
            size = tuple(as_int(x) for x in image_size)
            if len(size) != 2 or any(x is None or x < 1 for x in size):
                raise PlanError(f"request prefill.image_size: expected (width, height) in pixels, got {image_size!r}")
            image_size = size
        prompt = _length("request prefill.prompt", prompt, minimum=1)
        return Request("prefill", 0, prompt, prompt=prompt, images=_images(images), image_size=image_size,
                       seq=seq)

    @staticmethod
    def extend(cached_prefix: Length, new_tokens: Length, swa_cached: bool = True, *,
               seq: Hashable | None = None) -> "Request":
        """``new_tokens`` after a prefix-cache hit of ``cached_prefix`` tokens."""
        p = _length("request extend.cached_prefix", cached_prefix, minimum=1)
        s = _length("request extend.new_tokens", new_tokens, minimum=1)
        return Request("extend", p, s, swa_cached=bool(swa_cached), prompt=p + s, seq=seq)

    @staticmethod
    def chunk(prompt: Length, start: Length, length: Length, *, seq: Hashable | None = None) -> "Request":
        """Chunk ``[start, start + length)`` of a ``prompt``-token prompt (chunked prefill).

        Chunks of one prompt are one sequence (one cache): without ``seq``, the chunks of one
        prompt length in a plan are taken to be one prompt's (``ir/sequences.py``)."""
        prompt = _length("request chunk.prompt", prompt, minimum=1)
        start = _length("request chunk.start", start, minimum=0)
        length = _length("request chunk.length", length, minimum=1)
        end = start + length
        if not is_symbolic(end) and not is_symbolic(prompt) and end > prompt:
            raise PlanError(f"request chunk: start + length = {end} exceeds prompt {prompt}")
        return Request("chunk", start, length, prompt=prompt, seq=seq)

    @staticmethod
    def decode(context: Length, *, copies: Length = 1, seq: Hashable | None = None) -> "Request":
        """One decode token at a context of ``context`` cached tokens (``copies`` identical requests).

        >>> from v41graph.symbols import B, L
        >>> Request.decode(L, copies=B).copies
        B
        """
        return Request("decode", _length("request decode.context", context, minimum=1), 1,
                       copies=_length("request decode.copies", copies, minimum=1), seq=seq)

    @staticmethod
    def verify(context: Length, verify_len: Length) -> "Request":
        """DSpark verification of ``verify_len`` drafted tokens at ``context``."""
        c = _length("request verify.context", context, minimum=1)
        v = _length("request verify.verify_len", verify_len, minimum=1)
        return Request("verify", c, v, verify_len=v)

    @property
    def end(self) -> Length:
        """Position one past the last token processed (= cached + new)."""
        return self.cached + self.new

    @property
    def is_extend(self) -> bool:
        """Prefill-like work (extend without speculation): where bounded replay applies."""
        return self.kind in ("prefill", "extend", "chunk")

    @property
    def is_last_chunk(self) -> bool:
        if self.kind != "chunk":
            return True
        diff = (self.prompt - self.end).simplify() if is_symbolic(self.end) else self.prompt - self.end
        return diff == 0

    @property
    def emits_logits(self) -> Length:
        """Positions whose logits the head computes: last prompt token, every decode/verify token."""
        if self.kind == "chunk":
            return 1 if self.is_last_chunk else 0
        if self.kind in ("prefill", "extend"):
            return self.copies
        return self.new * self.copies


@dataclass(frozen=True)
class Plan:
    """A batch of requests and the policies that say how it executes."""

    requests: tuple[Request, ...]
    decoder_replay: str = "off"
    replay_cut: str = "sglang"
    late_layer_start: int | None = None  # None: the cut's default (max KV source + 1, or the paper's L/2)
    replay_window: int | None = None  # None: the model's sliding window (128)
    chunk_tail: str = "every"
    encoder_restore: str = "persisted"
    fusion: str | None = None  # None: the model family's default (fusion_for)
    engram_residency: str = "hbm"
    dspark: str = "off"
    tp: int = 1
    ep: int = 1
    dp: int = 1
    routing: Routing = UNIFORM  # the expert-load model (ir/routing.py)
    ep_redundant: int = 0  # redundant expert slots, placed by EPLB (costs/expert_loads.py)
    shared_overlap: str = "engine"  # the shared expert beside the routed ones: engine (by phase), on, off
    moe_a2a: str = "deepep"  # the MoE all-to-all backend under EP: deepep (dispatch/combine) or none (all-reduce)
    label: str = field(default="", compare=False)

    def __init__(self, requests, **policies):
        reqs = tuple(requests)
        if not reqs:
            raise PlanError("plan requests: a plan needs at least one request")
        for r in reqs:
            if not isinstance(r, Request):
                raise PlanError(f"plan requests: expected Request, got {r!r:.80}")
        object.__setattr__(self, "requests", reqs)
        known = {f for f in self.__dataclass_fields__ if f != "requests"}
        for key, value in policies.items():
            if key not in known:
                raise PlanError(f"plan: unknown policy {key!r} (known: {', '.join(sorted(known))})")
        for name in known:
            object.__setattr__(self, name, policies.get(name, self.__dataclass_fields__[name].default))
        check_policies(self)
        object.__setattr__(self, "_sequence_ids", sequence_ids(reqs))
        for r in reqs:
            if not r.swa_cached and self.encoder_restore == "persisted":
                raise PlanError("plan encoder_restore: 'persisted' cannot serve a request whose SWA state was "
                                "lost (swa_cached=False); use encoder_restore='bounded'")

    def sequence_of(self, request: int) -> int:
        """The sequence (one KV cache) request ``request`` belongs to (``ir/sequences.py``)."""
        return self._sequence_ids[request]

    def sequences(self) -> tuple[SequenceSpan, ...]:
        """The plan's sequences: chunks of one prompt are one; ``copies`` stay a multiplicity."""
        return sequences(self.requests, self._sequence_ids)

    @property
    def policies(self) -> tuple:
        """Every field but the requests and the label, in field order: all a plan decides besides
        its requests (a memo key's part: a field added to ``Plan`` joins every such key by itself)."""
        return tuple(getattr(self, f) for f in self.__dataclass_fields__ if f not in ("requests", "label"))

    def with_policies(self, **policies) -> "Plan":
        current = {f: getattr(self, f) for f in self.__dataclass_fields__ if f != "requests"}
        current.update(policies)
        return Plan(self.requests, **current)

    def with_requests(self, requests) -> "Plan":
        """The same policies over other requests."""
        current = {f: getattr(self, f) for f in self.__dataclass_fields__ if f != "requests"}
        return Plan(requests, **current)

    def identity(self) -> tuple[tuple[str, Any], ...]:
        """The policies that partition measured data (SPEC §6)."""
        content = tuple(r.tokens.identity() if r.tokens else None for r in self.requests)  # the text, when given
        return tuple((f, getattr(self, f)) for f in self.__dataclass_fields__ if f not in ("requests", "label")) + (
            (("tokens", content),) if any(content) else ())

    def check(self, model: ModelSpec) -> "Plan":
        """Validate the plan against a model (parallel mapping, replay start); returns self."""
        check_against_model(self, model)
        return self

    def fusion_for(self, model: ModelSpec) -> str:
        """The fusion profile on ``model``: the plan's, or the family default — single-pass
        Mega-mHC for V4.1 (lagged pre-mix), two-pass for V4 (coefficients in the same pass).

        >>> from v41graph import load_model
        >>> Plan([Request.prefill(8)]).fusion_for(load_model("deepseek-v4-flash"))
        'two-pass'
        """
        if self.fusion is not None:
            return self.fusion
        return "single-pass" if model.lagged_mhc else "two-pass"

    def late_start(self, model: ModelSpec) -> int:
        """First layer that runs only the replay tail: SGLang max(kv source)+1 = 21; paper L/2 = 20."""
        if self.late_layer_start is not None:
            return self.late_layer_start
        if self.replay_cut == "paper":
            return model.num_layers // 2
        return max(model.kv_source_ids) + 1

    def window(self, model: ModelSpec) -> int:
        return self.replay_window if self.replay_window is not None else model.window


__all__ = ["Plan", "Request"]
