"""The model as data: :class:`ModelSpec` (and :class:`VisionSpec`), what a parsed and validated
config.json says (``model/config.py`` parses, validates and loads; this module holds no checks).

>>> from v41graph import load_model
>>> load_model().family, load_model().num_layers
('v4.1', 40)
"""

from __future__ import annotations

from dataclasses import dataclass

from .layout import DraftBlockSpec, LayerSpec


@dataclass(frozen=True)
class VisionSpec:
    """The vision tower (ViT) and projector shapes from ``vision_config``."""

    num_layers: int
    hidden_size: int
    num_heads: int
    intermediate_size: int
    patch_size: int
    downsample_ratio: int
    max_image_tokens: int
    min_pixels: int = 0  # the image processor's lower bound on resized width × height


@dataclass(frozen=True)
class ModelSpec:
    """A validated DeepSeek-V4 / V4.1 model description."""

    name: str
    family: str  # "v4.1" | "v4"
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    head_dim: int
    rope_head_dim: int
    q_lora_rank: int
    o_lora_rank: int
    o_groups: int
    n_routed_experts: int
    n_shared_experts: int
    experts_per_token: int
    moe_intermediate_size: int
    window: int
    compress_ratios: tuple[int, ...]
    kv_source_ids: tuple[int, ...]
    index_source_ids: tuple[int, ...]
    index_n_heads: int
    index_head_dim: int
    index_topk: int
    candidate_source_id: int | None
    candidate_topk_blocks: int
    candidate_block_size: int
    hc_mult: int
    hc_sinkhorn_iters: int
    engram_layer_ids: tuple[int, ...]
    engram_num_embeddings: tuple[int, ...]
    engram_max_ngram_size: int
    engram_n_heads: int
    engram_head_dim: int
    num_hash_layers: int
    weight_block: int
    dspark_block_size: int
    dspark_target_layer_ids: tuple[int, ...]
    dspark_markov_rank: int
    vision: VisionSpec | None
    layers: tuple[LayerSpec, ...]
    draft_blocks: tuple[DraftBlockSpec, ...]
    max_position: int | None = None  # max_position_embeddings; None: no limit (lifted on purpose)
    expert_dtype: str = "fp4"  # routed experts' storage: "fp4" (official) | "fp8" (e.g. an FP8 re-quantisation)
    #: the Hugging Face id of the checkpoint this is (model/checkpoints.py); None: unknown (a config.json by path)
    checkpoint: str | None = None

    @property
    def lagged_mhc(self) -> bool:
        """V4.1 collapses each sublayer's input with the previous sublayer's pre-mix (single-pass mHC)."""
        return self.family == "v4.1"

    @property
    def candidate_pool_positions(self) -> int:
        return self.candidate_topk_blocks * self.candidate_block_size

    @property
    def kv_owners(self) -> tuple[int, ...]:
        """Layers that own global KV storage (V4.1: the KV sources; V4: every compressed layer)."""
        return tuple(l.index for l in self.layers if l.owns_kv)

    def path_counts(self) -> dict[str, int]:
        """Number of backbone layers per path, in a fixed key order."""
        keys = ("swa", "full", "reindex", "reuse") if self.family == "v4.1" else ("swa", "csa", "hca")
        return {k: sum(1 for l in self.layers if l.path == k) for k in keys}
