"""``v41graph deploy``: which deployment meets an SLA on N GPUs — enumerate, prune, price, check.

1. **Enumerate** aggregated (``replicas`` × one instance) and disaggregated (``x`` prefill + ``y``
   decode instances) deployments within the GPU budget (:mod:`.deploy_space`).
2. **Prune** every instance whose weights and cache do not fit, before any compile; the reason
   is kept with the figures.
3. **Price** the rest from the simulator's compiled step costs (:mod:`.deploy_price`) and drop
   what misses the SLA analytically (or, under a trace, cannot carry its rate).
4. **Check** the best ``check`` of each mode by simulation (:mod:`.deploy_check`), and when all of them
   miss, the next ones down the ranking until one meets (at most 4 × ``check``); the pick of a
   mode is the best one whose *simulated* TTFT and TPOT at the percentile meet the SLA.

Ranking: tokens/s per GPU (highest first), then tokens/s per user, then the lower TTFT — each compared
at 9 significant digits (:func:`~.deploy_pick.rounded`), so float noise never outranks the next key —
then more GPUs (more rate), then the label, so the order and the JSON are deterministic. The walk and
its bounds are :mod:`.deploy_walk`'s, the answer's shape :mod:`.deploy_answer`'s.

>>> from v41graph import load_model
>>> from v41graph.costs.hardware import load_hardware
>>> q = Question(isl=4000, osl=200, ttft_s=2.0, tpot_s=0.05, gpus=8, requests=40)
>>> r = search(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), q, check=1, caps=(32,), chunks=(8192,))
>>> r["picks"]["aggregated"]["simulated"]["meets_sla"]
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...errors import PlanError
from ...ir.routing import UNIFORM, Routing
from ...workload.arrivals import Arrival
from .deploy_answer import _analytic, answer
from .deploy_checked import FALLBACK, _check, _sla_reason
from .deploy_launch import host_gpus, knob_notes, launch_flags, vllm_flags
from .deploy_pick import bottleneck, describe, rounded, sol_ceiling, why_none
from .deploy_price import Costers
from .deploy_space import CAPS, CHUNKS, launchable_axes
from .deploy_walk import _Best, _chunks, space_record, _instances, _memory, walk_aggregated, walk_disaggregated


@dataclass(frozen=True)
class Question:
    """The SLA question: lengths (or a trace's means), targets at ``percentile``, the GPU budget;
    ``requests``: how many Poisson requests a check simulates; ``rate``: a target request rate every
    candidate must carry (Poisson at that rate; None: each at :data:`LOAD` of its own capacity)."""

    isl: int
    osl: int
    ttft_s: float
    tpot_s: float
    gpus: int
    percentile: float = 90.0
    requests: int = 400
    seed: int = 1
    rate: float | None = None


def trace_lengths(trace: list[Arrival]) -> tuple[int, int]:
    """(isl, osl) a trace's analytic price runs at: its mean prompt and its mean output (at least 2: TPOT
    needs a second token).

    >>> trace_lengths([Arrival(0.0, 100, 1), Arrival(1.0, 201, 1)])  # 150.5 rounds to even; 1 output: 2
    (150, 2)
    """
    return (round(sum(a.prompt for a in trace) / len(trace)),
            max(2, round(sum(a.output for a in trace) / len(trace))))


def _row(mode, parts, model, hardware, q: Question, memo) -> dict[str, Any]:
    if mode == "aggregated":
        inst, r = parts
        gpus, label = r * inst.engine.gpus, f"{r}× [{inst.label()}]"
        memory = _memory(model, hardware, inst, q, "both", memo)
    else:
        pre, x, dec, y = parts
        gpus = x * pre.engine.gpus + y * dec.engine.gpus
        label = f"P {x}× [{pre.engine.label()}] + D {y}× [{dec.engine.label()} cap{dec.cap}] chunk{pre.chunk}" + \
            dec.knobs()
        memory = max(_memory(model, hardware, pre, q, "prefill", memo), _memory(model, hardware, dec, q, "both", memo))
    return {"mode": mode, "label": label, "gpus": gpus, "memory_per_gpu_bytes": memory, "status": "ok",
            "reason": None, "deployment": describe(mode, parts)}


def search(model, hardware, q: Question, *, cost=None, trace: list[Arrival] | None = None, check: int = 2,
           top: int = 5, caps=CAPS, chunks=CHUNKS, axes: dict | None = None,
           progress: Callable | None = None, scheduler=None, costers: Costers | None = None,
           overlap: bool = True, allow_unlaunchable: bool = False, routing: Routing = UNIFORM,
           ep_below_tp: bool = False) -> dict[str, Any]:
    """Every candidate with its status and reason, the top ``top`` of each mode, and the picks.
    ``axes`` fixes V4.1 knobs (:func:`axes_for`); ``scheduler`` (a Dask address or client) compiles the
    step shapes on a cluster first (:mod:`.deploy_dask`: the same answer); ``costers``: step costers of
    the same model, hardware and cost to reuse (:mod:`.deploy_fewest` passes one across budgets);
    ``overlap``: every engine runs SGLang's overlap scheduler (its default; the price and the check
    emit a step's tokens when the next step ends; False: ``--disable-overlap-schedule``);
    ``allow_unlaunchable``: search knob values no engine flag expresses (:func:`~.deploy_launch.launchable_axes`);
    ``routing``: the expert loads every step is priced under (ir/routing.py; ``costers``' own when given);
    ``ep_below_tp``: also search EP sizes below each engine's TP (:func:`~.deploy_space.instance_mappings`). Off
    SOL each pick carries ``sol_ceiling``: its analytic figures on SOL beside the forecast (the picks only).

    The space is walked lazily (:func:`_instances`): instances first, each checked for memory and for a
    decode step within the TPOT before any price; a deployment is priced only when an upper bound of its
    tokens/s per GPU — the decode-only rate at the cap, and for a prefill/decode pair the best split of
    GPUs between the two rates, p·d / (p + d) — can still reach the ``max(top, 4 × check)`` best met so far
    (``pruned_by_bound`` counts the rest). The checked ones are ranked on their simulated figures."""
    costers, memo = costers or Costers(model, hardware, cost, routing=routing), {}
    if costers.routing != routing and routing is not UNIFORM:
        raise PlanError(f"deploy routing: the costers price {costers.routing.describe()}, not {routing.describe()}")
    axes = launchable_axes(model, axes, allow_unlaunchable)
    trace_rate = _trace_rate(trace)
    offered, whose = (trace_rate, "the trace's") if trace is not None else (q.rate, "the target")
    caps, chunks = tuple(sorted(caps)), _chunks(chunks, q.isl)
    if scheduler is not None:
        from .deploy_dask import compile_on_dask
        compile_on_dask(scheduler, costers, q, caps, chunks, axes, overlap, memo, ep_below_tp)
    table = _Rows(model, hardware, q, memo, offered, whose, max(top, FALLBACK * check))

    def walk(role):
        return _instances(model, hardware, q, caps, chunks, axes, overlap, memo, costers, role, ep_below_tp)
    pruned = {"aggregated": walk_aggregated(costers, q, offered, walk("both"), table.add, table.best["aggregated"])}
    pres = [(inst, why) for inst, why, _ in walk("prefill")]
    decs = list(walk("decode"))
    pruned["disaggregated"] = walk_disaggregated(costers, q, offered, pres, decs, table.add,
                                                 table.best["disaggregated"])
    rows = table.rows
    if progress:
        progress(len(rows))

    sol = None if getattr(costers.cost, "mode", "sol") == "sol" else Costers(model, hardware, None, costers.acceptance,
                                                                             costers.routing)
    rank = _ranker(rows, q)
    order = sorted(range(len(rows)), key=rank)
    # ranked before any check: a check rejects rows of its own mode only
    ranked = {m: [i for i in order if rows[i]["mode"] == m and rows[i]["status"] == "ok"] for m in MODES}
    picks: dict[str, Any] = {}
    for mode in MODES:
        met = _check(costers, table, ranked[mode], q, trace, check)
        picks[mode] = None
        if met:  # the checked ones that met the SLA, ranked on their simulated figures
            i = min(met, key=lambda j: rank(j, "simulated"))
            picks[mode] = _pick(model, hardware, costers, sol, q, offered, mode, table.parts_of[i][1], rows[i], i)
    for i in order:
        if rows[i]["status"] == "ok" and "simulated" not in rows[i]:
            rows[i]["status"] = "ok (not simulated)"
    return answer(q, costers, axes, overlap, rows, {m: [rows[i]["label"] for i in ranked[m][:top]] for m in MODES},
                  picks, {m: why_none(rows, m) for m in picks if picks[m] is None}, trace, trace_rate, pruned,
                  space_record(caps, chunks, q.isl, ep_below_tp))


MODES = ("aggregated", "disaggregated")


def _trace_rate(trace) -> float | None:
    """A trace's mean arrival rate (all of it at once when it spans no time); None without a trace."""
    if trace is None:
        return None
    span = max(a.t for a in trace) - min(a.t for a in trace)
    return len(trace) / span if span > 0 else float(len(trace))


class _Rows:
    """The candidates as the walk meets them: their rows, the parts each was built from, and per mode the
    k best per-GPU figures met analytically (what a later bound must beat)."""

    def __init__(self, model, hardware, q: Question, memo, offered, whose: str, k: int):
        self.model, self.hardware, self.q, self.memo = model, hardware, q, memo
        self.offered, self.whose = offered, whose
        self.rows: list[dict[str, Any]] = []
        self.parts_of: dict[int, tuple] = {}
        self.best = {m: _Best(k) for m in MODES}

    def add(self, mode, parts, reason=None, price=None) -> None:
        row = _row(mode, parts, self.model, self.hardware, self.q, self.memo)
        row["reason"] = reason
        if price is not None:
            row["analytic"] = _analytic(price, row["gpus"], self.q.osl)
            row["reason"] = _sla_reason(price, self.q, "analytic", self.offered, self.whose)
            if row["reason"] is None:
                self.best[mode].add(row["analytic"]["tokens_per_s_per_gpu"])
        if row["reason"]:
            row["status"] = "rejected"
        self.parts_of[len(self.rows)] = (mode, parts)
        self.rows.append(row)


def _ranker(rows, q: Question) -> Callable:
    """The sort key of a row index on its ``analytic`` or ``simulated`` figures (the module's ranking)."""
    def rank(i, basis="analytic"):
        a = rows[i].get(basis) or {}
        ttft = a.get("ttft_s") if basis == "analytic" else a.get(f"ttft_p{q.percentile:g}_s")
        return (-rounded(a.get("tokens_per_s_per_gpu") or 0), -rounded(a.get("tokens_per_s_per_user") or 0),
                rounded(ttft or 0), -rows[i]["gpus"], rows[i]["label"])
    return rank


def _pick(model, hardware, costers, sol, q: Question, offered, mode, parts, row, i) -> dict[str, Any]:
    """A mode's pick: its row with the bottleneck, launch lines and notes, and off SOL its SOL ceiling."""
    served = model.checkpoint or model.name  # the Hugging Face id where known
    host, v41 = host_gpus(hardware), model.family == "v4.1"
    pick = {**row, "index": i, "ranked_on": "simulated",
            "bottleneck": bottleneck(model, hardware, mode, parts, q.isl, q.osl, costers.routing),
            "launch": launch_flags(mode, parts, served, host, replay_flag=v41),
            "vllm_launch": vllm_flags(mode, parts, served, host),
            "launch_notes": knob_notes(mode, parts)}
    if sol is not None:
        pick["sol_ceiling"] = sol_ceiling(sol, mode, parts, q.isl, q.osl, offered, row["gpus"], row["analytic"])
    return pick
