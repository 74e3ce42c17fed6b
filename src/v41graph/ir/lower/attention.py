"""The attention sublayer of one layer: query path, SWA KV path, compressor and indexer where the
layer's path owns them, the unpack of the selected FP4 main-KV entries, sparse attention and output
projection.

=========  ==========================  ===========================  ==========================
path       global KV / index K         index Q · score · Top-K      always
=========  ==========================  ===========================  ==========================
swa        –                           –                            q, SWA KV, attention, wo
full       own compressor, writes      own, over the visible range  q, SWA KV, attention, wo
reindex    read from the owner         own (decoder: candidate pool) q, SWA KV, attention, wo
reuse      read from the owner         read from the producer       q, SWA KV, attention, wo
csa (V4)   own, overlapped m = 4       own indexer + compressor     q, SWA KV, attention, wo
hca (V4)   own, m = 128                – (attends every entry)      q, SWA KV, attention, wo
=========  ==========================  ===========================  ==========================
"""

from __future__ import annotations

from ...model.config import LayerSpec
from ...model.formats import BF16, FP4_E2M1_E4M3_G16, FP4_E2M1_UE8M0_G32, FP8_E4M3_G32, FP32
from ..ops import (BlockMax, CacheWrite, CandidatePool, CandidateSelect, Communication, Compressor, CompressorState,
                   Dequantize, Gemm, GlobalKVStore, IndexKStore, IndexScore, Norm, Quantize, Rope, SparseAttention,
                   SwaRing, TopK)
from .context import ACT, LowerContext

I32 = "i32"


def _layouts(c: LowerContext) -> tuple[str, str]:
    from ...model.memory import kv_layouts
    k = kv_layouts(c.model)
    return k.main.name, k.swa.name


def _compressor(c: LowerContext, layer: LayerSpec, p: str, x: str) -> str:
    """Owner only: project, pool groups of m, norm (the pre-RoPE latent), RoPE, FP4, write."""
    m = c.model
    hd, ratio = m.head_dim, layer.compress_ratio
    main_layout, _ = _layouts(c)
    overlap = 2 if c.model.family == "v4" and ratio == 4 else 1
    wfmt = FP32.name if ratio > 1 else BF16.name  # the ratio > 1 compressors are fp32 in both families
    wkv = c.node(f"{p}cmp.wkv", Gemm("compressor.wkv", m.hidden_size, overlap * hd, wfmt), layer, count="kv")
    c.b.edge(x, wkv, "x", m.hidden_size, ACT)
    pool = c.node(f"{p}cmp.pool", Compressor(ratio, hd, gated=ratio > 1), layer, count="kv")
    c.b.edge(wkv, pool, "x", overlap * hd, FP32.name)
    if ratio > 1:
        gate = c.node(f"{p}cmp.wgate", Gemm("compressor.wgate", m.hidden_size, overlap * hd, wfmt), layer, count="kv")
        c.b.edge(x, gate, "x", m.hidden_size, ACT)
        c.b.edge(gate, pool, "score", overlap * hd, FP32.name)
        state = c.node(f"{p}store.cmp_state", CompressorState(layer.index, FP32.name, ratio=ratio), layer, count="none")
        c.b.edge(state, pool, "state", overlap * hd, FP32.name)
    # After pooling, every step runs once per compressed entry (m tokens → 1), not per token.
    latent = c.chain(p, layer, [("cmp.norm", Norm(hd), hd, ACT)], pool, hd, count="entry")
    packed = c.chain(p, layer, [("cmp.rope", Rope(1, m.rope_head_dim), hd, ACT),
                                ("cmp.quant", Quantize(hd, FP4_E2M1_E4M3_G16.name), hd, main_layout),
                                ("cmp.write", CacheWrite("main_kv", hd, main_layout, ratio), hd, main_layout)],
                     latent, hd, count="entry")
    store = c.node(f"{p}store.main_kv", GlobalKVStore(layer.index, main_layout, ratio=ratio), layer, count="none")
    c.b.edge(packed, store, "main_kv", hd, main_layout)
    return latent


def _index_keys(c: LowerContext, layer: LayerSpec, p: str, source: str, source_dims: int) -> None:
    """Index K from the compressed latent (V4.1: wk 512→128) or the V4 indexer's own compressor
    (wkv and wgate d→2·128, fp32, overlapped groups of 4, as the checkpoint holds them); FP4; write."""
    m = c.model
    ik = m.index_head_dim
    if m.family == "v4":
        ratio = layer.compress_ratio
        wkv = c.node(f"{p}idx.wkv", Gemm("indexer.compressor.wkv", source_dims, 2 * ik, FP32.name), layer, count="kv")
        gate = c.node(f"{p}idx.wgate", Gemm("indexer.compressor.wgate", source_dims, 2 * ik, FP32.name), layer,
                      count="kv")
        pool = c.node(f"{p}idx.k_pool", Compressor(ratio, ik, gated=True), layer, count="kv")
        state = c.node(f"{p}store.idx_state", CompressorState(layer.index, FP32.name, ratio=ratio), layer, count="none")
        for src, node, role, dims in ((source, wkv, "x", source_dims), (source, gate, "x", source_dims),
                                      (wkv, pool, "x", 2 * ik), (gate, pool, "score", 2 * ik),
                                      (state, pool, "state", 2 * ik)):
            c.b.edge(src, node, role, dims, ACT if role == "x" and src == source else FP32.name)
        source, source_dims, steps = pool, ik, []
    else:
        steps = [("idx.wk", Gemm("indexer.wk", source_dims, ik, BF16.name), ik, ACT)]
    steps += [("idx.k_norm", Norm(ik), ik, ACT), ("idx.k_rope", Rope(1, m.rope_head_dim), ik, ACT),
              ("idx.k_quant", Quantize(ik, FP4_E2M1_UE8M0_G32.name), ik, FP4_E2M1_UE8M0_G32.name),
              ("idx.k_write", CacheWrite("index_k", ik, "index_k_fp4", layer.compress_ratio), ik, "index_k_fp4")]
    # after V4's pool, or on V4.1's compressed latent: one index key per compressed entry
    written = c.chain(p, layer, steps, source, source_dims, count="entry")
    store = c.node(f"{p}store.index_k", IndexKStore(layer.index, "index_k_fp4", ratio=layer.compress_ratio), layer,
                   count="none")
    c.b.edge(written, store, "index_k", ik, "index_k_fp4")


def _indexer(c: LowerContext, layer: LayerSpec, p: str, qr: str, x: str) -> None:
    """Index query, weights, scoring over the visible range or the candidate pool, Top-K."""
    m = c.model
    heads, ik = m.index_n_heads, m.index_head_dim
    q = c.chain(p, layer, [("idx.wq_b", Gemm("indexer.wq_b", m.q_lora_rank, heads * ik, c.weight_format),
                            heads * ik, ACT),
                           ("idx.q_rope", Rope(heads, m.rope_head_dim), heads * ik, ACT),
                           ("idx.q_quant", Quantize(heads * ik, FP4_E2M1_UE8M0_G32.name), heads * ik,
                            FP4_E2M1_UE8M0_G32.name)], qr, m.q_lora_rank)
    w = c.node(f"{p}idx.weights_proj", Gemm("indexer.weights_proj", m.hidden_size, heads, BF16.name), layer)
    c.b.edge(x, w, "x", m.hidden_size, ACT)
    scope = "pool" if layer.candidate_user else "all"
    score = c.node(f"{p}idx.score", IndexScore(heads, ik, scope, m.candidate_pool_positions, layer.kv_owner,
                                               layer.compress_ratio), layer)
    c.b.edge(q, score, "q", heads * ik, FP4_E2M1_UE8M0_G32.name)
    c.b.edge(w, score, "w", heads, FP32.name)
    c.b.edge(f"L{layer.kv_owner}.store.index_k", score, "index_k", ik, "index_k_fp4")
    if layer.candidate_user:
        c.b.edge(f"L{m.candidate_source_id}.store.candidate_pool", score, "pool", m.candidate_pool_positions, I32)
    topk = c.node(f"{p}idx.topk", TopK(m.index_topk, layer.compress_ratio, scope, m.candidate_pool_positions), layer)
    c.b.edge(score, topk, "score", 1, FP32.name)
    if layer.candidate_source:
        bm = c.node(f"{p}idx.block_max", BlockMax(m.candidate_block_size, layer.compress_ratio), layer)
        c.b.edge(score, bm, "score", 1, FP32.name)
        sel = c.node(f"{p}idx.candidates",
                     CandidateSelect(m.candidate_topk_blocks, m.candidate_block_size, layer.compress_ratio),
                     layer)
        c.b.edge(bm, sel, "score", 1, FP32.name)
        pool = c.node(f"{p}store.candidate_pool", CandidatePool(layer.index, I32, positions=m.candidate_pool_positions),
                      layer, count="none")
        c.b.edge(sel, pool, "pool", m.candidate_pool_positions, I32)


def lower_attention(c: LowerContext, layer: LayerSpec, p: str, x_in: str) -> str:
    """Add the attention sublayer; returns the id of the node producing its output."""
    m = c.model
    d, hd, heads = m.hidden_size, m.head_dim, m.num_heads
    main_layout, swa_layout = _layouts(c)
    # An owner's pre-norm feeds its queries and its compressor: it counts both token sets ("in").
    x = c.chain(p, layer, [("attn_norm", Norm(d), d, ACT)], x_in, d, count="in" if layer.owns_kv else "q")
    qr = c.chain(p, layer, [("wq_a", Gemm("attn.wq_a", d, m.q_lora_rank, c.weight_format), m.q_lora_rank, ACT),
                            ("q_norm", Norm(m.q_lora_rank), m.q_lora_rank, ACT)], x, d)
    # V4 rescales each head of q by rsqrt(mean(q²)) (model-facts §3.1); V4.1 does not
    rescale = [("q_rescale", Norm(heads * hd), heads * hd, ACT)] if m.family == "v4" else []
    q = c.chain(p, layer, [("wq_b", Gemm("attn.wq_b", m.q_lora_rank, heads * hd, c.weight_format), heads * hd, ACT),
                           *rescale, ("q_rope", Rope(heads, m.rope_head_dim), heads * hd, ACT)], qr, m.q_lora_rank)
    kv = c.chain(p, layer, [("wkv", Gemm("attn.wkv", d, hd, c.weight_format), hd, ACT), ("kv_norm", Norm(hd), hd, ACT),
                            ("kv_rope", Rope(1, m.rope_head_dim), hd, ACT),
                            ("kv_quant", Quantize(hd, FP8_E4M3_G32.name), hd, swa_layout),
                            ("swa_write", CacheWrite("swa_kv", hd, swa_layout), hd, swa_layout)], x, d)
    ring = c.node(f"{p}store.swa", SwaRing(layer.index, swa_layout, window=layer.window), layer, count="none")
    c.b.edge(kv, ring, "swa_kv", hd, swa_layout)
    if layer.owns_kv:
        latent = _compressor(c, layer, p, x)
        if layer.index in m.index_source_ids:
            _index_keys(c, layer, p, latent if m.family == "v4.1" else x, hd if m.family == "v4.1" else d)
    if layer.produces_topk:
        _indexer(c, layer, p, qr, x)
    attn = c.node(f"{p}attn", SparseAttention(
        heads, hd, m.index_topk, layer.window, layer.kv_owner, layer.topk_producer, main_layout, swa_layout,
        dense_compressed=layer.path == "hca", ratio=layer.compress_ratio), layer)
    c.b.edge(q, attn, "q", heads * hd, ACT)
    c.b.edge(ring, attn, "swa_kv", hd, swa_layout)
    topk = f"L{layer.topk_producer}.idx.topk"
    if layer.kv_owner is not None:
        # Added after attention so that verify names attention first when its main_kv goes missing.
        unpack = c.node(f"{p}kv_unpack", Dequantize(hd, main_layout, layer.compress_ratio,
                                                     None if layer.path == "hca" else m.index_topk), layer)
        c.b.edge(f"L{layer.kv_owner}.store.main_kv", unpack, "main_kv", hd, main_layout)
        if layer.topk_producer is not None:
            c.b.edge(topk, unpack, "topk", m.index_topk, I32)
        c.b.edge(unpack, attn, "main_kv", hd, ACT)
    if layer.topk_producer is not None:
        c.b.edge(topk, attn, "topk", m.index_topk, I32)
    out = c.chain(p, layer, [("wo_a", Gemm("attn.wo_a", heads * hd // m.o_groups, m.o_lora_rank, BF16.name,
                                           groups=m.o_groups), m.o_groups * m.o_lora_rank, ACT),
                             ("wo_b", Gemm("attn.wo_b", m.o_groups * m.o_lora_rank, d, c.weight_format), d, ACT)],
                  attn, heads * hd)
    if c.plan.tp > 1:
        out = c.chain(p, layer, [("attn.all_reduce", Communication("all_reduce", "attention output", d, c.plan.tp),
                                  d, ACT)], out, d)
    return out
