"""One builder function per module kind, each adding that module's weight tensors to a
:class:`Tensors` collector — the table :func:`v41graph.model.inventory.inventory` walks.

Storage choices are documented in :mod:`v41graph.model.inventory`.
"""

from __future__ import annotations

from fractions import Fraction

from ..errors import ConfigError
from .config import ModelSpec
from .formats import BF16, FP4_E2M1_UE8M0_G32, FP8_E4M3_B32, FP8_E4M3_B128, FP8_E4M3_G32, FP32, Format
from .layout import LayerSpec

# V4 hash-routing table (tid2eid); the reference keeps it int32. No cache or activation uses it,
# so it lives here rather than in precision.FORMATS.
_INT32 = Format("int32", "int32", Fraction(4))
_LINEAR = {32: FP8_E4M3_B32, 128: FP8_E4M3_B128}


def linear_format(model: ModelSpec) -> Format:
    """The FP8 block format of the model's linear projections (32×32 in V4.1, 128×128 in V4)."""
    if model.weight_block not in _LINEAR:
        raise ConfigError(f"config key 'quantization_config.weight_block_size': no FP8 format for "
                          f"{model.weight_block}x{model.weight_block} blocks (known: {sorted(_LINEAR)})")
    return _LINEAR[model.weight_block]


def expert_format(model: ModelSpec) -> Format:
    """Routed experts' storage: FP4 e2m1 with a ue8m0 per 32 (``expert_dtype`` fp4, the official
    checkpoints), or the linear FP8 block format (``expert_dtype`` fp8, e.g. DeepSeek-V4-Flash-FP8).

    >>> from v41graph import load_model
    >>> expert_format(load_model()).name
    'fp4_e2m1_ue8m0_g32'
    """
    return FP4_E2M1_UE8M0_G32 if model.expert_dtype == "fp4" else linear_format(model)


class Tensors:
    """Collects tensors; ``override`` re-files everything added meanwhile (draft blocks → dspark)."""

    def __init__(self, model: ModelSpec):
        self.m, self.out, self.override = model, [], None
        self.lin = linear_format(model)
        self.shapes: dict[tuple[int, ...], tuple[int, ...]] = {}  # one tuple per distinct shape (48k tensors)

    def add(self, module, leaf, group, shape, fmt, *, name=None):
        full = name or (f"{module}.{leaf}" if module else leaf)
        shape = tuple(shape)
        shape = self.shapes.setdefault(shape, shape)
        self.out.append((full, module, self.override or group, shape, fmt))  # WeightTensor fields

    def norm(self, module, leaf, dim):
        self.add(module, leaf, "norms", (dim,), FP32)

    def block(self, module, prefix, count, leaves, group, fmt):
        """``count`` experts' ``leaves`` ((leaf, shape) pairs) as one inventory.TensorBlock."""
        self.out.append(("block", module, prefix, count, tuple((leaf, tuple(shape)) for leaf, shape in leaves),
                         self.override or group, fmt))


def attention(t: Tensors, p):
    m, a = t.m, f"{p}.attn"
    t.add(a, "wq_a.weight", "attention", (m.q_lora_rank, m.hidden_size), t.lin)
    t.norm(a, "q_norm.weight", m.q_lora_rank)
    t.add(a, "wq_b.weight", "attention", (m.num_heads * m.head_dim, m.q_lora_rank), t.lin)
    t.add(a, "wkv.weight", "attention", (m.head_dim, m.hidden_size), t.lin)
    t.norm(a, "kv_norm.weight", m.head_dim)
    # checkpoint layout [groups·o_lora, heads·head_dim/groups]; the einsum views it per group
    t.add(a, "wo_a.weight", "attention", (m.o_groups * m.o_lora_rank, m.num_heads * m.head_dim // m.o_groups),
             BF16)
    t.add(a, "wo_b.weight", "attention", (m.hidden_size, m.o_groups * m.o_lora_rank), t.lin)
    t.add(a, "attn_sink", "attention", (m.num_heads,), FP32)


def compressor(t: Tensors, module, group, ratio, head_dim, *, overlap=False, gate=True, ape=False, fmt=FP32):
    out = (2 if overlap else 1) * head_dim  # V4 ratio 4 projects both halves of the overlap
    t.add(module, "wkv.weight", group, (out, t.m.hidden_size), fmt)
    if gate:
        t.add(module, "wgate.weight", group, (out, t.m.hidden_size), fmt)
    if ape:
        t.add(module, "ape", group, (ratio, out), FP32)
    t.norm(module, "norm.weight", head_dim)


def mhc(t: Tensors, p):
    n, width = (2 + t.m.hc_mult) * t.m.hc_mult, t.m.hc_mult * t.m.hidden_size
    for sub in ("attn", "ffn"):
        for leaf, shape in ((f"hc_{sub}_fn", (n, width)), (f"hc_{sub}_base", (n,)), (f"hc_{sub}_scale", (3,))):
            t.add(p, leaf, "mhc", shape, FP32)


def hc_head(t: Tensors, p):
    """V4's learned collapse of the hc streams before the final norm (``p`` "" for the backbone)."""
    hc, width = t.m.hc_mult, t.m.hc_mult * t.m.hidden_size
    for leaf, shape in (("hc_head_fn", (hc, width)), ("hc_head_base", (hc,)), ("hc_head_scale", (1,))):
        t.add(p or "hc_head", leaf, "mhc", shape, FP32, name=f"{p}.{leaf}" if p else leaf)


def _swiglu_leaves(inter: int, d: int) -> tuple[tuple[str, tuple[int, int]], ...]:
    return (("w1.weight", (inter, d)), ("w2.weight", (d, inter)), ("w3.weight", (inter, d)))


def swiglu(t: Tensors, module, inter, group, fmt, *, prefix="", d=None):
    for leaf, shape in _swiglu_leaves(inter, d or t.m.hidden_size):
        t.add(module, f"{prefix}{leaf}", group, shape, fmt)


def moe(t: Tensors, p, n_routed, *, hash_routed=False):
    m, f = t.m, f"{p}.ffn"
    t.add(f, "gate.weight", "moe_gate", (n_routed, m.hidden_size), BF16)
    if hash_routed:  # V4 hash layers: a token-id → expert table replaces the selection bias
        t.add(f, "gate.tid2eid", "moe_gate", (m.vocab_size, m.experts_per_token), _INT32)
    else:
        t.add(f, "gate.bias", "moe_gate", (n_routed,), FP32)
    if m.family == "v4.1":  # separate selection bias for image tokens (facts §9)
        t.add(f, "gate.bias_vl", "moe_gate", (n_routed,), FP32)
    # the routed experts, e = 0 … n_routed − 1, each f"{f}.experts.{e}.w1.weight" …: one block
    t.block(f, "experts.", n_routed, _swiglu_leaves(m.moe_intermediate_size, m.hidden_size), "routed_experts",
            expert_format(m))
    if m.n_shared_experts:  # several shared experts are stored fused along the intermediate dim
        swiglu(t, f, m.n_shared_experts * m.moe_intermediate_size, "shared_experts", t.lin,
                    prefix="shared_experts.")


def block(t: Tensors, p, n_routed, *, hash_routed=False):
    """What every block has: attention projections, norms, mHC, MoE."""
    mhc(t, p)
    t.norm(p, "attn_norm.weight", t.m.hidden_size)
    attention(t, p)
    t.norm(p, "ffn_norm.weight", t.m.hidden_size)
    moe(t, p, n_routed, hash_routed=hash_routed)


def v41_layer(t: Tensors, layer: LayerSpec):
    m, p = t.m, f"layers.{layer.index}"
    if layer.engram:  # Engram writes into the residual before this block (facts §6)
        rows = m.engram_num_embeddings[m.engram_layer_ids.index(layer.index)]
        e, cols = f"{p}.engram", (m.engram_max_ngram_size - 1) * m.engram_n_heads * m.engram_head_dim
        t.add(e, "embed.weight", "engram_tables", (rows, m.engram_head_dim), FP8_E4M3_G32)
        t.add(e, "wkv.weight", "engram_proj", ((m.hc_mult + 1) * m.hidden_size, cols), t.lin)
        t.add(e, "q_weight", "engram_proj", (m.hc_mult, m.hidden_size), BF16)
        t.add(e, "k_weight", "engram_proj", (m.hc_mult, m.hidden_size), BF16)
    block(t, p, m.n_routed_experts)
    a = f"{p}.attn"
    if layer.owns_kv:  # only KV sources compress; ratio 1 (layer 20) is a bare bf16 projection
        r = layer.compress_ratio
        compressor(t, f"{a}.compressor", "compressor", r, m.head_dim, gate=r > 1, fmt=FP32 if r > 1 else BF16)
    if layer.produces_topk:  # every index source has its own query; only KV sources own index keys
        t.add(a, "indexer.wq_b.weight", "indexer", (m.index_n_heads * m.index_head_dim, m.q_lora_rank),
                 t.lin)
        t.add(a, "indexer.weights_proj.weight", "indexer", (m.index_n_heads, m.hidden_size), BF16)
        if layer.owns_kv:
            t.add(a, "indexer.wk.weight", "indexer", (m.index_head_dim, m.head_dim), BF16)
            t.norm(a, "indexer.k_norm.weight", m.index_head_dim)


def v4_layer(t: Tensors, layer: LayerSpec):
    m, p, r = t.m, f"layers.{layer.index}", layer.compress_ratio
    block(t, p, m.n_routed_experts, hash_routed=layer.index < m.num_hash_layers)
    if r:  # every compressed V4 layer owns its compressor; ratio 4 overlaps (2·head_dim) with APE
        compressor(t, f"{p}.attn.compressor", "compressor", r, m.head_dim, overlap=r == 4, ape=True)
    if r == 4:  # CSA: an indexer with its own overlapped compressor of index_head_dim
        a = f"{p}.attn.indexer"
        t.add(a, "wq_b.weight", "indexer", (m.index_n_heads * m.index_head_dim, m.q_lora_rank), t.lin)
        t.add(a, "weights_proj.weight", "indexer", (m.index_n_heads, m.hidden_size), BF16)
        compressor(t, f"{a}.compressor", "indexer", r, m.index_head_dim, overlap=True, ape=True)


def drafts(t: Tensors):
    m = t.m
    d, last = m.hidden_size, len(m.draft_blocks) - 1
    t.override = "dspark"
    for blk in m.draft_blocks:
        p = f"mtp.{blk.block}"
        block(t, p, blk.n_routed_experts)
        if not m.dspark_target_layer_ids:  # V4 MTP: embedding and hidden projections, own head mix
            for w in ("e_proj", "h_proj"):
                t.add(p, f"{w}.weight", "dspark", (d, d), t.lin)
            for n in ("enorm", "hnorm", "norm"):
                t.norm(p, f"{n}.weight", d)
            hc_head(t, p)
            continue
        # DSpark: model-facts §2 says only ONE mtp block carries markov_head, confidence_head and
        # main_proj; §8 and the V4-0731 loaders place main_proj on stage 0 and the heads on the last.
        if blk.block == 0:
            t.add(p, "main_proj.weight", "dspark", (d, len(m.dspark_target_layer_ids) * d), t.lin)
            t.norm(p, "main_norm.weight", d)
        if blk.block == last:
            r = m.dspark_markov_rank
            t.norm(p, "norm.weight", d)
            t.add(f"{p}.markov_head", "markov_w1.weight", "dspark", (m.vocab_size, r), BF16)
            t.add(f"{p}.markov_head", "markov_w2.weight", "dspark", (m.vocab_size, r), BF16)
            t.add(f"{p}.confidence_head", "proj.weight", "dspark", (1, d + r), FP32)
            if m.family == "v4":  # V4.1 collapses with the lagged pre-mix: no hc_head (facts §5)
                hc_head(t, p)
    t.override = None


def vision(t: Tensors):
    """ViT + aligner, all bf16. Assumed (facts give only vision_config): no biases, a patch
    embedding flattened to [hidden, 3·patch²], pre-norm layers with fused qkv, SwiGLU MLP, and a
    2-layer aligner MLP from the downsample_ratio² merged patches to the model width."""
    v, h, t.override = t.m.vision, t.m.hidden_size, "vision"
    t.add("vision.patch_embed", "weight", "vision", (v.hidden_size, 3 * v.patch_size ** 2), BF16)
    for i in range(v.num_layers):
        p, hv = f"vision.layers.{i}", v.hidden_size
        t.add(p, "norm1.weight", "vision", (hv,), BF16)
        t.add(f"{p}.attn", "qkv.weight", "vision", (3 * hv, hv), BF16)
        t.add(f"{p}.attn", "proj.weight", "vision", (hv, hv), BF16)
        t.add(p, "norm2.weight", "vision", (hv,), BF16)
        swiglu(t, f"{p}.mlp", v.intermediate_size, "vision", BF16, d=hv)
    t.add("aligner", "fc1.weight", "vision", (h, v.hidden_size * v.downsample_ratio ** 2), BF16)
    t.add("aligner", "fc2.weight", "vision", (h, h), BF16)
    t.override = None
