"""The layer layout: each backbone layer's path, stage, KV owner and Top-K producer.

V4.1: ratio 0 → ``swa``; a KV source → ``full``; an index source that is not a KV source →
``reindex``; otherwise ``reuse``. KV owner = max(kv source ≤ l), Top-K producer =
max(index source ≤ l). V4: ratio 4 → ``csa``, 128 → ``hca``, 0 → ``swa``; each compressed
layer owns its KV. :func:`v41graph.model.config.model_from_config` calls these after validating
the keys they read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .configkeys import Keys


@dataclass(frozen=True)
class LayerSpec:
    """One backbone layer: where its KV and Top-K come from, and what it carries."""

    index: int
    stage: str  # "encoder" | "decoder" (V4.1) or "backbone" (V4)
    path: str  # "swa" | "full" | "reindex" | "reuse" (V4.1); "swa" | "csa" | "hca" (V4)
    compress_ratio: int
    kv_owner: int | None
    topk_producer: int | None
    window: int
    candidate_source: bool = False  # builds the hierarchical candidate pool (V4.1 layer 20)
    candidate_user: bool = False  # scores inside the candidate pool (decoder Reindex)
    engram: bool = False  # an Engram module writes into the residual before this block
    dspark_target: bool = False  # DSpark reads this layer's attention input

    @property
    def owns_kv(self) -> bool:
        return self.kv_owner == self.index

    @property
    def produces_topk(self) -> bool:
        return self.topk_producer == self.index



@dataclass(frozen=True)
class DraftBlockSpec:
    """A DSpark draft block (``mtp.i``): SWA-only, with its own smaller MoE. Never a backbone layer."""

    index: int  # position in compress_ratios (40..42 for V4.1-Flash)
    block: int  # 0..n-1
    compress_ratio: int
    window: int
    n_routed_experts: int
    experts_per_token: int


def v41_layers(k: Keys, n: int, ratios, kv_src, idx_src, cand, engram, targets) -> tuple[LayerSpec, ...]:
    window = k.int("sliding_window", minimum=1)
    layers = []
    for l in range(n):
        m = ratios[l]
        owners = [s for s in kv_src if s <= l]
        producers = [s for s in idx_src if s <= l]
        if m == 0:
            path, owner, producer = "swa", None, None
        else:
            if not owners:
                raise ConfigError(f"config key '{k.name('compress_ratios')}': layer {l} has ratio {m} but no "
                                  f"KV source at or below it in kv_source_layer_ids {list(kv_src)}")
            owner, producer = owners[-1], producers[-1]
            if ratios[owner] != m:
                raise ConfigError(f"config key '{k.name('compress_ratios')}': layer {l} has ratio {m} but its "
                                  f"KV owner {owner} has ratio {ratios[owner]}")
            path = "full" if l in kv_src else "reindex" if l in idx_src else "reuse"
        layers.append(LayerSpec(
            index=l, stage="encoder" if l < n // 2 else "decoder", path=path, compress_ratio=m,
            kv_owner=owner, topk_producer=producer, window=window,
            candidate_source=(l == cand),
            candidate_user=(cand is not None and path == "reindex" and l > cand),
            engram=l in engram, dspark_target=l in targets))
    return tuple(layers)


def v4_layers(k: Keys, n: int, ratios, targets) -> tuple[LayerSpec, ...]:
    window = k.int("sliding_window", minimum=1)
    kinds = {0: "swa", 4: "csa", 128: "hca"}
    layers = []
    for l in range(n):
        m = ratios[l]
        if m not in kinds:
            raise ConfigError(f"config key '{k.name('compress_ratios')}': layer {l} has ratio {m}; "
                              f"DeepSeek-V4 supports 0, 4 and 128")
        path = kinds[m]
        layers.append(LayerSpec(
            index=l, stage="backbone", path=path, compress_ratio=m,
            kv_owner=None if m == 0 else l, topk_producer=l if path == "csa" else None,
            window=window, dspark_target=l in targets))
    return tuple(layers)
