"""(model, plan) → Graph: one small builder per block.

The residual is a 4-stream mHC state that flows embed → (Engram) → layers → head. Each layer
adds an attention sublayer (``lower_attention``) and an MoE sublayer, both wrapped in mHC.
V4.1 collapses each sublayer's input with the *previous* sublayer's pre-mix (single-pass mHC),
so coefficient generation is off the critical path; V4 collapses with its own coefficients.
Nodes carry the ledger rows of their layer with no replay policy applied: the replay pass
rewrites them (docs/architecture.md, decision 1).
"""

from __future__ import annotations

from ...errors import PlanError, expect
from ...model.config import LayerSpec, ModelSpec
from ...model.formats import BF16, FP8_E4M3_G32, FP32
from ...model.modules import expert_format
from ..graph import Graph
from ..ops import (Communication, DraftHead, Embedding, EngramGate, EngramHash, EngramLookup, EngramTable, Gemm,
                   MhcCoefficients, MhcCollapse, MhcExpand, MoeCombine, MoeGate, Norm, RoutedExperts, SwiGLU,
                   VisionEncoder)
from ..plan import Plan
from ..routing import shared_expert_overlap
from .attention import lower_attention
from .context import ACT, LowerContext, SourceKey, row_sources
from .template import lowered


def _mhc_pre(c: LowerContext, layer: LayerSpec, p: str, sub: str, stage: str | None = None) -> tuple[str, str]:
    """Coefficients and collapse of one sublayer; returns (collapse id, coefficient id)."""
    m = c.model
    coeff = c.node(f"{p}hc_{sub}.coeff", MhcCoefficients(m.hc_mult, m.hidden_size, m.hc_sinkhorn_iters), layer,
                   stage=stage)
    c.b.edge(c.residual, coeff, "x", c.streams, ACT)
    source = c.pre_mix if m.lagged_mhc else coeff
    # The attention input of an owner feeds its compressor too: both token sets ("in", Row.in_start).
    count = "in" if sub == "attn" and layer.owns_kv else "q"
    collapse = c.node(f"{p}hc_{sub}.collapse", MhcCollapse(m.hc_mult, m.hidden_size, m.lagged_mhc, source is None),
                      layer, stage=stage, count=count)
    c.b.edge(c.residual, collapse, "x", c.streams, ACT)
    if source is not None:  # layer 0 of V4.1 collapses with a constant one-hot pre-mix
        c.b.edge(source, collapse, "coeff", (2 + m.hc_mult) * m.hc_mult, FP32.name)
    return collapse, coeff


def _mhc_post(c: LowerContext, layer: LayerSpec, p: str, sub: str, f: str, coeff: str,
              stage: str | None = None) -> None:
    m = c.model
    expand = c.node(f"{p}hc_{sub}.expand", MhcExpand(m.hc_mult, m.hidden_size), layer, stage=stage)
    c.b.edge(f, expand, "f", m.hidden_size, ACT)
    c.b.edge(c.residual, expand, "x", c.streams, ACT)
    c.b.edge(coeff, expand, "coeff", (2 + m.hc_mult) * m.hc_mult, FP32.name)
    c.residual = expand
    if m.lagged_mhc:
        c.pre_mix = coeff  # the next sublayer collapses with this sublayer's pre-mix


def _experts(c: LowerContext, layer: LayerSpec, prefix: str, x: str, experts: int, top_k: int, fmt: str, shared: bool,
             stage: str | None, rows) -> tuple[str, str]:
    """up (w1, w3) → SwiGLU → down (w2) of one expert op; returns (up id, down id).

    Per token the internal tensors are ``top_k`` routed copies: 2·inter values out of up and
    inter out of the SwiGLU. The up GEMM gathers tokens by expert, so down keeps its order.
    """
    m = c.model
    d, inter = m.hidden_size, m.moe_intermediate_size
    up = c.node(f"{prefix}.up", RoutedExperts(experts, top_k, d, inter, fmt, "up", shared), layer, stage=stage,
                rows=rows)
    c.b.edge(x, up, "x", d, ACT)
    down = c.chain(prefix, layer, [(".swiglu", SwiGLU(inter, top_k, shared), top_k * inter, ACT),
                                   (".down", RoutedExperts(experts, top_k, d, inter, fmt, "down", shared), d, ACT)],
                   up, top_k * 2 * inter, stage=stage, rows=rows)
    return up, down


def _collective(c: LowerContext, layer, name: str, src: str, op: Communication, rows, stage) -> str:
    out = c.node(name, op, layer, rows=rows, stage=stage)
    c.b.edge(src, out, "x", op.dim, ACT)
    return out


def _moe(c: LowerContext, layer: LayerSpec, p: str, x: str, experts: int, top_k: int, stage: str | None = None) -> str:
    """Gate, routed and shared experts, combine, with the collectives the mapping needs
    (model/sharding.py), as SGLang's V4 decoder layer runs them ([S4] ``DeepseekV4DecoderLayer.forward``):
    EP over DeepEP dispatches each GPU's own tokens (FP8 + scales) and combines them (bf16), then the
    attention group all-gathers them (``SGLANG_DSV4_FIX_TP_ATTN_A2A_SCATTER``, default on); without an
    a2a backend (``--moe-a2a-backend none``, EP or not) the MoE runs on every token and one all-reduce
    sums the partial outputs ([SM] ``forward_normal``), after a DP gather."""
    m, mp = c.model, c.mapping
    d = m.hidden_size
    rows, everyone = c.moe_rows(layer), c.all_rows(layer)
    if not mp.dispatches and mp.dp > 1:  # SGLang dp_gather_partial: every DP rank's tokens to every GPU
        x = _collective(c, layer, f"{p}moe.dp_gather", x, Communication("all_gather", "DP gather", d, mp.dp),
                        everyone, stage)
    gate = c.node(f"{p}moe.gate", MoeGate(experts, top_k, d), layer, stage=stage, rows=rows)
    c.b.edge(x, gate, "x", d, ACT)
    src = x
    if mp.dispatches:
        src = c.node(f"{p}moe.dispatch", Communication("all_to_all", "dispatch", d, mp.ep, FP8_E4M3_G32.name, top_k),
                     layer, stage=stage, rows=rows)
        c.b.edge(x, src, "x", d, FP8_E4M3_G32.name)
        c.b.edge(gate, src, "route", top_k, FP32.name)
    up, routed = _experts(c, layer, f"{p}moe.experts", src, experts, top_k, expert_format(m).name, False, stage,
                          everyone)
    c.b.edge(gate, up, "route", top_k, FP32.name)
    if mp.dispatches:
        back = c.node(f"{p}moe.combine_a2a", Communication("all_to_all", "combine", d, mp.ep, BF16.name, top_k),
                      layer, stage=stage, rows=rows)
        c.b.edge(routed, back, "x", d, ACT)
        routed = back
    shared_up, shared = _experts(c, layer, f"{p}moe.shared", x, m.n_shared_experts, m.n_shared_experts,
                                 c.weight_format, True, stage, rows)
    if not shared_expert_overlap(c.plan):  # one stream: the shared expert starts when the routed ones end
        c.b.edge(routed, shared_up, "after", 0, ACT)
    out = c.node(f"{p}moe.combine", MoeCombine(top_k, d), layer, stage=stage, rows=rows)
    c.b.edge(routed, out, "routed", d, ACT)
    c.b.edge(shared, out, "shared", d, ACT)
    if mp.dispatches and mp.attention_group > 1:  # SGLang attn_tp_all_gather of the scattered tokens
        out = _collective(c, layer, f"{p}moe.all_gather", out,
                          Communication("all_gather", "MoE output", d, mp.attention_group), ("rank", layer.index),
                          stage)
    elif not mp.dispatches and mp.gpus > 1:  # routed + shared partial sums over the whole MoE group
        out = _collective(c, layer, f"{p}moe.all_reduce", out, Communication("all_reduce", "MoE output", d, mp.gpus),
                          everyone, stage)
    return out


def _engram(c: LowerContext, layer: LayerSpec, slot: int) -> None:
    m = c.model
    p = f"L{layer.index}.engram."
    columns = (m.engram_max_ngram_size - 1) * m.engram_n_heads
    table = c.node(f"L{layer.index}.store.engram_table",
                   EngramTable(layer.index, FP8_E4M3_G32.name, rows=m.engram_num_embeddings[slot]), layer, count="none")
    hashes = c.node(p + "hash", EngramHash(columns), layer)
    look = c.node(p + "lookup", EngramLookup(columns, m.engram_head_dim, FP8_E4M3_G32.name), layer)
    c.b.edge(hashes, look, "ids", columns, "i32")
    c.b.edge(table, look, "table", columns * m.engram_head_dim, FP8_E4M3_G32.name)
    if c.plan.tp > 1:  # each rank looked up its share of the hash columns (vLLM ParallelEngramEmbedding)
        look = _collective(c, layer, p + "all_gather", look,
                           Communication("all_gather", "Engram rows", columns * m.engram_head_dim, c.plan.tp),
                           ("rank", layer.index), None)
    proj = c.node(p + "proj", Gemm("engram.wkv", columns * m.engram_head_dim, (m.hc_mult + 1) * m.hidden_size,
                                   c.weight_format), layer)
    c.b.edge(look, proj, "x", columns * m.engram_head_dim, ACT)
    gate = c.node(p + "gate", EngramGate(m.hc_mult, m.hidden_size), layer)
    c.b.edge(proj, gate, "kv", (m.hc_mult + 1) * m.hidden_size, ACT)
    c.b.edge(c.residual, gate, "x", c.streams, ACT)
    c.residual = gate


def _layer(c: LowerContext, layer: LayerSpec) -> None:
    if layer.engram:
        _engram(c, layer, c.model.engram_layer_ids.index(layer.index))
    p = f"L{layer.index}."
    x, coeff = _mhc_pre(c, layer, p, "attn")
    out = lower_attention(c, layer, p, x)
    _mhc_post(c, layer, p, "attn", out, coeff)
    x, coeff = _mhc_pre(c, layer, p, "ffn")
    h = c.model.hidden_size
    norm = c.chain(p, layer, [("ffn_norm", Norm(h), h, ACT)], x, h)
    out = _moe(c, layer, p, norm, c.model.n_routed_experts, c.model.experts_per_token)
    _mhc_post(c, layer, p, "ffn", out, coeff)


def _embedding(c: LowerContext) -> None:
    m = c.model
    c.residual = c.node("embed", Embedding(m.vocab_size, m.hidden_size, m.hc_mult), None, rows=("rank", 0),
                        stage=m.layers[0].stage)
    if c.plan.tp > 1:  # vocab-parallel lookup: each rank fills its rows, an all-reduce completes them
        c.residual = _collective(c, None, "embed.all_reduce", c.residual,
                                 Communication("all_reduce", "embedding", m.hidden_size, c.plan.tp), ("rank", 0),
                                 m.layers[0].stage)
    if ("vision",) in c.sources:
        v = m.vision
        vrows = ("vision",)
        enc = c.node("vision.encoder", VisionEncoder(v.num_layers, v.hidden_size, v.num_heads, v.intermediate_size,
                                                      v.patch_size), None, rows=vrows, count="patch", stage="vision")
        merged = v.hidden_size * v.downsample_ratio ** 2  # downsample_ratio² patches per image token
        # The aligner is two layers in the checkpoint (aligner.fc1: merged → d, aligner.fc2: d → d)
        proj = c.chain("vision.", None, [("aligner.fc1", Gemm("aligner.fc1", merged, m.hidden_size, BF16.name),
                                          m.hidden_size, ACT),
                                         ("aligner.fc2", Gemm("aligner.fc2", m.hidden_size, m.hidden_size, BF16.name),
                                          m.hidden_size, ACT)],
                       enc, merged, rows=vrows, count="image", stage="vision")
        c.b.edge(proj, c.residual, "image", m.hidden_size, ACT)


def _head(c: LowerContext) -> None:
    m = c.model
    last = m.layers[-1]
    rows = ("rank", last.index)
    collapse = c.node("head.collapse", MhcCollapse(m.hc_mult, m.hidden_size, m.lagged_mhc), None, rows=rows,
                      count="logits")
    c.b.edge(c.residual, collapse, "x", c.streams, ACT)
    if not m.lagged_mhc:  # V4's hc_head computes its own collapse weights
        coeff = c.node("head.coeff", MhcCoefficients(m.hc_mult, m.hidden_size, 0, head=True), None, rows=rows,
                       count="logits")
        c.b.edge(c.residual, coeff, "x", c.streams, ACT)
        c.pre_mix = coeff
    c.b.edge(c.pre_mix, collapse, "coeff", (2 + m.hc_mult) * m.hc_mult, FP32.name)
    norm = c.chain("head.", None, [("norm", Norm(m.hidden_size), m.hidden_size, ACT)], collapse, m.hidden_size,
                   rows=rows, count="logits")
    logits = c.node("head.proj", Gemm("head", m.hidden_size, m.vocab_size, BF16.name), None, rows=rows,
                    count="logits", sink=True)  # the logits leave the graph here
    c.b.edge(norm, logits, "x", m.hidden_size, ACT)


def _dspark(c: LowerContext) -> None:
    """Three SWA-only draft blocks over ``dspark_block_size`` positions, fed by the target layers' inputs."""
    m = c.model
    rows0 = ("draft", 0)
    if not c.sources[rows0]:  # rank 0 drafts nothing (context.coinciding: an empty source)
        return
    d = m.hidden_size
    proj = c.node("D.main_proj", Gemm("main_proj", len(m.dspark_target_layer_ids) * d, d, BF16.name), None,
                  rows=rows0, count="q", stage="dspark")
    for t in m.dspark_target_layer_ids:
        c.b.edge(f"L{t}.hc_attn.collapse", proj, "x", d, ACT)
    backbone_residual, backbone_mix = c.residual, c.pre_mix
    c.residual, c.pre_mix = proj, None
    for blk in m.draft_blocks:
        spec = LayerSpec(blk.index, "dspark", "swa", 0, None, None, blk.window)
        p = f"D{blk.block}."
        x, coeff = _mhc_pre(c, spec, p, "attn", stage="dspark")
        out = lower_attention(c, spec, p, x)
        _mhc_post(c, spec, p, "attn", out, coeff, stage="dspark")
        x, coeff = _mhc_pre(c, spec, p, "ffn", stage="dspark")
        # A draft block is a full Block (model-facts §8): its MoE input is ffn_norm'd like a backbone layer's.
        norm = c.chain(p, spec, [("ffn_norm", Norm(d), d, ACT)], x, d, stage="dspark")
        out = _moe(c, spec, p, norm, blk.n_routed_experts, blk.experts_per_token, stage="dspark")
        _mhc_post(c, spec, p, "ffn", out, coeff, stage="dspark")
    # Last stage (model-facts §8): collapse the streams with the last block's pre-mix, norm, the
    # base logits of every draft position through the vocabulary head (d → vocab), then the
    # Markov head's bias and the confidence head on top of them.
    collapse = c.node("D.collapse", MhcCollapse(m.hc_mult, d, m.lagged_mhc), None, rows=rows0, stage="dspark")
    c.b.edge(c.residual, collapse, "x", c.streams, ACT)
    mix = c.pre_mix
    if not m.lagged_mhc:  # V4 computes the collapse weights in the same pass, as its hc_head does
        mix = c.node("D.coeff", MhcCoefficients(m.hc_mult, d, 0), None, rows=rows0, stage="dspark")
        c.b.edge(c.residual, mix, "x", c.streams, ACT)
    c.b.edge(mix, collapse, "coeff", (2 + m.hc_mult) * m.hc_mult, FP32.name)
    norm = c.chain("D.", None, [("norm", Norm(d), d, ACT)], collapse, d, rows=rows0, stage="dspark")
    base = c.node("D.head", Gemm("head", d, m.vocab_size, BF16.name), None, rows=rows0, stage="dspark")
    c.b.edge(norm, base, "x", d, ACT)
    heads = c.node("D.heads", DraftHead(m.vocab_size, m.dspark_markov_rank, d), None, rows=rows0, stage="dspark",
                   sink=True)
    c.b.edge(norm, heads, "x", d, ACT)
    c.b.edge(base, heads, "logits", m.vocab_size, FP32.name)
    c.residual, c.pre_mix = backbone_residual, backbone_mix


def lower(model: ModelSpec, plan: Plan) -> Graph:
    """Lower a plan on a model into a dataflow graph (no pass applied yet).

    >>> from v41graph import load_model
    >>> from v41graph.ir.plan import Plan, Request
    >>> g = lower(load_model(), Plan([Request.prefill(128)]))
    >>> sorted({n.path for n in g.nodes.values() if n.path})
    ['full', 'reindex', 'reuse', 'swa']
    """
    expect(plan, Plan, "lower plan", PlanError, " (v41graph.Plan([...]))").check(model)
    sources = row_sources(model, plan)
    return lowered(model, plan, sources, lambda: _build(LowerContext.of(model, plan, sources)))


def _build(c: LowerContext) -> tuple[Graph, tuple[SourceKey, ...]]:
    """The graph, and per node the name of the source it carries."""
    _embedding(c)
    for layer in c.model.layers:
        _layer(c, layer)
    if c.plan.dspark == "on":
        _dspark(c)
    _head(c)
    return c.b.build(), tuple(c.carried)
