"""Paged caches: how the serving engine's V4 memory pool lays a request's cache out in pages.

``memory.py`` counts exact entries (⌊N/m⌋ per owner). An engine allocates whole pages, so this
module counts what SGLang's ``DeepSeekV4TokenToKVPool`` holds (reference/kv-pool-facts.md §1):

- one **FULL page** covers ``PAGE_TOKENS`` = 256 tokens (SGLang's V4 default ``page_size`` on
  CUDA); a request of N tokens holds ⌈N/256⌉ FULL pages;
- each global-KV owner of ratio m keeps one compressed page of 256/m slots per FULL page
  (slot = token loc // m), so **a compressed page covers m × (256/m) = 256 tokens**, aligned
  with the FULL page; its bytes are ``ceil(slots·bpt / align)·align`` (kv_layout.py
  ``page_bytes``: 576 for the 584 B V4 layout, 512 for V41 528 B, 256 for V41_FP4 288 B);
- index K is paged in index pages (V4.1: ``DSV41_INDEX_PAGE_SIZE`` = 128 slots with DeepGEMM's
  paged sparse-MQA logits; V4: 256/4 = 64 slots), 68 B a slot, unpadded;
- SWA in paged mode keeps, per layer, the 256-token pages that hold the last ``window``
  tokens (slots behind the window are freed): one page, or two when the window straddles a
  page boundary.

>>> from v41graph import load_model
>>> p = paged_cache(load_model(), 4096)
>>> p.full_pages, p.global_page_bytes, p.global_bytes
(16, 227840, 3645440)
>>> paged_cache(load_model(), 4097).full_pages      # one token more: a whole page more
17
"""

from __future__ import annotations

from dataclasses import dataclass

from ..algebra import as_int, ceildiv
from ..errors import ConfigError
from .config import ModelSpec
from .memory import kv_layouts

#: tokens per FULL page: SGLang ``apply_deepseek_v4_defaults`` sets ``page_size = 256`` (CUDA)
PAGE_TOKENS = 256
#: the scheduler's largest prefill chunk: SGLang's ``chunked_prefill_size`` heuristic on 80–160 GB
#: GPUs (UNVERIFIED); ``simulate`` chunks prompts by it and ``sweep`` sizes prefill by it
CHUNKED_PREFILL_SIZE = 8192
#: kv_layout.py ``page_align`` per entry layout (the index-K pool is not padded)
PAGE_ALIGN = {"v4_kv": 576, "v41_swa_kv": 512, "v41_main_kv": 256, "index_k_fp4": 1}
#: index-K slots per index page: V4.1 ``DSV41_INDEX_PAGE_SIZE`` (DeepGEMM paged), V4 page_size // 4
INDEX_PAGE_SLOTS = {"v4.1": 128, "v4": PAGE_TOKENS // 4}


def page_bytes(slots: int, entry_bytes: int, align: int) -> int:
    """Bytes of one page of ``slots`` entries, padded up to a multiple of ``align``.

    >>> page_bytes(64, 584, 576), page_bytes(2, 584, 576), page_bytes(256, 528, 512)
    (37440, 1728, 135168)
    """
    return ceildiv(slots * entry_bytes, align) * align


@dataclass(frozen=True)
class OwnerPages:
    """Bytes one global-KV owner adds per FULL page: its compressed page and its index pages."""

    owner: int
    ratio: int
    slots: int            # compressed slots per FULL page: 256 / m
    main_page_bytes: int
    index_pages: int      # index pages per FULL page (0 for an owner without index K)
    index_page_bytes: int

    @property
    def bytes_per_full_page(self) -> int:
        return self.main_page_bytes + self.index_pages * self.index_page_bytes


@dataclass(frozen=True)
class PagedCache:
    """One request's cache of ``context`` tokens, in pages."""

    context: int
    owners: tuple[OwnerPages, ...]
    full_pages: int           # ⌈N/256⌉
    swa_layers: int
    swa_pages_per_layer: int  # pages holding the last `window` tokens
    swa_page_bytes: int

    @property
    def global_page_bytes(self) -> int:
        """Global KV (main + index K over every owner) per FULL page."""
        return sum(o.bytes_per_full_page for o in self.owners)

    @property
    def global_bytes(self) -> int:
        return self.full_pages * self.global_page_bytes

    @property
    def swa_pages(self) -> int:
        return self.swa_layers * self.swa_pages_per_layer

    @property
    def swa_bytes(self) -> int:
        return self.swa_pages * self.swa_page_bytes


def swa_window_pages(context: int, window: int) -> int:
    """256-token pages that hold positions [max(0, N − window), N).

    >>> swa_window_pages(256, 128), swa_window_pages(300, 128), swa_window_pages(384, 128)
    (1, 2, 1)
    """
    if context == 0:
        return 0
    return (context - 1) // PAGE_TOKENS - max(0, context - window) // PAGE_TOKENS + 1


def owner_pages(model: ModelSpec) -> tuple[OwnerPages, ...]:
    """Per-owner page bytes of ``model``'s global KV (one row per KV-owning layer)."""
    layouts = kv_layouts(model)
    index_slots = INDEX_PAGE_SLOTS[model.family]
    out = []
    for layer in model.layers:
        if not layer.owns_kv:
            continue
        m = layer.compress_ratio
        if PAGE_TOKENS % m:
            raise ConfigError(f"compress_ratio {m} of layer {layer.index}: does not divide the page of "
                              f"{PAGE_TOKENS} tokens")
        slots = PAGE_TOKENS // m
        has_index = layer.index in model.index_source_ids
        out.append(OwnerPages(
            owner=layer.index, ratio=m, slots=slots,
            main_page_bytes=page_bytes(slots, layouts.main.bytes, PAGE_ALIGN[layouts.main.name]),
            index_pages=ceildiv(slots, index_slots) if has_index else 0,
            index_page_bytes=page_bytes(index_slots, layouts.index_k.bytes, PAGE_ALIGN[layouts.index_k.name])))
    return tuple(out)


def paged_cache(model: ModelSpec, context: int) -> PagedCache:
    """The pages one request of ``context`` tokens holds (paged SWA mode)."""
    if as_int(context) is None or context < 0:
        raise ConfigError(f"context: must be a non-negative integer for paged memory, got {context!r}")
    context = int(context)  # a numpy integer is an int from here on
    swa = kv_layouts(model).swa
    return PagedCache(
        context=context, owners=owner_pages(model), full_pages=ceildiv(context, PAGE_TOKENS),
        swa_layers=len(model.layers), swa_pages_per_layer=swa_window_pages(context, model.window),
        swa_page_bytes=page_bytes(PAGE_TOKENS, swa.bytes, PAGE_ALIGN[swa.name]))


def pages_that_fit(model: ModelSpec, free_bytes: int) -> int:
    """FULL pages of global KV that ``free_bytes`` holds: the pool's capacity in pages.

    >>> from v41graph import load_model
    >>> pages_that_fit(load_model(), 227840 * 10 + 1)
    10
    """
    if as_int(free_bytes) is None or free_bytes < 0:
        raise ConfigError(f"free_bytes: must be a non-negative integer, got {free_bytes!r}")
    free_bytes = int(free_bytes)
    per_page = sum(o.bytes_per_full_page for o in owner_pages(model))
    return free_bytes // per_page


def pool_pages(model: ModelSpec, mapping, capacity_bytes: int, *, engram_on_host: bool = False) -> int:
    """FULL pages one GPU's global-KV pool holds: its capacity less its resident weights (sharded
    by ``mapping``; without the Engram tables when they live in host memory), in pages. Under DP
    attention each rank has its own pool: × dp.

    >>> from v41graph import load_model
    >>> from v41graph.model.gpu_memory import weights_per_gpu
    >>> from v41graph.model.sharding import Mapping
    >>> m, mapping = load_model(), Mapping(tp=8, ep=8)
    >>> w = sum(weights_per_gpu(m, mapping).values())
    >>> pool_pages(m, mapping, 141_000_000_000) == (141_000_000_000 - w) // 227_840
    True
    """
    from .gpu_memory import weights_per_gpu
    weights = weights_per_gpu(model, mapping)
    if engram_on_host:
        weights["engram_tables"] = 0
    free = capacity_bytes - sum(weights.values())
    if free <= 0:
        raise ConfigError(f"kv pool: the weights on one GPU ({capacity_bytes - free:,} B) leave no room in "
                          f"{capacity_bytes:,} B")
    return pages_that_fit(model, free) * mapping.dp
