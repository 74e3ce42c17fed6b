"""Interface ①: the physical module inventory — every weight tensor, its storage format, its bytes.

Resident weight bytes come from here only: they do not depend on the plan, on replay, or on how
often a layer runs (SPEC §1.3). Names follow the checkpoint (no ``model.`` prefix, model-facts §2):
``embed.weight``, ``layers.3.attn.wq_a.weight``, ``layers.1.engram.embed.weight``,
``mtp.0.ffn.experts.5.w1.weight``, ``vision.*``, ``aligner.*``. A block-scaled tensor's bytes include
its scale tensor (``….scale`` in the checkpoint), so scales are not listed separately.

Storage choices (model-facts §9 unless said otherwise):

* linear projections: FP8 e4m3 with ue8m0 blocks (32×32 in V4.1, 128×128 in V4);
* routed experts: FP4 e2m1, one ue8m0 per 32 along K (``expert_dtype`` fp4, both official checkpoints), or
  the linear FP8 block format with ``expert_dtype`` fp8 (:func:`~v41graph.model.modules.expert_format`);
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
from functools import cached_property
from math import ceil, prod

from . import modules
from ..errors import ConfigError
from ..reuse import Table, cached
from .config import ModelSpec
from .formats import BF16, FP4_E2M1_E4M3_G16, FP4_E2M1_UE8M0_G32, FP8_E4M3_B32, FP8_E4M3_B128, FP8_E4M3_G32, Format
from .modules import Tensors

#: bytes_by_group() order: model input → attention family → mixing → FFN → memory → extras
GROUPS = ("embedding", "head", "attention", "compressor", "indexer", "norms", "mhc", "moe_gate",
          "routed_experts", "shared_experts", "engram_tables", "engram_proj", "dspark", "vision")

# One scale covers a (rows × cols) tile of the last two dims: a 2-D block for linear weights, a 1×K
# group along the reduction dim for experts and Engram rows. A scaled format without a tile raises.
_SCALE_TILES = {FP8_E4M3_B32.name: (32, 32), FP8_E4M3_B128.name: (128, 128),
                FP8_E4M3_G32.name: (1, 32), FP4_E2M1_UE8M0_G32.name: (1, 32), FP4_E2M1_E4M3_G16.name: (1, 16)}
#: bytes by (shape, format name), with the format they were counted in: a V4.1 checkpoint's ~48k
#: tensors are a few dozen kinds (256 experts of one shape per layer), each counted once per process
_KIND_BYTES = Table()


@dataclass(frozen=True, slots=True)  # slots: a V4.1 inventory holds ~48k of them, none needs a __dict__
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

    @property  # not cached_property: its lock costs more than the lookup in _KIND_BYTES
    def bytes(self) -> int:
        """Payload plus scale bytes, exact; scale tiles are rounded up at ragged edges."""
        known = _KIND_BYTES.get((self.shape, self.format.name))
        if known is not None and (known[0] is self.format or known[0] == self.format):
            return known[1]
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
        _KIND_BYTES[self.shape, self.format.name] = (self.format, int(total))
        return int(total)


@dataclass(frozen=True)
class TensorBlock:
    """``count`` experts' tensors of one module, alike but for their index: for e in 0…count−1, each
    (leaf, shape) of ``leaves`` is ``{module}.{prefix}{e}.{leaf}`` (a V4.1 layer holds 384 × 3)."""

    module: str
    prefix: str
    count: int
    leaves: tuple[tuple[str, tuple[int, ...]], ...]
    group: str
    format: Format

    def first(self) -> tuple[WeightTensor, ...]:
        """The block's first expert: its tensors stand for every expert's (same shapes, format, rule)."""
        return tuple(WeightTensor(f"{self.module}.{self.prefix}0.{leaf}", self.module, self.group, shape, self.format)
                     for leaf, shape in self.leaves)

    def tensors(self) -> tuple[WeightTensor, ...]:
        return tuple(WeightTensor(f"{self.module}.{self.prefix}{e}.{leaf}", self.module, self.group, shape, self.format)
                     for e in range(self.count) for leaf, shape in self.leaves)


@dataclass(frozen=True)
class Inventory:
    """All weight tensors of one model: embed, vision, layers, final norm and head, draft blocks.

    ``entries`` keeps each layer's routed experts as one :class:`TensorBlock`; ``tensors`` lists
    every tensor (made on first use). Byte totals are counted per kind of tensor, not per tensor.
    """

    model: str
    entries: tuple[WeightTensor | TensorBlock, ...]

    @cached_property
    def tensors(self) -> tuple[WeightTensor, ...]:
        """Every tensor, in checkpoint order."""
        out: list[WeightTensor] = []
        for e in self.entries:
            if isinstance(e, TensorBlock):
                out += e.tensors()
            else:
                out.append(e)
        return tuple(out)

    def kinds(self):
        """(tensor, how many tensors like it) for every entry: a block's first expert stands for all."""
        for e in self.entries:
            if isinstance(e, TensorBlock):
                for t in e.first():
                    yield t, e.count
            else:
                yield e, 1

    @cached_property
    def total_bytes(self) -> int:
        return sum(t.bytes * k for t, k in self.kinds())

    def bytes_by_group(self) -> dict[str, int]:
        """Bytes per group, every group of :data:`GROUPS` present (0 when empty), in that order."""
        out = dict.fromkeys(GROUPS, 0)
        for t, k in self.kinds():
            out[t.group] += t.bytes * k
        return out

    def bytes_by_module(self) -> dict[str, int]:
        """Bytes per module (``layers.3.attn``, ``layers.3.ffn``, ``embed`` …) in first-seen order."""
        out: dict[str, int] = {}
        for t, k in self.kinds():
            out[t.module] = out.get(t.module, 0) + t.bytes * k
        return out

    def count(self, name_substring: str) -> int:
        """Number of tensors whose name contains ``name_substring``."""
        return sum(1 for t in self.tensors if name_substring in t.name)


@cached(None)
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
    b = Tensors(model)
    b.add("embed", "weight", "embedding", (model.vocab_size, model.hidden_size), BF16)
    if model.vision is not None:
        modules.vision(b)
    for layer in model.layers:
        (modules.v41_layer if model.family == "v4.1" else modules.v4_layer)(b, layer)
    if model.family == "v4":  # V4 collapses the hc streams with a learned head mix (facts §5)
        modules.hc_head(b, "")
    b.norm("norm", "weight", model.hidden_size)
    b.add("head", "weight", "head", (model.vocab_size, model.hidden_size), BF16)
    modules.drafts(b)
    entries = tuple(TensorBlock(*fields[1:]) if fields[0] == "block" else WeightTensor(*fields) for fields in b.out)
    names = [t.name for t in entries if isinstance(t, WeightTensor)]
    blocks = [f"{e.module}.{e.prefix}" for e in entries if isinstance(e, TensorBlock)]  # a block's names start so
    if len(set(names)) != len(names) or len(set(blocks)) != len(blocks) or any(
            n.startswith(p) and n[len(p):].split(".", 1)[0].isdigit() for p in blocks for n in names):
        raise ConfigError(f"model {model.name!r}: the inventory names a tensor twice")
    return Inventory(model.name, entries)
