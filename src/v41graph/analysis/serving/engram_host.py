"""Host-resident Engram: a hot cache in HBM, the missed rows prefetched over the host link.

With ``engram_residency='host'`` the tables (≈ 2 × 91.55 GiB) stay in host memory and each GPU
keeps an LRU **hot cache** of C rows per Engram layer. A decode step's rows are known as soon as its
tokens are (the hash needs only token ids), so the missed rows can be copied host → GPU while the
layers *before* the Engram layer run:

* missed rows per step: the batch's requests decode in lockstep, each over its own token history;
  their interleaved lookups run through the LRU cache and the misses of the last ``window`` steps
  are averaged (a steady-state figure, not the cold start);
* prefetch bytes = missed rows × 264 B; the host link serves the Engram layers in order, so layer
  1's rows land after bytes₁ / BW and layer 14's after (bytes₁ + bytes₁₄) / BW;
* deadline of layer l = the time its residual input is ready in the step's schedule (the layers
  before it) minus the ``wkv`` projection that must follow the rows; the prefetch is **hidden**
  when it lands by then, and otherwise stalls the step by the difference.

The schedule is the compiled decode step with the tables in HBM (the hot-cache reads are HBM
reads); the prefetch sits beside it on the host link.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from ...costs.requests.engram_cache import stack_distances
from ...costs.hardware import Hardware, load_hardware
from ...algebra import as_int
from ...errors import PlanError
from ...ir.engram_rows import request_rows
from ...ir.plan import Plan, Request
from ...workload.tokens import TokenContent
from ...model.config import ModelSpec
from ...model.engram_hash import HashLayout
from ...model.sharding import Mapping, rule_for_weight
from .engram_locality import row_bytes
from ...passes import compile


@dataclass(frozen=True)
class LayerPrefetch:
    layer: int
    rows_per_step: float  # lookups of the whole batch in one step
    missed_rows_per_step: float
    bytes: float
    lands_s: float  # when the host link has delivered this layer's rows (after earlier layers')
    deadline_s: float
    hidden: bool

    @property
    def stall_s(self) -> float:
        return max(0.0, self.lands_s - self.deadline_s)


def lockstep_misses(streams: Sequence[np.ndarray], cache_rows: int, window: int) -> float:
    """Mean misses per step over the last ``window`` lockstep steps of an LRU cache of ``cache_rows``.

    ``streams[i]`` is request i's lookups [positions, columns]; the streams are aligned at their
    ends (every request decodes its last position in the same step).
    """
    steps = min(len(s) for s in streams)
    if not 1 <= window <= steps:
        raise PlanError(f"engram prefetch window: must be in 1..{steps} steps, got {window}")
    cols = streams[0].shape[1]
    aligned = np.stack([s[len(s) - steps:] for s in streams], axis=1)  # [steps, requests, columns]
    d = stack_distances(aligned.reshape(-1))
    hit = ((d >= 0) & (d < cache_rows)).reshape(steps, len(streams) * cols)
    return float((~hit[-window:]).sum()) / window


def _deadlines(model: ModelSpec, batch: int, context: int, hw: Hardware, tp: int) -> dict[int, float]:
    compiled = compile(model, Plan([Request.decode(context, copies=batch)], tp=tp).check(model), hw)
    graph, slots = compiled.graph, compiled.graph.annotation("schedule")
    out = {}
    for lid in model.engram_layer_ids:
        gate, proj = f"L{lid}.engram.gate", f"L{lid}.engram.proj"
        if gate not in slots or proj not in slots:  # the fusion pass may have merged them
            raise PlanError(f"engram prefetch: the schedule has no {gate} / {proj} node to time against")
        residual = max(slots[e.src].finish for e in graph.inputs(gate) if e.src != proj)
        out[lid] = residual - (slots[proj].finish - slots[proj].start)
    return out


def prefetch_report(model: ModelSpec, layout: HashLayout, fold, contents: Sequence[TokenContent],
                    hardware: str | Hardware, cache_rows: int, *, window: int = 64, tp: int = 1) -> dict[str, Any]:
    """Host-link prefetch of one decode step of ``len(contents)`` requests with a hot cache per layer.

    Under tensor parallelism the tables are split by columns, so each GPU fetches 1/tp of every
    missed row over its own host link (figures are per GPU).
    """
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    if as_int(cache_rows) is None or cache_rows < 0:
        raise PlanError(f"engram hot cache: must be a non-negative number of rows, got {cache_rows!r}")
    cache_rows = int(cache_rows)  # a numpy integer is an int from here on (JSON, hashing)
    if not contents:
        raise PlanError("engram prefetch: needs at least one request's tokens")
    split = Mapping(tp=tp).weight_divisor(rule_for_weight(f"layers.{model.engram_layer_ids[0]}.engram.embed.weight"))
    rb = Fraction(row_bytes(model), split)  # per GPU
    context = min(len(c) for c in contents) - 1
    deadlines = _deadlines(model, len(contents), max(context, 1), hw, tp)
    rows = [request_rows(c, layout, fold) for c in contents]
    lands, layers = 0.0, []
    for lid in model.engram_layer_ids:
        missed = lockstep_misses([r.rows[lid] for r in rows], cache_rows, window)
        lands += float(missed * rb) / hw.host_bandwidth
        layers.append(LayerPrefetch(lid, len(contents) * layout.columns, missed, float(missed * rb), lands,
                                    deadlines[lid], lands <= deadlines[lid]))
    return {
        "hardware": hw.name, "host_bandwidth_bytes_per_s": hw.host_bandwidth, "batch": len(contents), "tp": tp,
        "context": context, "hot_cache_rows": cache_rows, "hot_cache_bytes_per_layer": int(cache_rows * rb),
        "window_steps": window, "sources": [c.source for c in contents],
        "layers": [{"layer": p.layer, "lookups_per_step": p.rows_per_step,
                    "missed_rows_per_step": p.missed_rows_per_step, "prefetch_bytes": p.bytes,
                    "lands_s": p.lands_s, "deadline_s": p.deadline_s, "hidden": p.hidden, "stall_s": p.stall_s}
                   for p in layers],
        "prefetch_bytes": sum(p.bytes for p in layers), "hidden": all(p.hidden for p in layers),
        "stall_s": max(p.stall_s for p in layers),
    }


def batch_contents(content: TokenContent, batch: int, length: int) -> list[TokenContent]:
    """``batch`` requests, request i holding tokens [i·length, (i+1)·length) of ``content``."""
    if batch * length > len(content):
        raise PlanError(f"engram prefetch: {batch} requests × {length} tokens need {batch * length:,} tokens; "
                        f"{content.source} has {len(content):,}")
    return [TokenContent.from_ids(content.ids[i * length:(i + 1) * length], source=f"{content.source}#{i}",
                                  tokenizer=content.tokenizer) for i in range(batch)]


def prefetch_workload(tokens: int, batch: int) -> Plan:
    """``engram --prefetch``'s workload, whose fit picks the deployment: ``batch`` decode requests sharing
    ``tokens`` (at least 2 each), the Engram tables in host memory.

    >>> r = prefetch_workload(2048, 8).requests[0]
    >>> r.kind, r.copies
    ('decode', 8)
    """
    if tokens // batch < 2:
        raise PlanError(f"engram --prefetch: {tokens} tokens over {batch} requests leave fewer than 2 per request")
    return Plan([Request.decode(tokens // batch, copies=batch)], engram_residency="host")


def prefetch_answer(model: ModelSpec, layout: HashLayout, fold, content: TokenContent, hardware, choice, *,
                    tokens: int, batch: int, cache_rows: int, checkpoints=()):
    """``engram --prefetch`` on the deployment ``choice`` (a ``MappingChoice``): ``content``'s first ``tokens``
    dealt over ``batch`` requests (:func:`batch_contents`), one decode step's prefetch
    (:func:`prefetch_report`, a window of up to 64 tokens) with the GPU count, priced on SOL."""
    from ..answer import Priced
    from ..basis import basis_record
    length = tokens // batch
    data = prefetch_report(model, layout, fold, batch_contents(content, batch, length), hardware, cache_rows,
                           window=min(64, length), tp=choice.mapping.tp)
    return Priced({**data, "gpus": choice.mapping.gpus}, basis_record("sol"), choice, tuple(checkpoints))


__all__ = ["LayerPrefetch", "batch_contents", "lockstep_misses", "prefetch_answer", "prefetch_report",
           "prefetch_workload"]
