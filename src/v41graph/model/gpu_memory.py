"""Per-GPU memory and fit: resident weights under the sharding table, the cache of the requests one
GPU serves, workspace, against the GPU's HBM capacity.

* **Weights** — each inventory tensor's bytes divided as its sharding row says
  (:meth:`~v41graph.model.sharding.Mapping.weight_divisor`): column / row / vocab splits over
  their TP group, routed experts over all GPUs (EP × MoE-TP), the rest replicated.
* **Cache** — KV, SWA rings and compressor state of every request on the GPU's DP rank, by
  owner (:func:`~v41graph.model.memory.cache_memory`). The latent KV is replicated across the
  attention TP group (``wkv`` and the compressors are replicated in both engines), so TP does not
  divide it; DP divides the requests (sharding-facts §2).
* **Workspace** — what the caller measured (the largest node's activations and the candidate
  pool from the cost pass), or 0 where there is no plan to measure.

**Fits** — one rule everywhere (``cost``, ``memory``, ``report``, ``sweep``, ``deploy``, the page):
weights + cache within :data:`STATIC_FRACTION` of HBM (the budget). The rest (:data:`RESERVE`) is what
serving engines keep back for activations, CUDA graphs and the allocator: vLLM's
``EngineArgs.gpu_memory_utilization = 0.90`` (``vllm/engine/arg_utils.py``), the same role as
SGLang's ``--mem-fraction-static`` (weights + KV pool over total memory). The workspace is shown
(``total_bytes`` is the raw HBM figure) but is the reserve's to hold, never part of the verdict.

``kv_tokens_fit`` answers the question users ask first: the longest context one request's cache
can hold in what the budget leaves after the weights (found by bisection on the exact,
non-linear cache curve: SWA saturates at the window, compressed entries grow as ⌊N/m⌋).

>>> from v41graph import load_model
>>> from v41graph.model.sharding import Mapping
>>> m = load_model()
>>> g = gpu_memory(m, Mapping(), 141_000_000_000, [(8192, 1)])
>>> g.fits, g.weights_bytes > 141_000_000_000
(False, True)
>>> gpu_memory(m, Mapping(tp=8, ep=8), 141_000_000_000, [(8192, 1)]).fits
True
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil
from typing import Sequence

from ..algebra import as_int, ceildiv
from ..errors import PlanError
from .config import ModelSpec
from .inventory import GROUPS, inventory
from .memory import cache_memory
from .sharding import Mapping, rule_for_weight

_MAX_CONTEXT = 1 << 40  # bisection bound: far beyond any model's context

#: HBM share serving engines hold back (activations, CUDA graphs, allocator); see the module doc
RESERVE = Fraction(1, 10)
STATIC_FRACTION = 1 - RESERVE
RESERVE_SOURCE = ("vLLM EngineArgs.gpu_memory_utilization = 0.90 (vllm/engine/arg_utils.py); SGLang "
                  "--mem-fraction-static plays the same role (weights + KV pool over total memory)")


def budget_bytes(capacity_bytes: int) -> int:
    """The bytes weights + cache may take on a GPU of ``capacity_bytes``: :data:`STATIC_FRACTION` of it.

    >>> budget_bytes(141_000_000_000)
    126900000000
    """
    return ceil(capacity_bytes * STATIC_FRACTION)


def weights_per_gpu(model: ModelSpec, mapping: Mapping) -> dict[str, int]:
    """Resident weight bytes one GPU holds, by inventory group (every group, in GROUPS order).

    >>> from v41graph import load_model
    >>> w = weights_per_gpu(load_model("deepseek-v4-flash"), Mapping(ep=8))
    >>> w["routed_experts"] * 8 == weights_per_gpu(load_model("deepseek-v4-flash"), Mapping())["routed_experts"]
    True
    >>> r = weights_per_gpu(load_model("deepseek-v4-flash"), Mapping(ep=8, redundant=32))["routed_experts"]
    >>> r * 256 == w["routed_experts"] * 288      # 36 expert slots per GPU instead of 32
    True
    """
    out = dict.fromkeys(GROUPS, 0)
    e = model.n_routed_experts
    for t, k in inventory(model).kinds():  # experts of one block share their shape, format and rule
        rule = rule_for_weight(t.name)
        if mapping.redundant and rule.name == "moe.experts" and t.name.startswith("layers.") and k % e == 0:
            k = k // e * (e + mapping.redundant)  # each layer holds E + R expert slots (EPLB replicas)
        out[t.group] += ceil(t.bytes / mapping.weight_divisor(rule)) * k
    return out


@dataclass(frozen=True)
class GpuMemory:
    """One GPU's memory under a mapping (bytes; ``shortfall`` is 0 when it fits): ``fits`` is
    weights + cache (``static_bytes``) within ``budget_bytes``; ``total_bytes`` (with the workspace)
    is the raw HBM figure."""

    capacity_bytes: int
    weights_by_group: dict[str, int]
    cache_bytes: int
    cache_by_kind: dict[str, int]
    workspace_bytes: int
    requests: int
    kv_tokens_fit: int

    @property
    def weights_bytes(self) -> int:
        return sum(self.weights_by_group.values())

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.cache_bytes + self.workspace_bytes

    @property
    def static_bytes(self) -> int:
        return self.weights_bytes + self.cache_bytes

    @property
    def budget_bytes(self) -> int:
        return budget_bytes(self.capacity_bytes)

    @property
    def fits(self) -> bool:
        return self.static_bytes <= self.budget_bytes

    @property
    def shortfall_bytes(self) -> int:
        return max(0, self.static_bytes - self.budget_bytes)


def kv_tokens_fit(model: ModelSpec, free_bytes: int, *, dspark: bool = False) -> int:
    """The largest context N whose one-request cache (KV, SWA, state) fits in ``free_bytes``.

    >>> from v41graph import load_model
    >>> m = load_model()
    >>> n = kv_tokens_fit(m, 10**9)
    >>> cache_memory(m, n).total_bytes <= 10**9 < cache_memory(m, n + 1).total_bytes
    True
    """
    def size(n: int) -> int:
        return int(cache_memory(model, n, dspark=dspark).total_bytes)

    if free_bytes < size(0):
        return 0
    lo, hi = 0, _MAX_CONTEXT  # size(lo) fits; size is non-decreasing in n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size(mid) <= free_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo


def engram_hot_cache_bytes(model: ModelSpec, mapping: Mapping, rows: int) -> int:
    """HBM of a hot cache of ``rows`` rows per Engram table, split over GPUs as the tables are.

    >>> from v41graph import load_model
    >>> engram_hot_cache_bytes(load_model(), Mapping(), 65536)    # 2 tables × 65,536 rows × 264 B
    34603008
    """
    tables = [t for t, _ in inventory(model).kinds() if t.group == "engram_tables" and t.shape[0] > 1]
    if as_int(rows) is None or rows < 0:
        raise PlanError(f"engram hot cache: must be a non-negative number of rows, got {rows!r}")
    rows = int(rows)  # a numpy integer is an int from here on (JSON, hashing)
    if tables and rows > min(t.shape[0] for t in tables):
        raise PlanError(f"engram hot cache: {rows:,} rows exceed the smallest Engram table "
                        f"({min(t.shape[0] for t in tables):,} rows)")
    return sum(ceildiv(rows * t.bytes, t.shape[0] * mapping.weight_divisor(rule_for_weight(t.name))) for t in tables)


def gpu_memory(model: ModelSpec, mapping: Mapping, capacity_bytes: int, contexts: Sequence[tuple[int, int]], *,
               workspace_bytes: int = 0, dspark: bool = False, engram_on_host: bool = False,
               engram_hot_cache_rows: int = 0) -> GpuMemory:
    """Memory of one GPU serving ``contexts`` — (tokens held, copies) of each request on its DP rank.

    ``engram_on_host``: the Engram tables live in host memory (``engram_residency='host'``); HBM keeps
    a hot cache of ``engram_hot_cache_rows`` rows per table (group ``engram_hot_cache``).
    """
    weights = weights_per_gpu(model, mapping)
    if engram_on_host:
        weights["engram_tables"] = 0
        weights["engram_hot_cache"] = engram_hot_cache_bytes(model, mapping, engram_hot_cache_rows)
    elif engram_hot_cache_rows:
        raise PlanError(f"engram hot cache: {engram_hot_cache_rows:,} rows asked for, but the Engram tables are "
                        f"in HBM (engram_residency 'hbm'); a hot cache goes with 'host'")
    kinds = {"main_kv": 0, "index_k": 0, "swa": 0, "compressor_state": 0}
    for context, copies in contexts:
        c = cache_memory(model, context, dspark=dspark)
        kinds["main_kv"] += int(c.main_kv_bytes) * copies
        kinds["index_k"] += int(c.index_k_bytes) * copies
        kinds["swa"] += int(c.swa_bytes + c.dspark_swa_bytes) * copies
        kinds["compressor_state"] += c.state_bytes * copies
    free = budget_bytes(capacity_bytes) - sum(weights.values())  # the workspace is the reserve's
    return GpuMemory(capacity_bytes, weights, sum(kinds.values()), kinds, workspace_bytes,
                     sum(n for _, n in contexts), kv_tokens_fit(model, free, dspark=dspark))
