"""Prefix-cache restore: two state domains over storage tiers, and what a request persists.

A prefix hit has two domains with their own hit states and lifetimes (reference/kv-pool-facts.md §2):

- **global KV** (main KV + index K of every owner, paged): kept long (the paper: ≥ 72 h) in a
  tier — HBM, host DRAM, SSD or a remote store — and fetched into HBM on a hit;
- **SWA state** (the last ``window`` tokens of every layer): short-lived (minutes). If it was
  lost, encoder bounded replay recomputes the prefix's last window
  (``Request.extend(P, S, swa_cached=False)`` with ``Plan(encoder_restore="bounded")``); the
  replay is part of the extend forward.

**Overlap, by dependencies.** The forward runs layer by layer. Layer l needs the global KV of the
owner it reads (``kv_owner``) and layer l − 1's output; SWA-only layers need no fetch. The owners'
pages arrive one owner after another, in layer order, over the tier's link. So a layer starts at
max(previous layer done, its owner fetched), and the forward time is shared equally over the
layers (an approximation: the schedule's total over ``len(layers)``).

>>> from v41graph import load_model
>>> r = restore_timeline(load_model(), prefix=65536, fetch_bandwidth=64_000_000_000, latency_s=0.0,
...                      forward_s=0.040)
>>> r.fetch_bytes, round(r.fetch_s * 1e3, 4)
(58327040, 0.9114)
>>> r.done_s                      # every owner arrives before its first reader: the fetch is hidden
0.04
>>> r = restore_timeline(load_model(), prefix=65536, fetch_bandwidth=64_000_000_000, latency_s=0.0,
...                      forward_s=0.0004)
>>> round(r.done_s * 1e3, 4)      # layers 20..39 wait for owner 20 (all 58.3 MB) then run 20 × 10 µs
1.1114
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ...algebra import as_int, ceildiv
from ...errors import CostError
from ...model.config import ModelSpec
from ...model.memory import cache_memory
from ...model.paging import PAGE_TOKENS, owner_pages, paged_cache


@dataclass(frozen=True)
class Persisted:
    """What one request of ``context`` tokens leaves in the prefix cache, paged."""

    context: int
    global_bytes: int   # every owner's main KV + index K pages
    swa_bytes: int      # the SWA window pages of every layer

    @property
    def with_swa(self) -> int:
        return self.global_bytes + self.swa_bytes

    @property
    def without_swa(self) -> int:
        return self.global_bytes


def persisted(model: ModelSpec, context: int) -> Persisted:
    """Persisted bytes with and without SWA for one request of ``context`` tokens."""
    p = paged_cache(model, context)
    return Persisted(context, p.global_bytes, p.swa_bytes)


@dataclass(frozen=True)
class FamilyRatios:
    """V4.1 / V4-Flash at one length: global KV per token (exact entries and paged), and persisted
    caches (V4.1 without SWA against V4-Flash with its SWA window pages)."""

    context: int
    global_exact: Fraction
    global_paged: Fraction
    persisted_no_swa: Fraction


def family_ratios(v41: ModelSpec, v4: ModelSpec, context: int) -> FamilyRatios:
    """Ratios of ``v41``'s caches to ``v4``'s at ``context`` tokens (exact fractions).

    >>> from v41graph import load_model
    >>> r = family_ratios(load_model(), load_model("deepseek-v4-flash"), 1_048_576)
    >>> float(r.global_exact), float(r.global_paged)
    (0.25325460624599844, 0.24977197782922894)
    """
    exact = Fraction(cache_memory(v41, context).global_bytes, cache_memory(v4, context).global_bytes)
    a, b = persisted(v41, context), persisted(v4, context)
    return FamilyRatios(context, exact, Fraction(a.global_bytes, b.global_bytes),
                        Fraction(a.without_swa, b.with_swa))


@dataclass(frozen=True)
class RestoreTimeline:
    """A forward that waits on a prefix's global KV from a tier, layer by layer."""

    fetch_bytes: int
    fetch_s: float    # latency + all owners' bytes / bandwidth (the transfer alone)
    forward_s: float  # the forward alone (suffix, plus the SWA replay when the SWA was lost)
    done_s: float     # both, overlapped as their dependencies allow

    @property
    def exposed_fetch_s(self) -> float:
        """What the fetch adds to the forward: done − forward."""
        return self.done_s - self.forward_s


def restore_timeline(model: ModelSpec, *, prefix: int, fetch_bandwidth: int | None, latency_s: float,
                     forward_s: float) -> RestoreTimeline:
    """Overlap the fetch of ``prefix`` tokens' global KV with a forward of ``forward_s`` seconds.

    ``fetch_bandwidth`` None means the prefix is in HBM already (nothing to fetch).
    """
    if not forward_s >= 0:
        raise CostError(f"restore forward_s: must be >= 0 seconds, got {forward_s!r}")
    if as_int(prefix) is None or prefix < 0:
        raise CostError(f"restore prefix: must be a non-negative integer, got {prefix!r}")
    prefix = int(prefix)  # a numpy integer is an int from here on (JSON, hashing)
    pages = ceildiv(prefix, PAGE_TOKENS)
    owners = owner_pages(model)
    arrive, t, total = {}, (latency_s if fetch_bandwidth and prefix else 0.0), 0
    for o in owners:  # in layer order over one link
        nbytes = pages * o.bytes_per_full_page
        total += nbytes
        t += nbytes / fetch_bandwidth if fetch_bandwidth else 0.0
        arrive[o.owner] = t
    # layer i starts at i·share + the stalls so far, or when its owner has arrived, whichever is later;
    # counting the stalls (not re-adding shares) keeps done == forward exactly when nothing waits
    per_layer, stall = forward_s / len(model.layers), 0.0
    for i, layer in enumerate(model.layers):
        ready = arrive.get(layer.kv_owner, 0.0) if layer.compress_ratio > 0 else 0.0
        stall += max(0.0, ready - (i * per_layer + stall))
    fetch = t if fetch_bandwidth and prefix else 0.0
    return RestoreTimeline(total if fetch_bandwidth else 0, fetch, forward_s, forward_s + stall)
