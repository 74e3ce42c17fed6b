"""Interface ①: the physical module inventory — every weight tensor, its storage format, its bytes.

Resident weight bytes come from here only: they do not depend on the plan, on replay, or on how
often a layer runs (SPEC §1.3). Names follow the checkpoint (no ``model.`` prefix, model-facts §2):
``embed.weight``, ``layers.3.attn.wq_a.weight``, ``layers.1.engram.embed.weight``,
``mtp.0.ffn.experts.5.w1.weight``, ``vision.*``, ``aligner.*``. A block-scaled tensor's bytes include
its scale tensor (``….scale`` in the checkpoint), so scales are not listed separately.

Storage choices (model-facts §9 unless said otherwise):

* linear projections: FP8 e4m3 with ue8m0 blocks (32×32 in V4.1, 128×128 in V4);
* routed experts: FP4 e2m1, one ue8m0 per 32 along K (both families: ``expert_dtype`` fp4);
* Engram tables: FP8 rows with one ue8m0 per 32 (264 B per 256-wide row);
* bf16: embed, head, ``wo_a`` (brief + facts §3.1; third-party header dumps show it stored FP8
  32×32 in the checkpoint, 1.34 GB less for V4.1 — the reference dequantises it to bf16 on load,
  and bf16 is what stays resident), ratio-1 compressor, indexer ``wk``/``weights_proj``, MoE gate
  weight, Engram ``q_weight``/``k_weight``, the whole vision tower and aligner;
* fp32: every RMSNorm weight (the reference RMSNorm keeps its weight fp32), mHC, ``attn_sink``,
  gate biases, ratio>1 compressors (V4.1 ratio 2, V4 ratio 4/128) and APE, DSpark confidence head.

>>> from v41graph import load_model
>>> inv = inventory(load_model())
>>> inv.count("engram.embed"), inv.bytes_by_group()["engram_tables"]
(2, 202758032400)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache, cached_property
from math import ceil, prod

from ..errors import ConfigError
from .config import LayerSpec, ModelSpec
from .formats import (BF16, FP4_E2M1_E4M3_G16, FP4_E2M1_UE8M0_G32, FP8_E4M3_B32, FP8_E4M3_B128, FP8_E4M3_G32, FP32,
                        Format)

#: bytes_by_group() order: model input → attention family → mixing → FFN → memory → extras
GROUPS = ("embedding", "head", "attention", "compressor", "indexer", "norms", "mhc", "moe_gate",
          "routed_experts", "shared_experts", "engram_tables", "engram_proj", "dspark", "vision")

# One scale covers a (rows × cols) tile of the last two dims: a 2-D block for linear weights, a 1×K
# group along the reduction dim for experts and Engram rows. A scaled format without a tile raises.
_SCALE_TILES = {FP8_E4M3_B32.name: (32, 32), FP8_E4M3_B128.name: (128, 128),
                FP8_E4M3_G32.name: (1, 32), FP4_E2M1_UE8M0_G32.name: (1, 32), FP4_E2M1_E4M3_G16.name: (1, 16)}
# V4 hash-routing table (tid2eid); the reference keeps it int32. No cache or activation uses it,
# so it lives here rather than in precision.FORMATS.
_INT32 = Format("int32", "int32", Fraction(4))
_LINEAR = {32: FP8_E4M3_B32, 128: FP8_E4M3_B128}


@dataclass(frozen=True)
class WeightTensor:
    """One checkpoint tensor: ``name``, owning ``module``, inventory ``group``, ``shape``, ``format``."""

    name: str
    module: str
    group: str
    shape: tuple[int, ...]
    format: Format

    def __post_init__(self):
        if self.group not in GROUPS:  # bytes_by_group() must account for every tensor
            raise ConfigError(f"weight {self.name!r}: unknown group {self.group!r} (known: {', '.join(GROUPS)})")

    @property
    def elements(self) -> int:
        return prod(self.shape)

    @cached_property
    def bytes(self) -> int:
        """Payload plus scale bytes, exact; scale tiles are rounded up at ragged edges."""
        payload = self.format.element_bytes * self.elements
        scales = 0
        if self.format.scale is not None:
            if self.format.name not in _SCALE_TILES:
                raise ConfigError(f"weight {self.name!r}: format {self.format.name!r} has no scale tile rule")
            tr, tc = _SCALE_TILES[self.format.name]
            *lead, rows, cols = (1, *self.shape) if len(self.shape) == 1 else self.shape
            scales = prod(lead) * ceil(rows / tr) * ceil(cols / tc) * self.format.scale_bytes
        total = payload + scales
        if Fraction(total).denominator != 1:
            raise ConfigError(f"weight {self.name!r}: shape {self.shape} in {self.format.name} is "
                              f"{total} bytes, not a whole number")
        return int(total)


@dataclass(frozen=True)
class Inventory:
    """All weight tensors of one model: embed, vision, layers, final norm and head, draft blocks."""

    model: str
    tensors: tuple[WeightTensor, ...]

    @cached_property
    def total_bytes(self) -> int:
        return sum(t.bytes for t in self.tensors)

    def bytes_by_group(self) -> dict[str, int]:
        """Bytes per group, every group of :data:`GROUPS` present (0 when empty), in that order."""
        out = dict.fromkeys(GROUPS, 0)
        for t in self.tensors:
            out[t.group] += t.bytes
        return out

    def bytes_by_module(self) -> dict[str, int]:
        """Bytes per module (``layers.3.attn``, ``layers.3.ffn``, ``embed`` …) in first-seen order."""
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.module] = out.get(t.module, 0) + t.bytes
        return out

    def count(self, name_substring: str) -> int:
        """Number of tensors whose name contains ``name_substring``."""
        return sum(1 for t in self.tensors if name_substring in t.name)


class _Builder:
    """Collects tensors; ``override`` re-files everything added meanwhile (draft blocks → dspark)."""

    def __init__(self, model: ModelSpec):
        self.m, self.out, self.override = model, [], None
        if model.weight_block not in _LINEAR:
            raise ConfigError(f"config key 'quantization_config.weight_block_size': no FP8 format for "
                              f"{model.weight_block}x{model.weight_block} blocks (known: {sorted(_LINEAR)})")
        self.lin = _LINEAR[model.weight_block]

    def add(self, module, leaf, group, shape, fmt, *, name=None):
        full = name or (f"{module}.{leaf}" if module else leaf)
        self.out.append(WeightTensor(full, module, self.override or group, tuple(shape), fmt))

    def norm(self, module, leaf, dim):
        self.add(module, leaf, "norms", (dim,), FP32)

    def attention(self, p):
        m, a = self.m, f"{p}.attn"
        self.add(a, "wq_a.weight", "attention", (m.q_lora_rank, m.hidden_size), self.lin)
        self.norm(a, "q_norm.weight", m.q_lora_rank)
        self.add(a, "wq_b.weight", "attention", (m.num_heads * m.head_dim, m.q_lora_rank), self.lin)
        self.add(a, "wkv.weight", "attention", (m.head_dim, m.hidden_size), self.lin)
        self.norm(a, "kv_norm.weight", m.head_dim)
        # checkpoint layout [groups·o_lora, heads·head_dim/groups]; the einsum views it per group
        self.add(a, "wo_a.weight", "attention", (m.o_groups * m.o_lora_rank, m.num_heads * m.head_dim // m.o_groups),
                 BF16)
        self.add(a, "wo_b.weight", "attention", (m.hidden_size, m.o_groups * m.o_lora_rank), self.lin)
        self.add(a, "attn_sink", "attention", (m.num_heads,), FP32)

    def compressor(self, module, group, ratio, head_dim, *, overlap=False, gate=True, ape=False, fmt=FP32):
        out = (2 if overlap else 1) * head_dim  # V4 ratio 4 projects both halves of the overlap
        self.add(module, "wkv.weight", group, (out, self.m.hidden_size), fmt)
        if gate:
            self.add(module, "wgate.weight", group, (out, self.m.hidden_size), fmt)
        if ape:
            self.add(module, "ape", group, (ratio, out), FP32)
        self.norm(module, "norm.weight", head_dim)

    def mhc(self, p):
        n, width = (2 + self.m.hc_mult) * self.m.hc_mult, self.m.hc_mult * self.m.hidden_size
        for sub in ("attn", "ffn"):
            for leaf, shape in ((f"hc_{sub}_fn", (n, width)), (f"hc_{sub}_base", (n,)), (f"hc_{sub}_scale", (3,))):
                self.add(p, leaf, "mhc", shape, FP32)

    def hc_head(self, p):
        """V4's learned collapse of the hc streams before the final norm (``p`` "" for the backbone)."""
        hc, width = self.m.hc_mult, self.m.hc_mult * self.m.hidden_size
        for leaf, shape in (("hc_head_fn", (hc, width)), ("hc_head_base", (hc,)), ("hc_head_scale", (1,))):
            self.add(p or "hc_head", leaf, "mhc", shape, FP32, name=f"{p}.{leaf}" if p else leaf)

    def swiglu(self, module, inter, group, fmt, *, prefix="", d=None):
        d = d or self.m.hidden_size
        for w, shape in (("w1", (inter, d)), ("w2", (d, inter)), ("w3", (inter, d))):
            self.add(module, f"{prefix}{w}.weight", group, shape, fmt)

    def moe(self, p, n_routed, *, hash_routed=False):
        m, f = self.m, f"{p}.ffn"
        self.add(f, "gate.weight", "moe_gate", (n_routed, m.hidden_size), BF16)
        if hash_routed:  # V4 hash layers: a token-id → expert table replaces the selection bias
            self.add(f, "gate.tid2eid", "moe_gate", (m.vocab_size, m.experts_per_token), _INT32)
        else:
            self.add(f, "gate.bias", "moe_gate", (n_routed,), FP32)
        if m.family == "v4.1":  # separate selection bias for image tokens (facts §9)
            self.add(f, "gate.bias_vl", "moe_gate", (n_routed,), FP32)
        for e in range(n_routed):
            self.swiglu(f, m.moe_intermediate_size, "routed_experts", FP4_E2M1_UE8M0_G32, prefix=f"experts.{e}.")
        if m.n_shared_experts:  # several shared experts are stored fused along the intermediate dim
            self.swiglu(f, m.n_shared_experts * m.moe_intermediate_size, "shared_experts", self.lin,
                        prefix="shared_experts.")

    def block(self, p, n_routed, *, hash_routed=False):
        """What every block has: attention projections, norms, mHC, MoE."""
        self.mhc(p)
        self.norm(p, "attn_norm.weight", self.m.hidden_size)
        self.attention(p)
        self.norm(p, "ffn_norm.weight", self.m.hidden_size)
        self.moe(p, n_routed, hash_routed=hash_routed)

    def v41_layer(self, layer: LayerSpec):
        m, p = self.m, f"layers.{layer.index}"
        if layer.engram:  # Engram writes into the residual before this block (facts §6)
            rows = m.engram_num_embeddings[m.engram_layer_ids.index(layer.index)]
            e, cols = f"{p}.engram", (m.engram_max_ngram_size - 1) * m.engram_n_heads * m.engram_head_dim
            self.add(e, "embed.weight", "engram_tables", (rows, m.engram_head_dim), FP8_E4M3_G32)
            self.add(e, "wkv.weight", "engram_proj", ((m.hc_mult + 1) * m.hidden_size, cols), self.lin)
            self.add(e, "q_weight", "engram_proj", (m.hc_mult, m.hidden_size), BF16)
            self.add(e, "k_weight", "engram_proj", (m.hc_mult, m.hidden_size), BF16)
        self.block(p, m.n_routed_experts)
        a = f"{p}.attn"
        if layer.owns_kv:  # only KV sources compress; ratio 1 (layer 20) is a bare bf16 projection
            r = layer.compress_ratio
            self.compressor(f"{a}.compressor", "compressor", r, m.head_dim, gate=r > 1, fmt=FP32 if r > 1 else BF16)
        if layer.produces_topk:  # every index source has its own query; only KV sources own index keys
            self.add(a, "indexer.wq_b.weight", "indexer", (m.index_n_heads * m.index_head_dim, m.q_lora_rank),
                     self.lin)
            self.add(a, "indexer.weights_proj.weight", "indexer", (m.index_n_heads, m.hidden_size), BF16)
            if layer.owns_kv:
                self.add(a, "indexer.wk.weight", "indexer", (m.index_head_dim, m.head_dim), BF16)
                self.norm(a, "indexer.k_norm.weight", m.index_head_dim)

    def v4_layer(self, layer: LayerSpec):
        m, p, r = self.m, f"layers.{layer.index}", layer.compress_ratio
        self.block(p, m.n_routed_experts, hash_routed=layer.index < m.num_hash_layers)
        if r:  # every compressed V4 layer owns its compressor; ratio 4 overlaps (2·head_dim) with APE
            self.compressor(f"{p}.attn.compressor", "compressor", r, m.head_dim, overlap=r == 4, ape=True)
        if r == 4:  # CSA: an indexer with its own overlapped compressor of index_head_dim
            a = f"{p}.attn.indexer"
            self.add(a, "wq_b.weight", "indexer", (m.index_n_heads * m.index_head_dim, m.q_lora_rank), self.lin)
            self.add(a, "weights_proj.weight", "indexer", (m.index_n_heads, m.hidden_size), BF16)
            self.compressor(f"{a}.compressor", "indexer", r, m.index_head_dim, overlap=True, ape=True)

    def drafts(self):
        m = self.m
        d, last = m.hidden_size, len(m.draft_blocks) - 1
        self.override = "dspark"
        for blk in m.draft_blocks:
            p = f"mtp.{blk.block}"
            self.block(p, blk.n_routed_experts)
            if not m.dspark_target_layer_ids:  # V4 MTP: embedding and hidden projections, own head mix
                for w in ("e_proj", "h_proj"):
                    self.add(p, f"{w}.weight", "dspark", (d, d), self.lin)
                for n in ("enorm", "hnorm", "norm"):
                    self.norm(p, f"{n}.weight", d)
                self.hc_head(p)
                continue
            # DSpark: model-facts §2 says only ONE mtp block carries markov_head, confidence_head and
            # main_proj; §8 and the V4-0731 loaders place main_proj on stage 0 and the heads on the last.
            if blk.block == 0:
                self.add(p, "main_proj.weight", "dspark", (d, len(m.dspark_target_layer_ids) * d), self.lin)
                self.norm(p, "main_norm.weight", d)
            if blk.block == last:
                r = m.dspark_markov_rank
                self.norm(p, "norm.weight", d)
                self.add(f"{p}.markov_head", "markov_w1.weight", "dspark", (m.vocab_size, r), BF16)
                self.add(f"{p}.markov_head", "markov_w2.weight", "dspark", (m.vocab_size, r), BF16)
                self.add(f"{p}.confidence_head", "proj.weight", "dspark", (1, d + r), FP32)
                if m.family == "v4":  # V4.1 collapses with the lagged pre-mix: no hc_head (facts §5)
                    self.hc_head(p)
        self.override = None

    def vision(self):
        """ViT + aligner, all bf16. Assumed (facts give only vision_config): no biases, a patch
        embedding flattened to [hidden, 3·patch²], pre-norm layers with fused qkv, SwiGLU MLP, and a
        2-layer aligner MLP from the downsample_ratio² merged patches to the model width."""
        v, h, self.override = self.m.vision, self.m.hidden_size, "vision"
        self.add("vision.patch_embed", "weight", "vision", (v.hidden_size, 3 * v.patch_size ** 2), BF16)
        for i in range(v.num_layers):
            p, hv = f"vision.layers.{i}", v.hidden_size
            self.add(p, "norm1.weight", "vision", (hv,), BF16)
            self.add(f"{p}.attn", "qkv.weight", "vision", (3 * hv, hv), BF16)
            self.add(f"{p}.attn", "proj.weight", "vision", (hv, hv), BF16)
            self.add(p, "norm2.weight", "vision", (hv,), BF16)
            self.swiglu(f"{p}.mlp", v.intermediate_size, "vision", BF16, d=hv)
        self.add("aligner", "fc1.weight", "vision", (h, v.hidden_size * v.downsample_ratio ** 2), BF16)
        self.add("aligner", "fc2.weight", "vision", (h, h), BF16)
        self.override = None


@cache
def inventory(model: ModelSpec) -> Inventory:
    """Every weight tensor of ``model`` with its storage format (cached: ModelSpec is frozen).

    Parameters
    ----------
    model: a loaded :class:`~v41graph.model.config.ModelSpec` (V4.1 or V4 family).

    Returns
    -------
    Inventory: the tensors, with exact byte totals by group and by module.

    >>> from v41graph import load_model
    >>> inv = inventory(load_model())
    >>> inv.count("compressor.wkv"), inv.count("compressor.wgate"), inv.count("indexer.wq_b")
    (4, 3, 8)
    >>> inv is inventory(load_model())
    True
    >>> inventory(load_model("deepseek-v4-flash")).bytes_by_group()["engram_tables"]
    0
    """
    b = _Builder(model)
    b.add("embed", "weight", "embedding", (model.vocab_size, model.hidden_size), BF16)
    if model.vision is not None:
        b.vision()
    for layer in model.layers:
        (b.v41_layer if model.family == "v4.1" else b.v4_layer)(layer)
    if model.family == "v4":  # V4 collapses the hc streams with a learned head mix (facts §5)
        b.hc_head("")
    b.norm("norm", "weight", model.hidden_size)
    b.add("head", "weight", "head", (model.vocab_size, model.hidden_size), BF16)
    b.drafts()
    names = {t.name for t in b.out}
    if len(names) != len(b.out):
        raise ConfigError(f"model {model.name!r}: the inventory names a tensor twice")
    return Inventory(model.name, tuple(b.out))
