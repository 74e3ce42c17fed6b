"""Interface ①: cache memory by owner, per request, as exact integers or sympy closed forms.

Storage is counted once per **owner** (docs/architecture.md, decision 3): V4.1's four KV sources each keep
⌊N/m⌋ main-KV entries (288 B) and index-K entries (68 B); every other compressed layer reads
them. SWA rings are per layer and saturate at the window. The partial compression group is
state kept beside the cache; the candidate pool is workspace and is not counted here.

>>> from v41graph import load_model
>>> from v41graph.model.memory import cache_memory
>>> from v41graph.symbols import N
>>> m = load_model()
>>> c = cache_memory(m, 1_048_576)
>>> c.global_entries, c.global_bytes
(2621440, 933232640)
>>> cache_memory(m, N).global_entries
N + 3*floor(N/2)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..algebra import Value, floordiv, smin, ssum
from ..errors import ConfigError
from ..reuse import Table, content_digest
from .config import ModelSpec
from .formats import FP32, INDEX_K_FP4, V4_KV, V41_MAIN_KV, V41_SWA_KV, EntryLayout


@dataclass(frozen=True)
class KVLayouts:
    """The cache entry layouts a model family stores."""

    main: EntryLayout
    index_k: EntryLayout
    swa: EntryLayout


def kv_layouts(model: ModelSpec) -> KVLayouts:
    """V4.1: FP4 main KV (288 B), FP4 index K (68 B), FP8 SWA (528 B); V4: 584 B main and SWA."""
    if model.family == "v4.1":
        return KVLayouts(V41_MAIN_KV, INDEX_K_FP4, V41_SWA_KV)
    return KVLayouts(V4_KV, INDEX_K_FP4, V4_KV)


@dataclass(frozen=True)
class OwnerCache:
    """Global cache one owner layer stores for one request."""

    owner: int
    ratio: int
    entries: Value  # ⌊N/m⌋ complete compressed groups
    main_kv_bytes: Value
    index_k_entries: Value
    index_k_bytes: Value
    partial_tokens: Value  # N mod m tokens waiting in an incomplete group (state, not "no cache")
    state_bytes: int  # compressor state buffers (kv_state + score_state, fp32), fixed per request


@dataclass(frozen=True)
class CacheMemory:
    """Cache memory of one request of ``context`` tokens."""

    context: Value
    owners: tuple[OwnerCache, ...]
    swa_layers: int
    swa_entries_per_layer: Value
    swa_payload_bytes: Value
    swa_bytes: Value
    dspark_swa_bytes: Value
    dspark_swa_payload_bytes: Value

    @property
    def global_entries(self) -> Value:
        """Main-KV entries summed over owners: C(N) = Σ_owners ⌊N/m⌋."""
        return ssum(o.entries for o in self.owners)

    @property
    def main_kv_bytes(self) -> Value:
        return ssum(o.main_kv_bytes for o in self.owners)

    @property
    def index_k_bytes(self) -> Value:
        return ssum(o.index_k_bytes for o in self.owners)

    @property
    def global_bytes(self) -> Value:
        """Long-lived global cache: main KV plus index K, one copy per owner."""
        return self.main_kv_bytes + self.index_k_bytes

    @property
    def state_bytes(self) -> int:
        return sum(o.state_bytes for o in self.owners)

    @property
    def total_bytes(self) -> Value:
        """Everything a request holds: global cache, SWA rings (with DSpark's), compressor state."""
        return self.global_bytes + self.swa_bytes + self.dspark_swa_bytes + self.state_bytes


def _state_bytes(model: ModelSpec, ratio: int, index_compressor: bool) -> int:
    # The reference Compressor keeps kv_state and score_state of [coff·m, coff·d] in fp32;
    # V4's ratio-4 compressor overlaps groups (coff = 2), V4.1's does not (coff = 1).
    coff = 2 if model.family == "v4" and ratio == 4 else 1
    if ratio <= 1:
        return 0
    dims = model.index_head_dim if index_compressor else model.head_dim
    return int(2 * FP32.bytes_for(coff * ratio * coff * dims))


def cache_memory(model: ModelSpec, context: Value, *, dspark: bool = False) -> CacheMemory:
    """Cache memory of one request that holds ``context`` tokens (an int or a sympy expression)."""
    if not hasattr(context, "free_symbols") and (isinstance(context, bool) or not isinstance(context, int)
                                                   or context < 0):
        raise ConfigError(f"context: must be a non-negative integer or a sympy expression, got {context!r}")
    owners = []
    layers, per_entry, (swa_payload, swa_entry) = _layout(model)
    for owner, m, has_index, state in layers:
        entries = floordiv(context, m)
        idx_entries = entries if has_index else 0
        owners.append(OwnerCache(
            owner=owner, ratio=m, entries=entries, main_kv_bytes=entries * per_entry[0],
            index_k_entries=idx_entries, index_k_bytes=idx_entries * per_entry[1],
            partial_tokens=context - entries * m, state_bytes=state))
    ring = smin(context, model.window)
    n_swa, n_draft = len(model.layers), len(model.draft_blocks) if dspark else 0
    return CacheMemory(
        context=context, owners=tuple(owners), swa_layers=n_swa, swa_entries_per_layer=ring,
        swa_payload_bytes=n_swa * ring * swa_payload, swa_bytes=n_swa * ring * swa_entry,
        dspark_swa_bytes=n_draft * ring * swa_entry, dspark_swa_payload_bytes=n_draft * ring * swa_payload)


#: per model content: :func:`_layout`
_LAYOUTS = Table()


def _layout(model: ModelSpec) -> tuple[tuple[tuple[int, int, bool, int], ...], tuple, tuple]:
    """The model's part of :func:`cache_memory`, read once per model content (every compile asks
    it per sequence): (layer, compress ratio, owns index K, compressor-state bytes) of each layer
    owning KV; bytes per main-KV and index-K entry; SWA payload and entry bytes."""
    key = content_digest(model)
    found = _LAYOUTS.get(key)
    if found is None:
        owners = []
        for layer in model.layers:
            if not layer.owns_kv:
                continue
            m = layer.compress_ratio
            # V4.1 KV sources own index K; in V4 only CSA layers have an indexer (with its own ratio-4 compressor).
            has_index = layer.index in model.index_source_ids
            indexer_state = _state_bytes(model, m, True) if has_index and model.family == "v4" else 0
            owners.append((layer.index, m, has_index, _state_bytes(model, m, False) + indexer_state))
        layouts = kv_layouts(model)
        found = _LAYOUTS[key] = (tuple(owners), (layouts.main.bytes, layouts.index_k.bytes),
                                 (layouts.swa.payload_bytes, layouts.swa.bytes))
    return found


def naive_global_bytes(model: ModelSpec, context: Value) -> Value:
    """Counterfactual: every compressed layer owning its own main KV and index K (no sharing).

    For V4.1-Flash this is 10,324 B/token against the real 890 (SPEC §4.3).

    >>> from v41graph import load_model
    >>> naive_global_bytes(load_model(), 2), cache_memory(load_model(), 2).global_bytes
    (20648, 1780)
    """
    layouts = kv_layouts(model)
    per_entry = layouts.main.bytes + layouts.index_k.bytes
    return ssum(floordiv(context, l.compress_ratio) * per_entry for l in model.layers if l.compress_ratio > 0)
