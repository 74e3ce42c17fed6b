"""What the interactive page shows, computed (issue 29): the layer map, each scheduled plan's
node costs by layer and by family, and the closed forms its calculators evaluate in the browser.

The forms are the project's own, as sympy expressions: cache memory by owner from
:func:`~v41graph.model.memory.cache_memory` at a symbolic context ``L``, the per-GPU memory from
:func:`~v41graph.model.gpu_memory.gpu_memory` at a symbolic batch ``B``, and the prefill SOL time
from the closed-form query (:func:`~v41graph.analysis.symbolic.query.closed_form`) at a symbolic prompt ``N``
on the page's mapping. ``render/html/html_report.py`` prints them as
JavaScript and never compiles; nothing here formats text.

>>> from v41graph import load_model
>>> from v41graph.symbols import L
>>> m = load_model()
>>> forms = cache_forms(m)
>>> forms["cache.total"].expr.subs(L, 4096), forms["cache.total"].symbol
(6373376, 'L')
>>> [l["kv_owner"] for l in layer_map(m) if l["index"] == 29], len(layer_map(m))
([20], 43)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import sympy

from ..costs.hardware import load_hardware
from ..ir.dp import rank_copies
from ..ir.plan import Plan, Request
from ..model.config import ModelSpec
from ..model.gpu_memory import budget_bytes, gpu_memory
from ..model.memory import cache_memory
from ..model.mapping import mapping_of
from ..passes.display import node_records
from ..symbols import B, L, N
from .symbolic.query import closed_form

#: the largest batch the per-GPU calculator accepts (the form holds for any; a bound keeps inputs sane)
MAX_BATCH = 1 << 20


@dataclass(frozen=True)
class Form:
    """A closed form in one symbol, valid for ``lo ≤ symbol ≤ hi``."""

    expr: sympy.Expr
    symbol: str
    lo: int
    hi: int


@dataclass(frozen=True)
class PageData:
    """Everything the page shows: JSON-ready parts, the forms, and the compiled plan it draws."""

    model: str
    hardware: str
    basis: str
    layers: list[dict[str, Any]]
    plans: dict[str, dict[str, Any]]  # label → {"total_s", "nodes": {layer key: [node]}, "families": {...}}
    # (families: op families as ``cost`` reports them, analysis/families.py)
    forms: dict[str, Form]
    owners: list[dict[str, int]]  # the cache calculator's rows: owner layer and its compress ratio
    mappings: list[dict[str, Any]]  # the per-GPU calculator's rows: a label and the form key
    diagram: Any = field(default=None, compare=False, repr=False)  # the scheduled plan drawn, or None
    diagram_label: str | None = None  # its label in ``plans``
    diagram_layers: range = range(0)
    deployment: str | None = None  # the deployment line of the report or plan (``cli/options/mapping_options.py``)
    prefill_mapping: dict[str, int] = field(default_factory=lambda: {"tp": 1, "ep": 1, "dp": 1})  # its calculator's


def layer_map(model: ModelSpec) -> list[dict[str, Any]]:
    """The backbone layers and DSpark draft blocks: path, stage, compress ratio, KV owner, Top-K producer."""
    out = [{"index": l.index, "stage": l.stage, "path": l.path, "compress_ratio": l.compress_ratio,
            "kv_owner": l.kv_owner, "topk_producer": l.topk_producer, "window": l.window, "draft": False}
           for l in model.layers]
    out += [{"index": d.index, "stage": "dspark", "path": "swa" if d.compress_ratio == 0 else "draft",
             "compress_ratio": d.compress_ratio, "kv_owner": None, "topk_producer": None, "window": d.window,
             "draft": True, "block": d.block} for d in model.draft_blocks]
    return out


def _key(layer: int | None) -> str:
    return "none" if layer is None else str(layer)


def plan_costs(model: ModelSpec, plan: Plan, compiled) -> dict[str, Any]:
    """A scheduled plan's nodes by layer (name, op family — a fused module names each it covers —, time by
    family, time, bound, on the critical path) and its node time by op family, largest first: the families
    of ``cost`` (:mod:`.families`, a fused module split by its members' SOL shares; never ``Fused``). Times
    are the schedule's (measured where an OP / hybrid table priced the node, else SOL)."""
    from .families import node_parts
    parts = {nid: (t, p) for nid, t, p in node_parts(model, plan, compiled)}
    nodes: dict[str, list[dict[str, Any]]] = {}
    families: dict[str, float] = {}
    for r in node_records(compiled.graph):
        t, held = parts.get(r["name"], (0.0, ()))
        split: dict[str, float] = {}
        for family, _, share, _, _ in held:
            split[family] = split.get(family, 0.0) + share
            families[family] = families.get(family, 0.0) + share
        nodes.setdefault(_key(r["layer"]), []).append(
            {"name": r["name"], "family": " + ".join(split) or "storage", "families": split, "time_s": t,
             "bound": r["bound"], "critical": bool(r["critical"])})
    report = compiled.report("schedule")
    return {"total_s": report.total_time_s, "nodes": nodes,
            "families": dict(sorted(families.items(), key=lambda kv: (-kv[1], kv[0])))}


def cache_forms(model: ModelSpec, *, dspark: bool = False) -> dict[str, Form]:
    """Cache memory of one request of ``L`` tokens by owner (entries, main KV, index K), the SWA
    rings, compressor state and the total, each ``cache_memory`` at a symbolic ``L``."""
    c = cache_memory(model, L, dspark=dspark)
    hi = model.max_position or 1 << 40
    forms = {}
    for o in c.owners:
        for part in ("entries", "main_kv_bytes", "index_k_bytes"):
            forms[f"cache.{o.owner}.{part}"] = Form(sympy.sympify(getattr(o, part)), "L", 0, hi)
    for part, value in (("global_entries", c.global_entries), ("global_bytes", c.global_bytes),
                        ("swa_bytes", c.swa_bytes + c.dspark_swa_bytes), ("state_bytes", c.state_bytes),
                        ("total", c.total_bytes)):
        forms[f"cache.{part}"] = Form(sympy.sympify(value), "L", 0, hi)
    return forms


def gpu_form(model: ModelSpec, plan: Plan, capacity_bytes: int) -> tuple[Form, int]:
    """One GPU's memory (weights and the cache of its DP rank's requests, no workspace) when the
    plan's first request runs ``B`` copies: ``gpu_memory`` at a symbolic batch; and the context it holds."""
    first = plan.requests[0]
    batch = replace(plan, requests=(replace(first, copies=B),))
    share = rank_copies(batch)[0]
    g = gpu_memory(model, mapping_of(batch), capacity_bytes, [(int(first.end), share)], dspark=plan.dspark == "on",
                   engram_on_host=plan.engram_residency == "host")
    return Form(sympy.sympify(g.total_bytes), "B", 1, MAX_BATCH), int(first.end)


def prefill_forms(model: ModelSpec, hardware, mapping: Mapping[str, int] | None = None) -> dict[str, Form]:
    """SOL time of an N-token prefill, replay off and (V4.1) bounded, on ``mapping`` (``{"tp", "ep",
    "dp"}``, 1 GPU if None): the closed-form query's ``sol_time``."""
    degrees = {k: (mapping or {}).get(k, 1) for k in ("tp", "ep", "dp")}
    out = {}
    for replay in ("off", "bounded") if model.family == "v4.1" else ("off",):
        cf = closed_form(model, Plan([Request.prefill(N)], decoder_replay=replay, **degrees), "sol_time",
                         hardware=hardware)
        lo, hi = cf.valid_range
        out[f"prefill.{replay}"] = Form(cf.expr, "N", lo, hi)
    return out


def page_data(model: ModelSpec, hardware, plans: Mapping[str, Any], gpu_plans: Mapping[str, Plan], *,
              sources: Mapping[str, Plan], basis: str = "SOL", deployment: str | None = None,
              mapping: Mapping[str, int] | None = None, diagram: str | None = None,
              diagram_layers: range = range(18, 23)) -> PageData:
    """Assemble the page: ``plans`` maps a label to a scheduled plan (``v41graph.compile``) and ``sources``
    the same label to the Plan it compiled (its op families need the plan's rows),
    ``gpu_plans`` a label to the plan whose mapping the per-GPU calculator uses; ``mapping`` the
    degrees the prefill calculator runs on (1 GPU if None); ``basis`` and ``deployment`` the header's
    lines; ``diagram`` names the plan of ``plans`` to draw (default the first)."""
    hw_name = getattr(hardware, "name", hardware)
    hw = load_hardware(hw_name)
    degrees = {k: (mapping or {}).get(k, 1) for k in ("tp", "ep", "dp")}
    forms = {**cache_forms(model), **prefill_forms(model, hw, degrees)}
    mappings = []
    for i, (label, plan) in enumerate(gpu_plans.items()):
        form, context = gpu_form(model, plan, hw.hbm_capacity)
        forms[f"gpu.{i}"] = form
        mp = mapping_of(plan)
        mappings.append({"label": label, "form": f"gpu.{i}", "context": context, "tp": mp.tp, "dp": mp.dp,
                         "ep": mp.ep, "capacity_bytes": hw.hbm_capacity, "budget_bytes": budget_bytes(hw.hbm_capacity)})
    owners = [{"owner": o.owner, "ratio": o.ratio} for o in cache_memory(model, 1).owners]
    drawn = diagram if diagram is not None else next(iter(plans), None)
    return PageData(model.name, hw_name, basis, layer_map(model),
                    {k: plan_costs(model, sources[k], c) for k, c in plans.items()},
                    forms, owners, mappings, plans.get(drawn) if drawn is not None else None, drawn, diagram_layers,
                    deployment, degrees)
