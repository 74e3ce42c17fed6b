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

from ..algebra import Value, floordiv, smin, ssum
from ..model.config import LayerSpec, ModelSpec
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
        if self.kv_end == self.kv_start:
            return 0
        return self.copies * (floordiv(self.kv_end, ratio) - floordiv(self.cached, ratio))


def base_row(model: ModelSpec, request: Request, index: int, layer: LayerSpec) -> Row:
    """Every new token through the layer; an owner's compressor sees exactly the new tokens."""
    owner = layer.owns_kv
    return Row(request=index, layer=layer.index, q_start=request.cached, q_end=request.end, swa_start=0,
               kv_start=request.cached if owner else 0, kv_end=request.end if owner else 0,
               cached=request.cached, copies=request.copies)


def base_rows(model: ModelSpec, plan: Plan) -> tuple[Row, ...]:
    """Rows of the plan with no replay policy applied, sorted by (layer, request)."""
    return tuple(base_row(model, r, i, l) for l in model.layers for i, r in enumerate(plan.requests))


def apply_encoder_restore(model: ModelSpec, plan: Plan, row: Row) -> Row:
    """Encoder bounded replay: a prefix hit whose SWA state was lost replays min(P, W) prefix tokens.

    (``Plan`` refuses a lost SWA state unless ``encoder_restore='bounded'``.) Replayed tokens rebuild
    SWA only; they read the cached global KV and write none. At an owner
    with m > 1 and P mod m ≠ 0 the group straddling the prefix/suffix boundary is completed by
    re-projecting its P mod m prefix tokens into compressor state (no entry is written for them).
    """
    request = plan.requests[row.request]
    layer = model.layers[row.layer]
    if request.swa_cached:
        return row
    prefix = request.cached
    if layer.stage == "decoder":
        # Nothing rebuilds the decoder's lost SWA history: its queries see only this forward's keys.
        return replace(row, swa_start=prefix)
    replay = smin(prefix, plan.window(model))
    start = prefix - replay
    row = replace(row, q_start=start, swa_start=start, restored=replay)
    if layer.owns_kv and layer.compress_ratio > 1:
        row = replace(row, kv_start=prefix - (prefix - floordiv(prefix, layer.compress_ratio) * layer.compress_ratio))
    return row


def apply_decoder_replay(model: ModelSpec, plan: Plan, row: Row) -> Row:
    """Decoder bounded replay: layers >= the late start process each request's last min(S, W) tokens.

    Applies to extend-like requests only (prefill, extend, chunk); decode and verify tokens
    traverse every layer. With ``chunk_tail='last'`` non-final chunks send no token past the
    cut. The compressor of an owner at or past the cut (the paper's cut at 20) still projects
    every new token, so global KV stays complete.
    """
    request = plan.requests[row.request]
    if plan.decoder_replay != "bounded" or not request.is_extend or row.layer < plan.late_start(model):
        return row
    if request.kind == "chunk" and plan.chunk_tail == "last" and not request.is_last_chunk:
        tail = 0
    else:
        tail = smin(request.new, plan.window(model))
    start = request.end - tail
    return replace(row, q_start=start, swa_start=start)


def apply_policies(model: ModelSpec, plan: Plan, row: Row) -> Row:
    """Both replay policies; the encoder restore first (it only touches non-decoder layers)."""
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
                     kv_start=0, kv_end=0, cached=r.end, copies=r.copies)
                 for i, r in enumerate(plan.requests) if r.kind in ("decode", "verify"))


def image_tokens(model: ModelSpec, request: Request) -> tuple[int, int]:
    """(ViT patches, language tokens) of a request's images: patches of ``patch_size``, merged by
    ``downsample_ratio``² and capped at ``max_image_tokens`` per image; default size 896×896."""
    if not request.images or model.vision is None:
        return 0, 0
    v = model.vision
    w, h = request.image_size or (896, 896)
    pw, ph = -(-w // v.patch_size), -(-h // v.patch_size)
    merged = min(-(-pw // v.downsample_ratio) * -(-ph // v.downsample_ratio), v.max_image_tokens)
    return request.images * pw * ph, request.images * merged
