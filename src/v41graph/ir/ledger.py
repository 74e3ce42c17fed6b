"""Per-request, per-layer token ledgers (docs/architecture.md, decision 1).

A :class:`Row` says which query positions one request sends through one layer in this forward,
which SWA keys those queries may see, and which tokens feed the layer's compressor (owners
only). All work is computed from rows, never from a discount on attention.

:func:`base_rows` is the plan with every token through every layer; :func:`apply_encoder_restore`
and :func:`apply_decoder_replay` are the bounded-replay policies, applied per request. The
replay pass (``passes/replay.py``) calls the same two functions on the graph's rows, and
:func:`ledger` applies them directly, so both paths share one implementation.

>>> from v41graph import load_model
>>> from v41graph.ir.plan import Plan, Request
>>> from v41graph.symbols import N
>>> m = load_model()
>>> ledger(m, Plan([Request.prefill(N)], decoder_replay="bounded")).token_layers()
21*N + 19*Min(128, N)
>>> ledger(m, Plan([Request.prefill(1000), Request.decode(4096)], decoder_replay="bounded")).token_layers()
23472
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..algebra import Value, floordiv, select, smax, smin, ssum
from ..model.config import LayerSpec, ModelSpec
from ..model.vision import image_tokens as vision_tokens
from .plan import Plan, Request


@dataclass(frozen=True)
class Row:
    """One request through one layer: query positions ``[q_start, q_end)``.

    ``swa_start`` is the earliest SWA key the queries may see (0: the whole history; bounded
    replay truncates it to the replay start). ``kv_start..kv_end`` are the tokens whose KV the
    layer's compressor consumes (owner layers), ``cached`` the tokens with global KV before this
    forward. ``restored`` counts the replayed prefix tokens among the queries (they write SWA
    only).
    """

    request: int
    layer: int
    q_start: Value
    q_end: Value
    swa_start: Value
    kv_start: Value
    kv_end: Value
    cached: Value
    restored: Value = 0
    copies: Value = 1  # identical requests this row stands for
    seq: int | None = None  # the plan's sequence (one KV cache) the request belongs to

    @property
    def in_start(self) -> Value:
        """First position of the layer's input: an owner's attention sublayer normalises its input
        once for the queries and the compressor, so it runs over both token sets together (under
        the paper's cut, L20's queries are the tail while its compressor takes every token)."""
        same = (self.kv_end == self.kv_start) | (self.kv_start == self.q_start)  # | : also on columns
        # positions are never negative: where the compressor starts at 0, 0 is the minimum (kept
        # exact symbolically)
        return select(same, self.q_start, select(self.kv_start == 0, 0, smin(self.q_start, self.kv_start)))

    @property
    def in_tokens(self) -> Value:
        """Tokens of the layer's input (``in_start`` to the end): what the attention pre-norm counts."""
        return self.copies * (self.q_end - self.in_start)

    @property
    def tokens(self) -> Value:
        """Query tokens through this layer: what every token-wise op (GEMMs, MoE, mHC) scales with."""
        return self.copies * (self.q_end - self.q_start)

    @property
    def kv_tokens(self) -> Value:
        """Tokens whose KV this layer projects for its compressor (0 on non-owners)."""
        return self.copies * (self.kv_end - self.kv_start)

    def new_entries(self, ratio: int) -> Value:
        """Global entries written: groups completed by the new tokens, ⌊end/m⌋ − ⌊cached/m⌋."""
        return select(self.kv_end == self.kv_start, 0,
                      self.copies * (floordiv(self.kv_end, ratio) - floordiv(self.cached, ratio)))


def base_row(model: ModelSpec, request: Request, index: int, layer: LayerSpec, seq: int | None = None) -> Row:
    """Every new token through the layer; an owner's compressor sees exactly the new tokens."""
    owner = layer.owns_kv
    return Row(request=index, layer=layer.index, q_start=request.cached, q_end=request.end, swa_start=0,
               kv_start=request.cached if owner else 0, kv_end=request.end if owner else 0,
               cached=request.cached, copies=request.copies, seq=seq)


def base_rows(model: ModelSpec, plan: Plan) -> tuple[Row, ...]:
    """Rows of the plan with no replay policy applied, sorted by (layer, request)."""
    return tuple(base_row(model, r, i, l, plan.sequence_of(i)) for l in model.layers
                 for i, r in enumerate(plan.requests))


def replayed(model: ModelSpec, plan: Plan, request: Request) -> Value:
    """Prefix tokens encoder bounded replay processes again: min(P, W) when the SWA state was lost."""
    return 0 if request.swa_cached else smin(request.cached, plan.window(model))


def apply_encoder_restore(model: ModelSpec, plan: Plan, row: Row) -> Row:
    """Encoder bounded replay: a prefix hit whose SWA state was lost replays min(P, W) prefix tokens.

    (``Plan`` refuses a lost SWA state unless ``encoder_restore='bounded'``.) The replayed prefix
    tail [P − min(P, W), P) is processed together with the uncached suffix through every layer —
    encoder and decoder alike, so each layer's SWA ring is rebuilt and the suffix queries keep
    their window of history (the next decode step finds full rings). SWA visibility starts at the
    replay start, the notes' approximation. Replayed tokens read the cached global KV and write
    none: at an owner with m > 1 and P mod m ≠ 0 the group straddling the prefix/suffix boundary
    is completed by re-projecting its P mod m prefix tokens into compressor state (no entry is
    written for them); an m = 1 owner projects the suffix only.
    """
    update = restore_update(model, plan, plan.requests[row.request], model.layers[row.layer])
    return replace(row, **update) if update else row


#: the row fields the replay policies set
POLICY_FIELDS = ("q_start", "swa_start", "kv_start", "restored")


def restore_update(model: ModelSpec, plan: Plan, request: Request, layer: LayerSpec) -> dict[str, Value]:
    """The fields :func:`apply_encoder_restore` sets on ``request``'s row in ``layer`` (none if none)."""
    if request.swa_cached:
        return {}
    prefix = request.cached
    replay = replayed(model, plan, request)
    start = prefix - replay
    update = {"q_start": start, "swa_start": start, "restored": replay}
    if layer.owns_kv and layer.compress_ratio > 1:
        m = layer.compress_ratio
        update["kv_start"] = prefix - (prefix - floordiv(prefix, m) * m)
    return update


def tail_start(model: ModelSpec, plan: Plan, request: Request) -> Value:
    """First position a layer past the cut processes for an extend-like request.

    The last min(rows, W) of the rows the early layers process: the new tokens plus, under encoder
    restore, the replayed prefix tail (so the late layers' rings are full for the next decode).
    With ``chunk_tail='last'`` the final chunk takes the *prompt's* last min(prompt, W) positions,
    reaching back across chunks (their early-layer outputs come from the earlier chunks), and the
    other chunks send none.
    """
    window = plan.window(model)
    if request.kind == "chunk" and plan.chunk_tail == "last":
        return request.prompt - smin(request.prompt, window) if request.is_last_chunk else request.end
    rows = request.new if request.swa_cached else request.new + replayed(model, plan, request)
    return request.end - smin(rows, window)


def apply_decoder_replay(model: ModelSpec, plan: Plan, row: Row) -> Row:
    """Decoder bounded replay: layers >= the late start process each request's tail (:func:`tail_start`).

    Applies to extend-like requests only (prefill, extend, chunk); decode and verify tokens
    traverse every layer. The compressor of an owner at or past the cut (the paper's cut at 20)
    still projects every new token, so global KV stays complete; that owner's input therefore
    spans both token sets (``Row.in_start``).
    """
    update = replay_update(model, plan, plan.requests[row.request], row.layer)
    return replace(row, **update) if update else row


def past_cut(model: ModelSpec, plan: Plan, layer: int) -> bool:
    """Whether decoder bounded replay cuts ``layer`` to each extend-like request's tail."""
    return plan.decoder_replay == "bounded" and layer >= plan.late_start(model)


def replay_update(model: ModelSpec, plan: Plan, request: Request, layer: int) -> dict[str, Value]:
    """The fields :func:`apply_decoder_replay` sets on ``request``'s row in ``layer`` (none if none)."""
    if not request.is_extend or not past_cut(model, plan, layer):
        return {}
    start = tail_start(model, plan, request)
    restored = 0 if request.swa_cached else smax(0, request.cached - start)
    return {"q_start": start, "swa_start": start, "restored": restored}


def apply_policies(model: ModelSpec, plan: Plan, row: Row) -> Row:
    """Both replay policies; the encoder restore first (the decoder tail is taken over its rows)."""
    return apply_decoder_replay(model, plan, apply_encoder_restore(model, plan, row))


@dataclass(frozen=True)
class Ledger:
    """All rows of a plan on a model."""

    rows: tuple[Row, ...]
    num_layers: int

    def row(self, request: int, layer: int) -> Row:
        return self.rows[layer * (len(self.rows) // self.num_layers) + request]

    def layer_tokens(self, layer: int) -> Value:
        return ssum(r.tokens for r in self.rows if r.layer == layer)

    def request_tokens(self, request: int) -> Value:
        return ssum(r.tokens for r in self.rows if r.request == request)

    def token_layers(self) -> Value:
        """Σ over requests and backbone layers of query tokens (token×layers)."""
        return ssum(r.tokens for r in self.rows)


def ledger(model: ModelSpec, plan: Plan) -> Ledger:
    """The plan's token ledger on ``model`` with its replay policies applied."""
    plan.check(model)
    return Ledger(tuple(apply_policies(model, plan, r) for r in base_rows(model, plan)), model.num_layers)


def draft_rows(model: ModelSpec, plan: Plan, block: int) -> tuple[Row, ...]:
    """DSpark rows: each decode/verify request drafts ``dspark_block_size`` positions in one pass."""
    if plan.dspark != "on":
        return ()
    index = model.num_layers + block
    return tuple(Row(request=i, layer=index, q_start=r.end, q_end=r.end + model.dspark_block_size, swa_start=0,
                     kv_start=0, kv_end=0, cached=r.end, copies=r.copies, seq=plan.sequence_of(i))
                 for i, r in enumerate(plan.requests) if r.kind in ("decode", "verify"))


def image_tokens(model: ModelSpec, request: Request) -> tuple[int, int]:
    """(ViT patches, language tokens) of a request's images, after the image processor's resize
    (:mod:`v41graph.model.vision`); the language tokens are part of the prompt's positions."""
    if not request.images or model.vision is None:
        return 0, 0
    patches, tokens = vision_tokens(model.vision, request.image_size)
    return request.images * patches, request.images * tokens
