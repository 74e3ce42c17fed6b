"""The deployments ``v41graph deploy`` considers, and the memory check that prunes them before pricing.

An **instance** is one serving engine: a mapping over ``gpus`` GPUs (SGLang spelling: ``--tp T`` is
the whole group; ``--dp D --enable-dp-attention`` splits its attention into D groups; ``--ep E``),
a concurrency cap (``--max-running-requests``), a chunk size and V4.1's serving knobs (decoder replay,
Engram residency, DSpark verify length: :func:`v41_axes`). An
**aggregated** deployment runs ``replicas`` equal instances that prefill and decode; a
**disaggregated** one runs ``x`` prefill and ``y`` decode instances, each with its own mapping, and
moves each request's KV over the NIC. A candidate never takes more than the GPU budget.

Fit is the static-memory rule of :mod:`~v41graph.analysis.mapping_search` (weights + the cache
of every request an instance holds ≤ 90 % of HBM): a decode-serving instance holds ``cap``
requests at ``isl + osl`` tokens; a prefill instance one prefill step's prompts.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> [m.label() for m in instance_mappings(load_model(), 8)][:4]
['tp1', 'tp2', 'tp2 ep2', 'tp2 dpattn2']
>>> fit_reason(load_model(), load_hardware("h200_sxm"), Instance(instance_mappings(load_model(), 8)[0], 64, 8192),
...            4000, 1000)[:34]
'weights + cache of 64 requests at '
"""

from __future__ import annotations

from dataclasses import dataclass

from ...costs.hardware import Hardware
from ...errors import PlanError
from ...ir.plan import DECODER_REPLAY, ENGRAM_RESIDENCY
from ...ir.plan import Plan, Request
from ...model.config import ModelSpec
from ...ir.dp import rank_copies
from ...model.gpu_memory import budget_bytes as gpu_budget, weights_per_gpu
from ...model.mapping import Mapping
from ...model.memory import cache_memory
from ...reuse import cached
from ..mapping_search import STATIC_FRACTION, static_bytes

#: concurrency caps searched (SGLang --max-running-requests, engine-wide: an attention-DP engine splits it over
#: its DP ranks, cap / D each; its default for V4 is 256)
CAPS = (8, 16, 32, 64, 128, 256, 512, 1024)
#: aggregated scheduling searched: prefill first (SGLang's default) and mixed chunks (--enable-mixed-chunk)
SCHEDULES = (False, True)
#: chunked-prefill sizes searched (SGLang --chunked-prefill-size; 8192 its default on 80–160 GB GPUs)
CHUNKS = (4096, 8192)
#: the largest engine searched (attention TP stops at 8, the wo_a groups; beyond, attention DP and EP grow):
#: it bounds the engines a large budget enumerates
MAX_ENGINE_GPUS = 64
#: prompt tokens one prefill step takes (SGLang --max-prefill-tokens default)
MAX_PREFILL_TOKENS = 16384


@dataclass(frozen=True)
class EngineMapping:
    """One instance's mapping in SGLang's words: ``tp`` GPUs, ``attn_dp`` attention groups, ``ep``."""

    tp: int
    attn_dp: int = 1
    ep: int = 1

    @property
    def gpus(self) -> int:
        return self.tp

    @property
    def moe_a2a(self) -> str:
        """The MoE all-to-all backend the engine runs (model/mapping.py ``MOE_A2A``): DeepEP where EP spans the
        engine (``--moe-a2a-backend deepep``); with EP below TP SGLang's default, ``none`` (DeepEP sets
        ep = tp), each GPU its experts' share of every token and an all-reduce after; without EP it moves nothing."""
        return "none" if 1 < self.ep < self.tp else "deepep"

    @property
    def mapping(self) -> Mapping:
        """The project's Mapping: attention TP tp / attn_dp, DP attn_dp, EP ep and its backend (model/mapping.py)."""
        return Mapping(tp=self.tp // self.attn_dp, dp=self.attn_dp, ep=self.ep, a2a=self.moe_a2a)

    def label(self) -> str:
        return f"tp{self.tp}" + (f" dpattn{self.attn_dp}" if self.attn_dp > 1 else "") + \
            (f" ep{self.ep}" if self.ep > 1 else "")


@dataclass(frozen=True)
class Instance:
    """One engine: mapping, concurrency cap, chunk size and V4.1's knobs — decoder replay, Engram
    residency (``host``: the tables in host memory, looked up over the host link) and DSpark
    ``verify`` (drafted tokens each decode step verifies; 0: DSpark off) — and ``overlap``, SGLang's
    overlap scheduler (its default; False: ``--disable-overlap-schedule``), which emits a step's tokens
    when the next step ends. It is not searched: one search prices every instance the same way."""

    engine: EngineMapping
    cap: int
    chunk: int
    replay: str = "off"
    engram: str = "hbm"
    verify: int = 0
    overlap: bool = True
    mixed: bool = False  # SGLang --enable-mixed-chunk: prefill chunks ride the decode batch's step

    def knobs(self) -> str:
        """The V4.1 knobs that differ from the defaults, as a label suffix."""
        return (" replay-bounded" if self.replay == "bounded" else "") + \
            (" engram-host" if self.engram == "host" else "") + (f" dspark{self.verify}" if self.verify else "")

    def schedule(self) -> str:
        """How the engine schedules prefill against decode: ``mixed`` (``--enable-mixed-chunk``) or
        ``prefill-first`` (SGLang's default: a prefill step stalls the decode batch)."""
        return "mixed" if self.mixed else "prefill-first"

    def label(self) -> str:
        return f"{self.engine.label()} cap{self.cap} chunk{self.chunk}" + (" mixed" if self.mixed else "") + \
            self.knobs()


def instance_mappings(model: ModelSpec, max_gpus: int, below_tp: bool = False) -> list[EngineMapping]:
    """Every legal engine mapping on 1, 2, 4, … ≤ ``max_gpus`` GPUs (and at most :data:`MAX_ENGINE_GPUS`):
    ``--tp-size T`` with ``--attn-dp-size D`` for every D dividing T (attention TP T / D), and the
    routed experts MoE-TP over all T GPUs (no EP), EP over all T (DeepEP), or — with ``below_tp`` — every
    MoE-TP × EP mix between, ``--ep-size E`` for E dividing T (MoE-TP T / E), which SGLang runs on its
    default ``--moe-a2a-backend none`` (DeepEP sets ep = tp): priced so (:attr:`EngineMapping.moe_a2a`).

    >>> from v41graph import load_model
    >>> [e.label() for e in instance_mappings(load_model(), 4) if e.gpus == 4]
    ['tp4', 'tp4 ep4', 'tp4 dpattn2', 'tp4 dpattn2 ep4', 'tp4 dpattn4', 'tp4 dpattn4 ep4']
    >>> [e.label() for e in instance_mappings(load_model(), 4, below_tp=True) if e.gpus == 4][:3]
    ['tp4', 'tp4 ep2', 'tp4 ep4']
    """
    out, g = [], 1
    while g <= min(max_gpus, MAX_ENGINE_GPUS):
        eps = [x for x in range(1, g + 1) if g % x == 0 and (below_tp or x in (1, g))]
        for d in (x for x in range(1, g + 1) if g % x == 0):
            for e in (EngineMapping(g, d, x) for x in eps):
                try:
                    e.mapping.check(model)
                except PlanError:  # a degree that does not divide heads / groups / experts: not a deployment
                    continue
                out.append(e)
        g *= 2
    return out


def replay_modes(model: ModelSpec) -> tuple[str, ...]:
    """V4.1's decoder replay is a searched axis (``bounded`` needs its encoder-decoder); V4: off only."""
    return ("off", "bounded") if model.family == "v4.1" else ("off",)


#: DSpark's per-position conditional acceptance the search assumes (``v41graph dspark``'s default)
DSPARK_ACCEPTANCE = (0.9, 0.8, 0.7, 0.6, 0.5)
#: DSpark verify lengths searched on V4.1 (0: off); at most len(DSPARK_ACCEPTANCE)
VERIFY_LENGTHS = (0, 3)


def v41_axes(model: ModelSpec) -> dict[str, tuple]:
    """The V4.1 serving knobs ``deploy`` searches, with their small default sets; V4 has none of them.

    Encoder restore is not an axis: it acts only on a prefix hit whose SWA state was lost, and the
    traffic ``deploy`` serves (fixed lengths, Poisson or a trace without hits) has no prefix hits, so
    no figure of a candidate could move with it.

    >>> from v41graph import load_model
    >>> v41_axes(load_model("deepseek-v4.1-flash"))
    {'replay': ('off', 'bounded'), 'engram': ('hbm', 'host'), 'verify': (0, 3)}
    >>> v41_axes(load_model("deepseek-v4-flash"))
    {'replay': ('off',), 'engram': ('hbm',), 'verify': (0,)}
    """
    v41 = model.family == "v4.1"
    return {"replay": replay_modes(model), "engram": ("hbm", "host") if v41 else ("hbm",),
            "verify": VERIFY_LENGTHS if v41 else (0,)}


#: the values a V4.1 knob may be fixed to
_ALLOWED = {"replay": DECODER_REPLAY, "engram": ENGRAM_RESIDENCY, "verify": tuple(range(len(DSPARK_ACCEPTANCE) + 1))}


def axes_for(model, fixed: dict | None = None) -> dict[str, tuple]:
    """The V4.1 knobs searched (:func:`~.deploy_space.v41_axes`), with any of them fixed by ``fixed``
    (``{"engram": ("host",)}``); a value the model cannot take is an error naming the knob."""
    axes = v41_axes(model)
    for name, values in (fixed or {}).items():
        if values is None:
            continue
        if name not in axes:
            raise PlanError(f"deploy axes: unknown knob {name!r} (known: {', '.join(axes)})")
        allowed = _ALLOWED[name] if model.family == "v4.1" else axes[name]
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            raise PlanError(f"deploy {name}: {bad[0] if bad else values!r} is not one of "
                            f"{', '.join(map(str, allowed))} for {model.name}")
        axes[name] = tuple(dict.fromkeys(values))
    return axes


#: V4.1 knob values no SGLang 0.5.23 flag expresses, and what a launch line lacks for them
UNLAUNCHABLE = {"engram": {"host": "Engram tables in host memory (no SGLang 0.5.23 flag places them)"}}


def launchable_axes(model, fixed: dict | None = None, allow_unlaunchable: bool = False) -> dict[str, tuple]:
    """The V4.1 knobs searched (:func:`~.deploy_space.axes_for`) less the values no engine flag expresses
    (:data:`UNLAUNCHABLE`: Engram in host memory), unless ``allow_unlaunchable``; such a
    value asked for by name without it is an error naming the option that admits it.

    >>> from v41graph import load_model
    >>> launchable_axes(load_model("deepseek-v4.1-flash"))["engram"]
    ('hbm',)
    >>> launchable_axes(load_model("deepseek-v4.1-flash"), allow_unlaunchable=True)["engram"]
    ('hbm', 'host')
    """
    axes = axes_for(model, fixed)
    if allow_unlaunchable:
        return axes
    for name, gaps in UNLAUNCHABLE.items():
        asked = [v for v in (fixed or {}).get(name) or () if v in gaps]
        if asked:
            raise PlanError(f"deploy {name}: {asked[0]!r} has no engine flag ({gaps[asked[0]]}); "
                            "--allow-unlaunchable searches it anyway")
        axes[name] = tuple(v for v in axes[name] if v not in gaps)
    return axes


def _static(model, hardware, engine: EngineMapping, context: int, copies: int, engram: str = "hbm",
            dspark: bool = False) -> int:
    """:func:`~v41graph.analysis.mapping_search.static_bytes` of ``copies`` requests at ``context``, summed
    from the same parts (gpu_memory's weights and per-kind cache) without its kv_tokens_fit bisection,
    which this check does not use and which costs ~0.1 s a call (tests/test_deploy.py: equal)."""
    m = engine.mapping
    plan = Plan([Request.decode(context, copies=copies)], tp=m.tp, dp=m.dp, ep=m.ep)
    on_rank = rank_copies(plan)[0]
    c = cache_memory(model, plan.requests[0].end, dspark=dspark)  # the decode request holds its next token too
    cache = (int(c.main_kv_bytes) + int(c.index_k_bytes) + int(c.swa_bytes + c.dspark_swa_bytes) + c.state_bytes)
    weights = dict(_weights(model, m))
    if engram == "host":  # gpu_memory's rule: the tables leave HBM (no hot cache here)
        weights["engram_tables"] = 0
    return sum(weights.values()) + cache * on_rank


@cached(256)  # registered: cleared with every memo, compared under the shadow check
def _weights(model: ModelSpec, mapping: Mapping) -> tuple:
    """gpu_memory's weights per GPU, once per (model, mapping): a search asks for every cap of an engine (both
    frozen dataclasses, so the key is their whole value)."""
    return tuple(weights_per_gpu(model, mapping).items())


def static_reference(model, hardware, engine: EngineMapping, context: int, copies: int, engram: str = "hbm",
                     dspark: bool = False) -> int:
    """The mapping search's own figure (the check of :func:`_static`)."""
    m = engine.mapping
    return static_bytes(model, hardware, Plan([Request.decode(context, copies=copies)], tp=m.tp, dp=m.dp, ep=m.ep,
                                              engram_residency=engram, dspark="on" if dspark else "off"))


def budget_bytes(hardware: Hardware) -> int:
    """The one "fits" budget (``model/gpu_memory.py``) of ``hardware``."""
    return gpu_budget(hardware.hbm_capacity)


def prefill_prompts(isl: int) -> int:
    """Prompts one prefill step holds at once (SGLang fills max_prefill_tokens)."""
    return max(1, MAX_PREFILL_TOKENS // isl)


def memory_bytes(model, hardware, inst: Instance, isl: int, osl: int, role: str = "both") -> int:
    """Per-GPU weights + cache of what the instance holds: ``cap`` requests at isl + osl (a decode or
    aggregated instance) or one prefill step's prompts (a prefill instance)."""
    if role == "prefill":
        return _static(model, hardware, inst.engine, isl, prefill_prompts(isl), inst.engram)
    return _static(model, hardware, inst.engine, isl + osl, inst.cap, inst.engram, inst.verify > 0)


def fit_reason(model, hardware, inst: Instance, isl: int, osl: int, role: str = "both") -> str | None:
    """None when the instance fits; else the reason, with the figures."""
    need, budget = memory_bytes(model, hardware, inst, isl, osl, role), budget_bytes(hardware)
    if need <= budget:
        return None
    gib = 1 << 30
    what = (f"{prefill_prompts(isl)} prompts of {isl:,} tokens" if role == "prefill"
            else f"{inst.cap} requests at {isl + osl:,} tokens")
    engram = weights_per_gpu(model, inst.engine.mapping)["engram_tables"] if inst.engram == "hbm" else 0
    return (f"weights + cache of {what}: {need / gib:,.1f} GiB per GPU > {budget / gib:,.1f} GiB "
            f"({float(STATIC_FRACTION):.0%} of HBM)" +
            (f"; {engram / gib:,.1f} GiB of it are the Engram tables (Engram on host frees them)" if engram else ""))
