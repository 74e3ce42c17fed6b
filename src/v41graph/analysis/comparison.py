"""Two configurations side by side: models, plans, hardware or mappings.

``compare(a, b)`` schedules two :class:`Side` s and returns a JSON-ready dict: each side's
totals (forward, critical path, busiest resource, TTFT, ITL), time by stage and by op family
(analysis/families.py: a fused module split over the families it covers by its members' SOL
shares), and memory (resident weights, the plan's global KV, and one GPU's weights and total under
the side's mapping); then the deltas b − a and the ratios b / a over the union of stages and
families (a family one side lacks counts 0 there). ``by_op`` (op kinds) stays in the JSON.
``render/text/compare_text.py`` renders it as text or Markdown.

>>> from v41graph import load_model, Plan, Request
>>> m = load_model()
>>> c = compare(Side(m, Plan([Request.prefill(1024)]), "h200_sxm"),
...             Side(m, Plan([Request.prefill(1024)], tp=8), "h200_sxm"))
>>> c["delta"]["total_time_s"] == c["sides"][1]["total_time_s"] - c["sides"][0]["total_time_s"] < 0
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..costs.hardware import Hardware, load_hardware
from ..errors import PlanError, expect
from ..costs.requests.system import system_figures
from ..ir.plan import Plan
from ..model.config import ModelSpec
from ..model.inventory import inventory
from ..passes import compile
from .families import by_family
from .gpu_summary import mapping_summary, memory_per_gpu, workspace_bytes
from .summaries import jsonable


@dataclass(frozen=True)
class Side:
    """One configuration: a model, a plan and a hardware (name or description)."""

    model: ModelSpec
    plan: Plan
    hardware: str | Hardware = "h200_sxm"


def compare_sides(models: Sequence[ModelSpec], hardware: Sequence[str | Hardware], plan: Plan,
                  vs: Mapping[str, Any] | None = None) -> tuple[Side, Side]:
    """The two sides ``compare`` sets side by side: A runs ``models[0]`` on ``hardware[0]`` with ``plan``, B
    ``models[1]`` on ``hardware[1]`` with ``plan`` changed by ``vs`` (policy name → value, e.g. ``{"tp": 8}``);
    the plan is built once, and two equal sides are refused.

    >>> from v41graph import load_model, Plan, Request
    >>> m, plan = load_model(), Plan([Request.prefill(8)])
    >>> a, b = compare_sides((m, m), ("h200_sxm", "h200_sxm"), plan, {"tp": 8, "ep": 8})
    >>> (a.plan.tp, b.plan.tp, b.plan.ep, a.plan is plan)
    (1, 8, 8, True)
    >>> compare_sides((m, m), ("h200_sxm", "h200_sxm"), plan)
    Traceback (most recent call last):
    ...
    v41graph.errors.PlanError: compare: sides A and B are the same; give two --model, two --hardware or --vs changes
    """
    a = Side(models[0], plan, hardware[0])
    b = Side(models[1], plan.with_policies(**vs) if vs else plan, hardware[1])
    if a == b:
        raise PlanError("compare: sides A and B are the same; give two --model, two --hardware or --vs changes")
    return a, b


def _label(side: Side, hw: Hardware) -> str:
    p = side.plan
    gpus = mapping_summary(p)["gpus"]
    return (f"{side.model.name} · {hw.name} · tp{p.tp} ep{p.ep} dp{p.dp} ({gpus} GPUs) · replay {p.decoder_replay}"
            f" · {p.fusion_for(side.model)}")


def side_figures(side: Side) -> dict[str, Any]:
    """Totals, breakdowns and memory of one side (seconds and bytes)."""
    expect(side, Side, "compare side", PlanError, " (v41graph.Side(model, plan, hardware))")
    hw = side.hardware if isinstance(side.hardware, Hardware) else load_hardware(side.hardware)
    compiled = compile(side.model, side.plan, hw)
    report = compiled.report("schedule")
    figures = system_figures(side.plan, report)
    families = by_family(side.model, side.plan, compiled, hw)
    per_gpu = memory_per_gpu(side.model, side.plan, hw, workspace=workspace_bytes(compiled.graph))
    return jsonable({
        "label": _label(side, hw), "model": side.model.name, "hardware": hw.name,
        "checkpoint": side.model.checkpoint, "expert_dtype": side.model.expert_dtype,
        "policies": {**dict(side.plan.identity()), "fusion": side.plan.fusion_for(side.model)},
        "total_time_s": report.total_time_s, "critical_path_s": report.critical_path_s,
        "resource_bound_s": report.resource_bound_s, "ttft_s": figures.ttft_s, "itl_s": figures.itl_s,
        "gpus": mapping_summary(side.plan)["gpus"], "by_stage": report.by_stage, "by_op": report.by_op,
        "by_family": {k: v.time_s for k, v in families.families.items()}, "family_rule": families.rule,
        "memory": {"weights_bytes": inventory(side.model).total_bytes,
                   "kv_global_bytes": compiled.report("kv_dedup").global_bytes,
                   "per_gpu_weights_bytes": per_gpu["weights_bytes"], "per_gpu_total_bytes": per_gpu["total_bytes"]},
    })


def _delta(a: float | None, b: float | None) -> dict[str, float | None]:
    if a is None or b is None:
        return {"a": a, "b": b, "delta": None, "ratio": None}
    return {"a": a, "b": b, "delta": b - a, "ratio": b / a if a else None}


def _table(a: dict[str, float], b: dict[str, float]) -> dict[str, dict]:
    return {k: _delta(a.get(k, 0.0), b.get(k, 0.0)) for k in sorted(set(a) | set(b))}


def compare(a: Side, b: Side) -> dict[str, Any]:
    """Both sides' figures and the deltas b − a (see the module docstring)."""
    fa, fb = side_figures(a), side_figures(b)
    delta = {k: fb[k] - fa[k] for k in ("total_time_s", "critical_path_s", "resource_bound_s")}
    delta["speedup"] = fa["total_time_s"] / fb["total_time_s"] if fb["total_time_s"] else None
    return {
        "sides": [fa, fb],
        "delta": delta,
        "totals": {k: _delta(fa[k], fb[k]) for k in ("total_time_s", "critical_path_s", "resource_bound_s",
                                                       "ttft_s", "itl_s")},
        "by_stage": _table(fa["by_stage"], fb["by_stage"]),
        "by_op": _table(fa["by_op"], fb["by_op"]),
        "by_family": _table(fa["by_family"], fb["by_family"]),
        "memory": _table(fa["memory"], fb["memory"]),
    }
