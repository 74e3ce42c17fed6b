"""Sweeps: one row per point of a grid over models, hardware, mappings, lengths and policies.

``sweep(prompt=[1024, 4096], replay=["off", "bounded"], tp=[1, 8])`` expands the axes
(:data:`AXES`) as a Cartesian product in axis order — or zips the axes named in ``zip`` —
and returns a :class:`~v41graph.analysis.sweep.sweep_result.SweepResult` whose rows are in that
order, whatever executor ran them. Each point runs two jobs (``sweep_jobs``) as a server runs
them: one request's prefill, in chunks of ``chunk`` tokens (the scheduler's chunked-prefill size,
``simulate``'s default; its TTFT), and a decode step of ``batch`` requests at ``context`` (default:
the prompt length; ITL and tokens/s). The basis is ``cost_mode``: ``auto`` (the default) is a forecast —
hybrid where measured kernel tables cover the point's GPU, else SOL, as every serving answer resolves it —
and off SOL a point also runs its SOL twin, whose times stand beside as ``sol_ttft_s`` / ``sol_itl_s``
with the ratios ``ttft_over_sol`` / ``itl_over_sol``. Fit is checked twice, with the decode batch's caches
resident both times: beside the prefill chunk's workspace, and beside the decode step's. Jobs
shared by several points run once; single-forward shapes with at least ``fast_min`` lengths take
the closed-form fast path. A point the model rejects (a mapping
that does not divide the heads, a policy the model lacks) is a row with its ``reason``.

Executors: ``"serial"``; ``"local"`` (default) — a ``concurrent.futures`` process pool;
``"ADDRESS"`` of a Dask scheduler, or a ``dask.distributed.Client`` — the same jobs on a
cluster (extra ``v41graph[distributed]``). The rows do not depend on the executor.

>>> r = sweep(prompt=[1024, 4096], batch=[1, 8], tp=[8], ep=[8], cost_mode=["sol"], executor="serial")
>>> len(r.rows), [row["prompt"] for row in r.rows], r.rows[0]["valid"]
(4, [1024, 4096, 1024, 4096], True)
>>> r.rows[0]["itl_s"] > 0 and r.rows[1]["tok_s_per_user"] == 1 / r.rows[1]["itl_s"]
True
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

from ...algebra import as_int
from ...costs.hardware import ALIASES, load_hardware
from ...errors import V41Error
from ...ir.plan import DECODER_REPLAY, DSPARK_MODES, ENCODER_RESTORE, ENGRAM_RESIDENCY, FUSION_PROFILES
from ...model.checkpoints import with_checkpoint
from ...model.config import load_model
from ...model.paging import CHUNKED_PREFILL_SIZE
from .sweep_jobs import COST_MODES, Job, LengthJob, SweepError
from .sweep_run import execute
from .sweep_result import COLUMNS, SweepResult

#: grid axes in expansion order, with defaults
AXES: dict[str, Any] = {
    "model": "deepseek-v4.1-flash", "hardware": "h200_sxm", "checkpoint": "auto", "tp": 1, "ep": 1, "dp": 1, "batch": 1,
    "prompt": 8192, "context": None, "chunk": CHUNKED_PREFILL_SIZE, "replay": "off", "restore": "persisted",
    "fusion": "auto",
    "engram": "hbm", "dspark": "off", "cost_mode": "auto",
}
_CHOICES = {"replay": DECODER_REPLAY, "restore": ENCODER_RESTORE, "fusion": ("auto",) + FUSION_PROFILES,
            "engram": ENGRAM_RESIDENCY, "dspark": DSPARK_MODES, "cost_mode": COST_MODES}
_COUNTS = ("tp", "ep", "dp", "batch", "prompt", "context", "chunk")
#: a shape with at least this many lengths is evaluated in closed form instead of compiled
FAST_MIN = 64


def _axis(name: str, values) -> tuple:
    values = tuple(values) if isinstance(values, (list, tuple, range)) else (values,)
    if not values:
        raise SweepError(f"sweep {name}: needs at least one value")
    if name in _COUNTS:  # numpy integers are counts too; they are kept as ints
        values = tuple(v if as_int(v) is None else as_int(v) for v in values)
    for v in values:
        if name in _COUNTS and not (v is None and name == "context") and (as_int(v) is None or v < 1):
            raise SweepError(f"sweep {name}: expected integers >= 1, got {v!r}")
        if name in _CHOICES and v not in _CHOICES[name]:
            raise SweepError(f"sweep {name}: unknown value {v!r} (expected one of {', '.join(_CHOICES[name])})")
    if name == "model":
        for v in values:
            load_model(v)  # a bad name or path fails now, in one line
    if name == "hardware":
        values = tuple(ALIASES.get(v, v) if isinstance(v, str) else v for v in values)
        for v in values:
            load_hardware(v)
    return values


def grid(axes: dict[str, Iterable], zip_axes: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The points of a grid, in a fixed order: Cartesian over the axes in :data:`AXES` order,
    except that the axes in ``zip_axes`` advance together (as one axis at the first one's place).

    >>> [(p["tp"], p["prompt"]) for p in grid({"tp": [1, 8], "prompt": [10, 20]})]
    [(1, 10), (1, 20), (8, 10), (8, 20)]
    >>> [(p["tp"], p["prompt"]) for p in grid({"tp": [1, 8], "prompt": [10, 20]}, zip_axes=["tp", "prompt"])]
    [(1, 10), (8, 20)]
    """
    unknown = sorted(set(axes) - set(AXES))
    if unknown:
        raise SweepError(f"sweep: unknown axis {unknown[0]!r} (known: {', '.join(AXES)})")
    for name in zip_axes:
        if name not in AXES:
            raise SweepError(f"sweep zip: unknown axis {name!r} (known: {', '.join(AXES)})")
    values = {name: _axis(name, axes.get(name, default)) for name, default in AXES.items()}
    zipped = [n for n in AXES if n in zip_axes]
    if len({len(values[n]) for n in zipped}) > 1:
        sizes = ", ".join(f"{n}={len(values[n])}" for n in zipped)
        raise SweepError(f"sweep zip: zipped axes need equal lengths, got {sizes}")
    groups: list[tuple[str, ...]] = []
    for name in AXES:
        if name in zipped:
            if name == zipped[0]:
                groups.append(tuple(zipped))
        else:
            groups.append((name,))
    choices = [list(zip(*(values[n] for n in g))) for g in groups]
    return [{n: v for g, combo in zip(groups, picked) for n, v in zip(g, combo)}
            for picked in itertools.product(*choices)]


def point_jobs(p: dict[str, Any], fp4_on_hopper: bool = False) -> tuple[Job, Job]:
    """The prefill job (one request, chunked) and the decode job (the batch) of a point."""
    common = dict(model=p["model"], hardware=p["hardware"], tp=p["tp"], ep=p["ep"], dp=p["dp"],
                  replay=p["replay"], restore=p["restore"], fusion=p["fusion"], engram=p["engram"],
                  dspark=p["dspark"], cost_mode=p["cost_mode"], checkpoint=p.get("checkpoint", "auto"),
                  fp4_on_hopper=fp4_on_hopper)
    context = p["prompt"] if p["context"] is None else p["context"]
    return (Job("prefill", batch=1, length=p["prompt"], chunk=p["chunk"], **common),
            Job("decode", batch=p["batch"], length=context, **common))


def resolve_cost_mode(p: dict[str, Any]) -> dict[str, Any]:
    """A point with ``cost_mode`` ``auto`` resolved as serving answers resolve it: hybrid where the measured
    kernel tables cover its GPU, else SOL (:func:`~v41graph.analysis.basis.tables_cover`).

    >>> resolve_cost_mode({"hardware": "h200_sxm", "cost_mode": "auto"})["cost_mode"]
    'hybrid'
    >>> resolve_cost_mode({"hardware": "h200_sxm", "cost_mode": "sol"})["cost_mode"]
    'sol'
    """
    if p["cost_mode"] != "auto":
        return p
    from ..basis import tables_cover
    name = p["hardware"] if isinstance(p["hardware"], str) else p["hardware"].name
    return {**p, "cost_mode": "hybrid" if tables_cover(name) else "sol"}


def plan_work(jobs: Iterable[Job], fast_min: int = FAST_MIN) -> list[Job | LengthJob]:
    """Distinct jobs, with SOL shapes of ``fast_min`` lengths or more folded into one :class:`LengthJob`
    (the closed form is SOL's; a measured basis compiles each length)."""
    by_shape: dict[Job, set[int]] = {}
    work: list[Job | LengthJob] = []
    for j in jobs:
        if j.chunks > 1 or j.cost_mode != "sol":  # several forwards, or measured: compiled one by one
            if j not in work:
                work.append(j)
            continue
        by_shape.setdefault(j.shape(), set()).add(j.length)
    for shape, lengths in by_shape.items():
        if len(lengths) >= fast_min:
            work.append(LengthJob(shape, tuple(sorted(lengths))))
        else:
            work += [Job(**{**shape.__dict__, "length": n}) for n in sorted(lengths)]
    return work


def sweep(*, zip: Sequence[str] = (), executor: Any = "local", workers: int | None = None,  # noqa: A002
          progress: bool | None = None, fast_min: int = FAST_MIN, fp4_on_hopper: bool = False,
          auto_mapping: bool = False, **axes) -> SweepResult:
    """Evaluate a grid; see the module docstring. Axes are keyword lists (:data:`AXES`);
    ``fp4_on_hopper`` lets a ``checkpoint`` naming an FP4 one run on a GPU without FP4 tensor cores;
    ``auto_mapping`` (no ``tp``, ``ep`` or ``dp`` axis given): each point on the smallest mapping that fits
    (:func:`~.sweep_mapping.auto_mappings`), the result's ``deployments`` their records."""
    if auto_mapping and {"tp", "ep", "dp"} & set(axes):
        raise SweepError("sweep auto_mapping: the mapping is picked per point; give no tp, ep or dp axis with it")
    asked = grid(axes, zip)
    for name, ckpt in sorted({(p["model"], p["checkpoint"]) for p in asked if p["checkpoint"] != "auto"}):
        with_checkpoint(load_model(name), ckpt, "sweep checkpoint")  # a name the model lacks fails now
    from .sweep_mapping import auto_mappings
    deployments = auto_mappings(asked, fp4_on_hopper) if auto_mapping else ()  # (sets each point's mapping)
    points = [resolve_cost_mode(p) for p in asked]
    jobs = [point_jobs(p, fp4_on_hopper) for p in points]
    # off SOL each point's SOL twin too: the ceiling its forecast stands beside
    ceilings = [None if p["cost_mode"] == "sol" else point_jobs({**p, "cost_mode": "sol"}, fp4_on_hopper)
                for p in points]
    everything = [j for pair in jobs + [c for c in ceilings if c] for j in pair]
    results = execute(plan_work(everything, fast_min), executor, workers=workers, progress=progress)
    rows = [_row(p, results[pre], results[dec], fp4_on_hopper) for p, (pre, dec) in zip_(points, jobs)]
    for row, c in zip_(rows, ceilings):
        if c is not None:
            _beside_sol(row, results[c[0]], results[c[1]])
    caveats = sorted({c for c in (r.pop("_caveat") for r in rows) if c})
    auto = sorted({f"{q['hardware']}: {p['cost_mode']}" for q, p in zip_(asked, points) if q["cost_mode"] == "auto"})
    if auto:
        caveats.insert(0, "cost_mode auto, a forecast: hybrid where measured kernel tables cover the GPU, else sol ("
                       + ", ".join(auto) + "); off SOL the sol_* columns hold the SOL ceiling")
    return SweepResult(tuple(rows), COLUMNS, note="; ".join(caveats), deployments=deployments)


def _beside_sol(row: dict[str, Any], pre: dict, dec: dict) -> None:
    """A forecast row's SOL ceiling: the same point's TTFT and ITL on SOL, and forecast / SOL."""
    from ..basis import ceiling_ratio
    if "error" in pre or "error" in dec or row["ttft_s"] is None:
        return
    row.update({"sol_ttft_s": pre["forward_s"], "sol_itl_s": dec["forward_s"],
                "ttft_over_sol": ceiling_ratio(row["ttft_s"], pre["forward_s"]),
                "itl_over_sol": ceiling_ratio(row["itl_s"], dec["forward_s"])})


zip_ = zip  # the builtin, under another name: ``sweep`` takes a ``zip`` keyword


def _row(p: dict[str, Any], pre: dict, dec: dict, fp4_on_hopper: bool = False) -> dict[str, Any]:
    from .sweep_jobs import point_model
    from .sweep_mapping import mapping_figures  # the per-GPU memory: imported once a sweep has rows
    row: dict[str, Any] = {**dict.fromkeys(COLUMNS), **p}  # every column, None where no figure
    try:  # the checkpoint the point ran (its Hugging Face id), and its caveat, for the result's note
        choice = point_model(p["model"], p["hardware"], p["checkpoint"], fp4_on_hopper)[1]
        row["checkpoint"], row["_caveat"] = choice.hf_id, choice.caveat
    except V41Error:  # an FP4 checkpoint on Hopper without fp4_on_hopper: the jobs carry the reason
        row["checkpoint"], row["_caveat"] = p["checkpoint"], None
    p = {**p, "fp4_on_hopper": fp4_on_hopper}
    row["context"] = p["prompt"] if p["context"] is None else p["context"]
    errors = [r["error"] for r in (pre, dec) if "error" in r]
    mapping = mapping_figures(p, None if errors else pre["workspace_bytes"], None if errors else dec["workspace_bytes"])
    row.update(mapping)
    if not errors and mapping["fits"] is False:
        errors.append(mapping["fit_note"])  # a plan that does not fit is invalid; its figures stay
    row.update({"valid": not errors, "reason": errors[0] if errors else ""})
    if "error" in pre or "error" in dec:
        return row
    itl = dec["forward_s"]
    per_user = dec["output_tokens"] / p["batch"] / itl
    row.update({
        "ttft_s": pre["forward_s"], "itl_s": itl, "tok_s_per_user": per_user,
        "tok_s_per_gpu": None if mapping["gpus"] is None else dec["output_tokens"] / itl / mapping["gpus"],
        "prefill_bound": pre["bound"], "decode_bound": dec["bound"],
        "coverage": min(pre["coverage"], dec["coverage"]), "method": pre["method"] if pre["method"] == dec["method"]
        else f"{pre['method']}+{dec['method']}",
    })
    return row
