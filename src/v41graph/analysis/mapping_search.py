"""Which mapping a deployment runs on: the smallest that fits, or the one asked for, with its verdict.

``auto`` walks GPU counts 1, 2, 4, … and takes the first mapping whose per-GPU *static* memory —
resident weights under the sharding table plus the cache of the plan's requests on one DP rank —
fits in :data:`~v41graph.model.gpu_memory.STATIC_FRACTION` of the GPU's HBM, the one rule for
"fits" (``model/gpu_memory.py``). The rest (``RESERVE``) is what serving engines keep back for
activations, CUDA graphs and the allocator: vLLM's ``EngineArgs.gpu_memory_utilization = 0.90``
(``vllm/engine/arg_utils.py``), the same role as SGLang's ``--mem-fraction-static`` (weights + KV
pool over total memory; its default is a heuristic of the GPU's size and the TP degree, about
0.8–0.9 on 80–141 GB GPUs). The
per-request cache is replicated across the attention TP group and split by request over DP
(``reference/sharding-facts.md`` §2), so only DP and EP beyond 8 GPUs relieve it.

At each GPU count ``G`` the candidate is the layout the engines use for V4: attention TP as wide
as the heads and ``wo_a`` groups allow (at most ``G``), attention DP for the rest, and EP over all
``G`` GPUs (DeepEP) — at 8 GPUs ``tp 8 · ep 8``.

An explicit mapping is never replaced: :func:`explicit` returns it with its verdict and shortfall,
and the caller prints the shortfall first.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.costs.hardware import load_hardware
>>> c = smallest_fitting(load_model(), load_hardware("h200_sxm"), Plan([Request.decode(8192, copies=64)]))
>>> c.line()
'8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)'
>>> c.fits, round(c.budget_bytes / 2**30, 2)
(True, 118.18)
>>> x = explicit(load_model(), load_hardware("h200_sxm"), Plan([Request.prefill(8192)]))
>>> x.fits, x.line()
(False, '1 × h200_sxm: tp 1 (explicit)')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..costs.hardware import Hardware
from ..ir.dp import rank_copies
from ..ir.plan import Plan
from ..model.config import ModelSpec
from ..model.gpu_memory import RESERVE, RESERVE_SOURCE, STATIC_FRACTION, budget_bytes, gpu_memory  # noqa: F401
from ..model.sharding import DP_SPELLINGS, Mapping, mapping_of

#: the largest GPU count auto tries (8 nodes of 8): past it the plan is reported as not fitting
MAX_GPUS = 64


@dataclass(frozen=True)
class MappingChoice:
    """A mapping with how it was chosen and its static-memory verdict against the reserve."""

    mapping: Mapping
    how: str                 # "auto" | "explicit"
    spelling: str            # "replicas" (--dp) | "attn-dp" (SGLang --enable-dp-attention)
    hardware: str
    static_bytes: int        # weights + cache per GPU
    budget_bytes: int        # STATIC_FRACTION of the GPU's HBM

    @property
    def fits(self) -> bool:
        return self.static_bytes <= self.budget_bytes

    @property
    def shortfall_bytes(self) -> int:
        return max(0, self.static_bytes - self.budget_bytes)

    def degrees(self) -> str:
        m = self.mapping
        if self.spelling == "attn-dp":  # SGLang's own words: tp is the whole TP group
            parts = [f"tp {m.tp * m.dp}", f"attn-dp {m.dp}"]
        else:
            parts = [f"tp {m.tp}"] + ([f"dp {m.dp}"] if m.dp > 1 else [])
        # the a2a backend is named when it is not the default DeepEP (SGLang --moe-a2a-backend none: all-reduce)
        ep = [f"ep {m.ep}"] + (["no a2a (MoE all-reduce)"] if m.a2a == "none" else []) if m.ep > 1 else []
        return " · ".join(parts + ep)

    def line(self) -> str:
        """``8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)``."""
        why = "auto: smallest that fits" if self.how == "auto" and self.fits else \
            f"auto: nothing up to {MAX_GPUS} GPUs fits; the largest tried" if self.how == "auto" else "explicit"
        if self.spelling == "attn-dp":
            why += f"; SGLang DP attention: attention TP {self.mapping.tp} × DP {self.mapping.dp} inside the TP group"
        elif self.mapping.dp > 1:
            why += "; --dp: attention replicas, GPUs = tp × dp"
        return f"{self.mapping.gpus} × {self.hardware}: {self.degrees()} ({why})"

    def shortfall_line(self) -> str | None:
        """The first line of an answer for a mapping that does not fit; None when it fits."""
        if self.fits:
            return None
        gib = 1 << 30
        return (f"does NOT fit: {self.line()} needs {self.static_bytes / gib:,.2f} GiB per GPU of weights and "
                f"cache, {self.shortfall_bytes / gib:,.2f} GiB over {self.budget_bytes / gib:,.2f} GiB "
                f"({float(STATIC_FRACTION):.0%} of HBM; the figures below are for a deployment that cannot run)")

    def summary(self) -> dict[str, Any]:
        """JSON-ready: the degrees, the GPU count, how it was chosen and the verdict."""
        m = self.mapping
        return {"tp": m.tp, "dp": m.dp, "ep": m.ep, "gpus": m.gpus, "hardware": self.hardware, "chosen": self.how,
                "dp_spelling": self.spelling, "dp_meaning": DP_SPELLINGS[self.spelling], "line": self.line(),
                "static_bytes": self.static_bytes, "budget_bytes": self.budget_bytes, "fits": self.fits,
                "shortfall_bytes": self.shortfall_bytes, "reserve": float(RESERVE), "reserve_source": RESERVE_SOURCE}


def static_bytes(model: ModelSpec, hardware: Hardware, plan: Plan) -> int:
    """Weights plus the cache of the plan's requests on one GPU (its DP rank's share), under the plan's mapping."""
    contexts = [(r.end, c) for r, c in zip(plan.requests, rank_copies(plan)) if c != 0]
    g = gpu_memory(model, mapping_of(plan), hardware.hbm_capacity, contexts, dspark=plan.dspark == "on",
                   engram_on_host=plan.engram_residency == "host")
    return g.static_bytes


def _choice(model, hardware, plan, how, spelling) -> MappingChoice:
    return MappingChoice(mapping_of(plan), how, spelling, hardware.name, static_bytes(model, hardware, plan),
                         budget_bytes(hardware.hbm_capacity))


def explicit(model: ModelSpec, hardware: Hardware, plan: Plan, spelling: str = "replicas") -> MappingChoice:
    """The plan's own mapping with its verdict (never replaced)."""
    return _choice(model, hardware, plan.check(model), "explicit", spelling)


def candidates(model: ModelSpec, max_gpus: int = MAX_GPUS) -> list[Mapping]:
    """One mapping per GPU count 1, 2, 4, …: widest legal attention TP, DP for the rest, EP over all GPUs.

    >>> from v41graph import load_model
    >>> [(m.tp, m.dp, m.ep) for m in candidates(load_model(), 16)]
    [(1, 1, 1), (2, 1, 2), (4, 1, 4), (8, 1, 8), (8, 2, 16)]
    """
    out, gpus = [], 1
    while gpus <= max_gpus:
        tp = max(t for t in range(1, gpus + 1)
                 if gpus % t == 0 and model.num_heads % t == 0 and model.o_groups % t == 0)
        ep = max(e for e in range(1, gpus + 1) if gpus % e == 0 and model.n_routed_experts % e == 0)
        if max(tp * (gpus // tp), ep) == gpus:
            out.append(Mapping(tp=tp, dp=gpus // tp, ep=ep))
        gpus *= 2
    return out


def smallest_fitting(model: ModelSpec, hardware: Hardware, plan: Plan, max_gpus: int = MAX_GPUS) -> MappingChoice:
    """The first of :func:`candidates` whose static memory fits the reserve; else the largest, not fitting."""
    choice, redundant = None, plan.ep_redundant
    legal = [m for m in candidates(model, max_gpus)  # redundant experts need EP ranks that hold them evenly
             if not redundant or (m.ep > 1 and (model.n_routed_experts + redundant) % m.ep == 0)]
    for m in legal or candidates(model, max_gpus)[:1]:  # none legal: the one-GPU plan's check says why
        choice = _choice(model, hardware, plan.with_policies(tp=m.tp, dp=m.dp, ep=m.ep).check(model), "auto",
                         "replicas")
        if choice.fits:
            break
    assert choice is not None  # one GPU is always a candidate
    return choice


def choose_mapping(model: ModelSpec, hardware: Hardware, plan: Plan, *, tp: int | None = None, ep: int | None = None,
                   dp: int | None = None, attn_dp: int | None = None, auto: bool = False) -> MappingChoice:
    """The deployment a command runs ``plan``'s workload on (its own mapping ignored): SGLang's attention DP
    ``attn_dp`` inside a TP group of ``tp`` (default ``attn_dp``) GPUs; else, with ``auto`` and no degree
    given, :func:`smallest_fitting`; else exactly ``tp`` × ``dp`` replicas with ``ep`` (each default 1),
    :func:`explicit`. ``attn_dp`` with ``dp`` is refused: two meanings of DP.

    >>> from v41graph import load_model, Plan, Request
    >>> from v41graph.costs.hardware import load_hardware
    >>> m, hw, work = load_model(), load_hardware("h200_sxm"), Plan([Request.prefill(8192)])
    >>> choose_mapping(m, hw, work, auto=True).line(), choose_mapping(m, hw, work, tp=8, auto=True).line()
    ('8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)', '8 × h200_sxm: tp 8 (explicit)')
    >>> c = choose_mapping(m, hw, work, tp=8, ep=8, attn_dp=8)
    >>> (c.mapping.tp, c.mapping.dp, c.mapping.ep), c.spelling
    ((1, 8, 8), 'attn-dp')
    """
    from ..errors import PlanError
    from ..model.sharding import sglang_dp_attention
    if attn_dp is not None:
        if dp is not None:
            raise PlanError(f"--attn-dp {attn_dp} and --dp {dp}: two meanings of DP (SGLang's attention DP "
                            f"inside the TP group, or replicas of tp GPUs); give one")
        m = sglang_dp_attention(tp or attn_dp, attn_dp, ep or 1)
        return explicit(model, hardware, plan.with_policies(tp=m.tp, dp=m.dp, ep=m.ep), "attn-dp")
    if auto and tp is None and ep is None and dp is None:
        return smallest_fitting(model, hardware, plan)
    one = {k: 1 if v is None else v for k, v in {"tp": tp, "ep": ep, "dp": dp}.items()}
    return explicit(model, hardware, plan.with_policies(**one))
