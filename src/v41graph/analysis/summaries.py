"""JSON-ready summaries: the model layout and memory, compiled graphs (every pass's typed report,
token×layers), costs and closed forms. The CLI's text and ``--json`` output both render these
dicts, so the two can never disagree.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.passes import compile_graph
>>> m = load_model()
>>> s = compile_summary(m, compile_graph(m, Plan([Request.prefill(128)], decoder_replay="bounded")))
>>> s["token_layers"], [p["name"] for p in s["passes"]]
(5120, ['precision', 'replay', 'kv_dedup', 'fusion'])

>>> from v41graph import load_model
>>> s = layout_summary(load_model())
>>> s["path_counts"], s["layers"][29]["kv_owner"], s["layers"][29]["topk_producer"]
({'swa': 2, 'full': 4, 'reindex': 4, 'reuse': 30}, 20, 28)
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

from ..algebra import is_symbolic
from ..chance import plain
from ..model.config import ModelSpec
from ..model.inventory import inventory
from ..model.memory import cache_memory
from ..model.parameters import parameters
from ..passes import Compiled
from ..passes.replay import token_layers
from ..model.formats import GIB


def jsonable(value: Any) -> Any:
    """Dataclasses → dicts, exact numbers → int (or float for a true fraction), sympy → str."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for name in ("tokens_pruned",):
            if hasattr(value, name):
                out[name] = jsonable(getattr(value, name))
        return out
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    if is_symbolic(value):
        return int(value) if value.is_Integer else str(value)
    return value


def plan_token_layers(model: ModelSpec, plan, compiled: Compiled) -> dict[str, Any]:
    """``token_layers`` of the whole plan (Σ over its requests and backbone layers of query tokens, replay
    policies applied: the token ledger, whatever the mapping) and ``token_layers_per_dp_rank``, the costed
    (busiest) attention-DP rank's, read from the lowered graph (equal under dp = 1). Issue 37: one name,
    one meaning in every mapping.

    >>> from v41graph import load_model, Plan, Request
    >>> from v41graph.passes import compile_graph
    >>> m = load_model()
    >>> plan = Plan([Request.prefill(100), Request.prefill(8000)], tp=8, dp=2, ep=16)
    >>> plan_token_layers(m, plan, compile_graph(m, plan))
    {'token_layers': 324000, 'token_layers_per_dp_rank': 320000}
    """
    from ..ir.ledger import ledger
    return {"token_layers": jsonable(ledger(model, plan).token_layers()),
            "token_layers_per_dp_rank": jsonable(token_layers(compiled.graph))}


def compile_summary(model: ModelSpec, compiled: Compiled, plan=None) -> dict[str, Any]:
    """``compile --json``: passes with reports, token×layers (with ``plan``: the whole plan's and the
    costed DP rank's, :func:`plan_token_layers`), resident weights, KV by owner."""
    counts = ({"token_layers": jsonable(token_layers(compiled.graph))} if plan is None
              else plan_token_layers(model, plan, compiled))
    kv_table = compiled.graph.annotations.get("kv", {})
    dedup = compiled.report("kv_dedup")
    owners = {nid: {"owner": r.owner, "kind": r.kind, "bytes": jsonable(r.bytes), "readers": len(r.readers)}
              for nid, r in sorted(kv_table.items()) if r.kind in ("GlobalKVStore", "IndexKStore")}
    return {
        "model": model.name,
        "passes": [{"name": p.name, "changed": p.changed, "report": jsonable(p.report)} for p in compiled.passes],
        **counts,
        "nodes": len(compiled.graph.nodes),
        "edges": len(compiled.graph.edges),
        "weights_bytes": inventory(model).total_bytes,
        "kv": {"global_bytes": jsonable(dedup.global_bytes), "naive_global_bytes": jsonable(dedup.naive_global_bytes),
               "reads": dedup.reads, "owners": owners},
    }


def _layer_key(layer: str) -> tuple[int, int]:
    return (1, 0) if layer == "-" else (0, int(layer))


def cost_summary(model: ModelSpec, plan, compiled: Compiled, hardware=None) -> dict[str, Any]:
    """``cost --json``: the scheduling pass's report, token×layers (the whole plan's, and the costed DP
    rank's: :func:`plan_token_layers`) and the system figures.

    Times are seconds. The breakdowns (by stage, op kind, layer) and ``resources_s`` sum node
    times over *all* nodes — the work each part holds — while ``total_time_s`` is
    max(critical path, busiest resource).

    >>> from v41graph import load_model, Plan, Request
    >>> from v41graph.passes import compile
    >>> m, plan = load_model(), Plan([Request.prefill(1024)])
    >>> s = cost_summary(m, plan, compile(m, plan, "h200_sxm"))
    >>> s["hardware"], s["token_layers"], s["system"]["output_tokens"], s["system"]["ttft_s"] == s["total_time_s"]
    ('h200_sxm', 40960, 1, True)
    """
    from ..costs.hardware import load_hardware
    from ..costs.requests.system import system_figures
    from ..analysis.families import by_family
    from .serving.moe_loads import moe_loads
    from .gpu_summary import dp_ranks, mapping_summary, memory_per_gpu, tokens_per_gpu, workspace_bytes
    report = compiled.report("schedule")
    hardware = hardware or load_hardware(report.hardware)
    per_gpu = {**memory_per_gpu(model, plan, hardware, workspace=workspace_bytes(compiled.graph)),
               "mapping": mapping_summary(plan)}
    requests = [{"kind": r.kind, "cached": r.cached, "new": r.new, "copies": r.copies} for r in plan.requests]
    return jsonable({
        "model": model.name,
        "hardware": report.hardware,
        "requests": requests,
        "policies": {**dict(plan.identity()), "fusion": plan.fusion_for(model)},  # the profile that ran
        "total_time_s": report.total_time_s,
        "critical_path_s": report.critical_path_s,
        "resource_bound_s": report.resource_bound_s,
        "critical_path": list(report.critical_path),
        **plan_token_layers(model, plan, compiled),
        "breakdown": {"by_stage": report.by_stage, "by_op": report.by_op,
                      "by_layer": dict(sorted(report.by_layer.items(), key=lambda kv: _layer_key(kv[0]))),
                      "by_family": by_family(model, plan, compiled, hardware).as_dict()},
        "bound_by": report.bound_by,
        "resources_s": report.resource_s,
        "system": system_figures(plan, report),
        "mapping": mapping_summary(plan),
        "tokens_per_gpu": tokens_per_gpu(model, plan),
        **({"dp_ranks": dp_ranks(plan)} if plan.dp > 1 else {}),
        "memory_per_gpu": per_gpu,
        "moe": moe_loads(model, plan, compiled.graph),
        "assumptions": list(report.assumptions),
        **({} if report.cost_mode == "sol" else {"cost_mode": report.cost_mode, "coverage": report.coverage}),
    })


#: how to read ``expr`` back: N and S are also names of sympy objects, and only symbols with these
#: assumptions are v41graph's (``v41graph.symbols.length``); plain sympy, no v41graph needed (``expr``
#: holds sympy's own functions only: :func:`v41graph.chance.plain`)
PARSE_HINT = "sympy.sympify(expr, locals={s: sympy.Symbol(s, positive=True, integer=True) for s in symbols})"


def formula_summary(cf, *, hardware: str | None = None, latex: bool = False) -> dict[str, Any]:
    """``formula --json``: the expression as text, its symbols and the range over which it holds.

    ``expr`` is the closed form in sympy's own functions (:func:`v41graph.chance.plain`: the
    expected distinct experts as ``(1 - p)**N``), so plain ``sympy.sympify`` reads it without
    v41graph; :data:`PARSE_HINT` (also in the output as ``parse``) reads it back to an expression
    equal to the closed form: identical for sums of Min/floor terms, equal up to sympy
    distributing a number over a sum for ``sol_time``, and for the expected-experts terms within
    2⁻⁵⁴ each (``value_exact`` is the tool's, with ``(1 - p)**N`` on its 2⁻⁵³ grid). ``valid_range`` is the domain of a
    one-symbol form (1 to the largest value within max_position_embeddings) and ``pieces`` the
    ``[first, last]`` of each regime of its Piecewise; ``None`` / ``[]`` for several symbols
    (evaluating those where the binding's fusion or path does not hold raises).

    >>> from v41graph import load_model, Plan, Request
    >>> from v41graph.analysis.symbolic.query import closed_form
    >>> from v41graph.symbols import N
    >>> s = formula_summary(closed_form(load_model(), Plan([Request.prefill(N)]), "kv_bytes"))
    >>> s["expr"], s["symbols"], s["valid_range"], s["pieces"]
    ('356*N + 1068*floor(N/2)', ['N'], [1, 1048576], [[1, 1048576]])
    """
    out: dict[str, Any] = {
        "metric": cf.metric,
        "expr": str(plain(cf.expr)),
        "symbols": list(cf.symbols),
        "valid_range": None if cf.valid_range is None else list(cf.valid_range),
        "pieces": [[lo, hi] for lo, hi, _ in cf.pieces],
        "binding": dict(cf.binding),
        "parse": PARSE_HINT,
    }
    if cf.binding and set(cf.symbols) <= {k for k, _ in cf.binding}:  # every symbol bound: its value
        value = cf(**dict(cf.binding))
        out["value"] = value if isinstance(value, int) else float(value)
        out["value_exact"] = str(value)
    if cf.metric == "sol_time":
        out.update({"unit": "s", "hardware": hardware, "critical_path_nodes": len(cf.critical_path),
                    "bound": cf.bound})
    if latex:
        import sympy  # closed forms only: the numeric summaries never import it
        out["latex"] = sympy.latex(plain(cf.expr))
    return out


def layout_summary(model: ModelSpec) -> dict[str, Any]:
    """The per-layer table (``layout --json``)."""
    layers = []
    for l in model.layers:
        layers.append({
            "index": l.index, "stage": l.stage, "path": l.path, "compress_ratio": l.compress_ratio,
            "kv_owner": l.kv_owner, "topk_producer": l.topk_producer, "window": l.window,
            "candidate_source": l.candidate_source, "candidate_user": l.candidate_user,
            "engram": l.engram, "dspark_target": l.dspark_target,
        })
    drafts = [{"index": d.index, "block": d.block, "compress_ratio": d.compress_ratio, "window": d.window,
               "n_routed_experts": d.n_routed_experts, "experts_per_token": d.experts_per_token}
              for d in model.draft_blocks]
    return {"model": model.name, "family": model.family, "layers": layers,
            "path_counts": model.path_counts(), "draft_blocks": drafts, "parameters": parameters(model).as_dict()}


def memory_summary(model: ModelSpec, context: int, *, dspark: bool = False, hardware=None,
                   plan=None, hot_cache_rows: int = 0) -> dict[str, Any]:
    """Resident weights by group and per-request cache memory by owner (``memory --json``); with a
    ``hardware`` and a ``plan`` (its mapping and requests), the per-GPU memory and fit as well."""
    inv = inventory(model)
    cache = cache_memory(model, context, dspark=dspark)
    by_group = inv.bytes_by_group()
    owners = [{"owner": o.owner, "ratio": o.ratio, "entries": o.entries, "main_kv_bytes": o.main_kv_bytes,
               "index_k_entries": o.index_k_entries, "index_k_bytes": o.index_k_bytes,
               "partial_tokens": o.partial_tokens, "state_bytes": o.state_bytes} for o in cache.owners]
    return {
        "model": model.name,
        "context": context,
        "weights_bytes": inv.total_bytes,
        "weights_gib": inv.total_bytes / GIB,
        "weights_by_group": by_group,
        "parameters": parameters(model).as_dict(),
        "kv": {
            "global_entries": cache.global_entries,
            "main_kv_bytes": cache.main_kv_bytes,
            "index_k_bytes": cache.index_k_bytes,
            "global_bytes": cache.global_bytes,
            "swa_bytes": cache.swa_bytes,
            "swa_payload_bytes": cache.swa_payload_bytes,
            "swa_entries_per_layer": cache.swa_entries_per_layer,
            "dspark_swa_bytes": cache.dspark_swa_bytes,
            "state_bytes": cache.state_bytes,
            "total_bytes": cache.total_bytes,
            "total_gib": cache.total_bytes / GIB,
            "owners": owners,
        },
        "engram_table_bytes": by_group.get("engram_tables", 0),
        "pages": _pages(model, context),
        **({} if hardware is None else {"memory_per_gpu": _per_gpu(model, plan, hardware, context, hot_cache_rows)}),
    }


def _pages(model: ModelSpec, context: int) -> dict[str, Any]:
    from ..model.paging import PAGE_TOKENS, paged_cache
    p = paged_cache(model, context)
    return {"page_tokens": PAGE_TOKENS, "full_pages": p.full_pages, "global_page_bytes": p.global_page_bytes,
            "global_bytes": p.global_bytes, "swa_pages": p.swa_pages, "swa_page_bytes": p.swa_page_bytes,
            "swa_bytes": p.swa_bytes}


def _per_gpu(model: ModelSpec, plan, hardware, context, hot_cache_rows=0) -> dict[str, Any]:
    from .gpu_summary import mapping_summary, memory_per_gpu
    held = [(context, 1)] if context else []
    per_gpu = memory_per_gpu(model, plan, hardware, contexts=held, hot_cache_rows=hot_cache_rows)
    return jsonable({**per_gpu, "mapping": mapping_summary(plan), "engram_residency": plan.engram_residency})
