"""What a sweep computes, one job at a time: a forward (prefill or decode) of one plan shape.

A sweep point needs two jobs — one request's prompt of ``prompt`` tokens, prefilled in chunks of
``chunk`` tokens as the scheduler runs it (→ TTFT: the chunks' forwards one after another), and
one decode step of ``batch`` requests at ``context`` tokens (→ ITL, tokens/s). Each is a
:class:`Job`; points that share a job share its result (the compile cache, keyed by the job's
structure). A :class:`LengthJob` is many jobs differing only in the length: it runs the
closed-form fast path (:class:`~v41graph.analysis.sweep.length_sweep.LengthSweep`) instead of
compiling each one. Jobs are plain frozen data and :func:`run_job` a top-level function, so a
process pool or a Dask worker runs them alike.

>>> r = run_job(Job("decode", "deepseek-v4.1-flash", "h200_sxm", 1, 1, 1, 8, 4096))
>>> r["output_tokens"], r["bound"], r["coverage"]
(8, 'memory', 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...costs.hardware import load_hardware
from ...costs.requests.system import system_figures
from ...errors import V41Error
from ...ir.plan import Plan, Request
from ...model.config import load_model
from ...reuse import cached

# The jobs' data and COST_MODES are what `v41graph sweep`'s parser needs; the compiler, numpy and
# the closed-form fast path are imported by the functions that run a job (issue 14).

#: cost modes a sweep may name: ``auto`` (a forecast: hybrid where measured kernel tables cover the point's
#: GPU, else SOL — resolved per point by the grid), SOL, hybrid and OP (measured kernel tables through the
#: compiler); FPM is whole-forward, not a per-graph cost, and is not served (its rows carry a reason)
COST_MODES = ("auto", "sol", "hybrid", "op", "fpm")


class SweepError(V41Error):
    """A sweep axis or option is invalid."""


@dataclass(frozen=True)
class Job:
    """One forward: ``kind`` is ``prefill`` (``batch`` prompts of ``length``) or ``decode``
    (``batch`` requests at context ``length``); the rest is the plan's mapping and policies."""

    kind: str
    model: str
    hardware: str
    tp: int
    ep: int
    dp: int
    batch: int
    length: int
    replay: str = "off"
    restore: str = "persisted"
    fusion: str = "auto"  # the model family's own profile
    engram: str = "hbm"
    dspark: str = "off"
    cost_mode: str = "sol"
    chunk: int = 0  # prefill: the largest chunk of the prompt per forward (0: the whole prompt at once)
    checkpoint: str = "auto"  # which checkpoint of the model (point_model); auto: the one the hardware runs
    fp4_on_hopper: bool = False

    @property
    def chunks(self) -> int:
        """Forwards this job runs: a prefill longer than its chunk runs one per chunk."""
        return -(-self.length // self.chunk) if self.kind == "prefill" and self.chunk else 1

    def shape(self) -> "Job":
        """The job with its length cleared: jobs of one shape differ only in length."""
        return replace(self, length=0)


@dataclass(frozen=True)
class LengthJob:
    """Jobs of one shape at many lengths (sorted, distinct): the closed-form fast path."""

    shape: Job
    lengths: tuple[int, ...]


def job_plan(job: Job, length=None, start: int | None = None) -> Plan:
    """The plan of a job (``length`` overrides it: a symbol for the fast path); ``start``: the
    plan of the prefill chunk starting there (as ``simulate``'s scheduler cuts the prompt)."""
    n = job.length if length is None else length
    if start is not None:
        request = Request.chunk(n, start, min(job.chunk, n - start))
    else:
        request = replace(Request.prefill(n), copies=job.batch) if job.kind == "prefill" else \
            Request.decode(n, copies=job.batch)
    # fusion "auto": None, the model family's own profile (Plan.fusion_for)
    return Plan([request], decoder_replay=job.replay, encoder_restore=job.restore,
                fusion=None if job.fusion == "auto" else job.fusion,
                engram_residency=job.engram, dspark=job.dspark, tp=job.tp, ep=job.ep, dp=job.dp)


@cached(None, resource=True)  # a loaded config, as one of its checkpoints
def point_model(name: str, hardware: str, checkpoint: str = "auto", fp4_on_hopper: bool = False):
    """(model, :class:`~v41graph.model.checkpoints.CheckpointChoice`) of a sweep point: ``name`` as
    ``checkpoint`` (``auto``: the one ``hardware`` runs; model/checkpoints.py)."""
    from ...model.checkpoints import choose_checkpoint
    model, hw = load_model(name), load_hardware(hardware)
    choice = choose_checkpoint(model, hw.has_fp4, None if checkpoint == "auto" else checkpoint,
                               fp4_on_hopper=fp4_on_hopper, gpu=hw.name, refuse_unused=False)
    return choice.apply(model), choice


def _model(job: Job):
    return point_model(job.model, job.hardware, job.checkpoint, job.fp4_on_hopper)[0]


def _check_mode(job: Job):
    """The job's CostMode for the compiler (None: SOL); FPM and an unresolved ``auto`` are errors."""
    if job.cost_mode not in COST_MODES:
        raise V41Error(f"sweep cost_mode: unknown {job.cost_mode!r} (known: {', '.join(COST_MODES)})")
    if job.cost_mode in ("fpm", "auto"):
        raise V41Error(f"sweep cost_mode: {job.cost_mode!r} is not served by the sweep's jobs (sol, hybrid or op; "
                       "FPM prices whole forwards, `simulate --cost fpm`); its rows are left without figures")
    if job.cost_mode == "sol":
        return None
    from ...costs.measured.tiers import TRANSFERS, CostMode
    return CostMode(job.cost_mode, TRANSFERS, None)


def _coverage(compiled, cost) -> float:
    """The share of node time a measured table measured or interpolated (SOL: 1, nothing to measure)."""
    return 1.0 if cost is None else float(compiled.report("schedule").coverage["measured_or_interpolated"])


def _failure(exc: V41Error) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}"}


def _path_bound(graph, path) -> str:
    """The resource holding most of the critical path's time (compute wins ties, as in sol_time)."""
    from .length_sweep import RESOURCES
    slots = graph.annotation("schedule")
    share = {r: 0.0 for r in RESOURCES}
    for n in path:
        sol = slots[n].sol
        if sol.bound in share:
            share[sol.bound] += float(sol.time)
    return max(RESOURCES, key=lambda r: (share[r], -RESOURCES.index(r))) if any(share.values()) else "none"


def run_job(job: Job) -> dict:
    """Compile and schedule one job; a plan the model rejects gives ``{"error": ...}``."""
    from ...passes import compile
    from ..gpu_summary import workspace_bytes
    if job.chunks > 1:
        return _run_chunks(job)
    try:
        cost = _check_mode(job)
        model, plan = _model(job), job_plan(job)
        compiled = compile(model, plan, load_hardware(job.hardware), cost=cost)
    except V41Error as exc:
        return _failure(exc)
    report = compiled.report("schedule")
    figures = system_figures(plan, report)
    return {"forward_s": figures.forward_s, "critical_path_s": float(report.critical_path_s),
            "output_tokens": figures.output_tokens, "bound": _path_bound(compiled.graph, report.critical_path),
            "coverage": _coverage(compiled, cost), "method": "compiled",
            "workspace_bytes": workspace_bytes(compiled.graph)}


def _run_chunks(job: Job) -> dict:
    """A prompt prefilled chunk by chunk: the forwards' times add up (TTFT), the largest chunk
    workspace is what must fit, and the last chunk (the longest context) names the bound."""
    from ...passes import compile as schedule
    from ..gpu_summary import workspace_bytes
    try:
        cost = _check_mode(job)
        model, hw = _model(job), load_hardware(job.hardware)
        done = [schedule(model, job_plan(job, start=s), hw, cost=cost) for s in range(0, job.length, job.chunk)]
    except V41Error as exc:
        return _failure(exc)
    last = done[-1].report("schedule")
    return {"forward_s": sum(float(c.report("schedule").total_time_s) for c in done),
            "critical_path_s": sum(float(c.report("schedule").critical_path_s) for c in done),
            "output_tokens": 1, "bound": _path_bound(done[-1].graph, last.critical_path),
            "coverage": min(_coverage(c, cost) for c in done),
            "method": f"compiled ({len(done)} chunks)", "workspace_bytes": max(workspace_bytes(c.graph) for c in done)}


def run_length_job(job: LengthJob) -> dict[int, dict]:
    """The fast path: one symbolic compile, then numpy over every length of the job."""
    import numpy as np

    from ...symbols import N  # sympy: the closed form only
    from .length_sweep import RESOURCES, LengthSweep
    try:
        _check_mode(job.shape)
        model = _model(job.shape)
        sweep = LengthSweep(model, job_plan(job.shape, N), load_hardware(job.shape.hardware))
        tokens = system_figures(job_plan(job.shape, job.lengths[0]), _Zero()).output_tokens  # independent of N
    except V41Error as exc:
        return {n: _failure(exc) for n in job.lengths}
    lengths = np.array(job.lengths, dtype=np.int64)
    out, workspace = sweep.evaluate(lengths), sweep.workspace(lengths)
    names = RESOURCES + ("none",)  # index -1: a path of zero time
    return {n: {"forward_s": float(out["forward_s"][i]), "critical_path_s": float(out["critical_path_s"][i]),
                "output_tokens": tokens, "bound": names[int(out["bound"][i])], "coverage": 1.0,
                "method": "closed-form", "workspace_bytes": int(workspace[i])}
            for i, n in enumerate(job.lengths)}


class _Zero:
    """A schedule report stand-in for the figures that do not depend on time (output tokens)."""

    total_time_s = 0.0


def run_any(job: Job | LengthJob) -> list[tuple[Job, dict]]:
    """Run either kind of job; results keyed by the single-length :class:`Job` they answer."""
    if isinstance(job, LengthJob):
        return [(replace(job.shape, length=n), r) for n, r in run_length_job(job).items()]
    return [(job, run_job(job))]
