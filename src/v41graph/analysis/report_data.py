"""Every figure of ``v41graph report``, JSON-ready (``render/markdown_report.py`` writes them).

The layout, memory at 4K / 128K / 1M tokens, prefill SOL at 8K and 128K with decoder replay off
and bounded (and the speed-up), a decode step at batch 64 and context 8K, per-GPU memory, the
closed forms of token×layers (replay off and bounded) and of KV bytes; and the graph around the
encoder → decoder boundary that the report draws.
"""

from __future__ import annotations

from ..costs.hardware import load_hardware
from ..ir.graph import Graph
from ..ir.plan import Plan, Request
from ..model.config import ModelSpec
from ..passes import compile
from ..symbols import N
from .gpu_summary import mapping_summary, memory_per_gpu
from .symbolic.query import closed_form
from .report_sections import sections_data
from .summaries import layout_summary, memory_summary

REPORT_CONTEXTS = (4096, 131072, 1048576)
PREFILLS = (8192, 131072)
DECODE_PLAN = Plan([Request.decode(8192, copies=64)])  # the decode step (batch 64 at 8K) on 1 GPU


def _schedule(model: ModelSpec, plan: Plan, hardware: str, cost=None):
    return compile(model, plan, hardware, cost=cost).report("schedule")


#: the report's workload, whose weights and cache the deployment must hold (auto mapping)
def report_hardware(name: str) -> str:
    """The hardware name ``report`` writes (report.json, the page, the figures' GPU): an alias as the built-in
    it stands for, a built-in name or a hardware file's path as given.

    >>> report_hardware("h200"), report_hardware("b200"), report_hardware("gb300")
    ('h200_sxm', 'b200_sxm', 'gb300')
    """
    from ..costs.hardware import ALIASES
    return ALIASES.get(name, name)


def report_workload() -> Plan:
    return Plan([Request.prefill(max(PREFILLS)), Request.decode(8192, copies=64)])


def _degrees(mapping: dict | None) -> dict[str, int]:
    return {k: (mapping or {}).get(k, 1) for k in ("tp", "ep", "dp")}


def report_plans(model: ModelSpec, mapping: dict | None = None) -> dict[str, Plan]:
    """The report's plans by label, each on ``mapping`` (1 GPU if None): each prefill with replay off
    (and bounded on V4.1), the decode step.

    >>> from v41graph import load_model
    >>> plans = report_plans(load_model(), {"tp": 8, "ep": 8})
    >>> list(plans)[:2], plans["decode 64 @ 8K"].tp
    (['prefill 8,192 replay off', 'prefill 8,192 replay bounded'], 8)
    """
    degrees, out = _degrees(mapping), {}
    for n in PREFILLS:
        out[f"prefill {n:,} replay off"] = Plan([Request.prefill(n)], decoder_replay="off", **degrees)
        if model.family == "v4.1":
            out[f"prefill {n:,} replay bounded"] = Plan([Request.prefill(n)], decoder_replay="bounded", **degrees)
    out["decode 64 @ 8K"] = DECODE_PLAN.with_policies(**degrees)
    return out


def report_mappings(mapping: dict | None = None) -> dict[str, Plan]:
    """The decode step at the report's mapping (its per-GPU table), by a ``tp · dp · ep`` label.

    >>> list(report_mappings({"tp": 8, "ep": 8}))
    ['tp 8 · dp 1 · ep 8']
    """
    d = _degrees(mapping)
    return {f"tp {d['tp']} · dp {d['dp']} · ep {d['ep']}": DECODE_PLAN.with_policies(**d)}


def _prefills(model: ModelSpec, plans: dict[str, Plan], hardware: str, cost) -> dict[str, dict]:
    """Each prefill's time with replay off and bounded (V4.1), and the speed-up, by prompt length."""
    out = {}
    for n in PREFILLS:
        off = _schedule(model, plans[f"prefill {n:,} replay off"], hardware, cost).total_time_s
        on = (_schedule(model, plans[f"prefill {n:,} replay bounded"], hardware, cost).total_time_s
              if model.family == "v4.1" else None)
        out[str(n)] = {"replay_off_s": off, "replay_bounded_s": on, "speedup": None if on is None else off / on}
    return out


def sol_ceiling(model: ModelSpec, plans: dict[str, Plan], hardware: str, prefill: dict, decode_s: float) -> dict:
    """The report's times on SOL beside a forecast's (``prefill``, ``decode_s``: the forecast's), with each
    ratio forecast / SOL (:func:`~v41graph.analysis.basis.ceiling_ratio`)."""
    from .basis import ceiling_ratio
    sol = _prefills(model, plans, hardware, None)
    step = _schedule(model, plans["decode 64 @ 8K"], hardware).total_time_s
    for n, p in sol.items():
        p.pop("speedup")
        p["ratio"] = {k.removesuffix("_s"): ceiling_ratio(prefill[n][k], v) for k, v in list(p.items())}
    return {"prefill": sol, "decode_step_s": step, "decode_ratio": ceiling_ratio(decode_s, step)}


def report_data(model: ModelSpec, hardware: str, cost=None, mapping: dict | None = None) -> dict:
    """Every figure of the report, JSON-ready (``cost``: a CostMode for OP / hybrid times; SOL if None;
    ``mapping``: ``{"tp", "ep", "dp"}`` every plan runs on, 1 GPU if None). Off SOL, ``sol_ceiling``
    holds the same times on SOL with each ratio (a forecast beside its ceiling)."""
    plans = report_plans(model, mapping)
    prefill = _prefills(model, plans, hardware, cost)
    decode = _schedule(model, plans["decode 64 @ 8K"], hardware, cost)
    # Every plan here states its replay policy; the closed form of token×layers is given under both,
    # as the prefill table is, so nothing depends on a default (the CLI's --replay defaults to off).
    prefill_n = {replay: Plan([Request.prefill(N)], decoder_replay=replay) for replay in ("off", "bounded")}
    token_layers = {f"replay_{replay}": (str(closed_form(model, plan, "token_layers").expr)
                                         if replay == "off" or model.family == "v4.1" else None)
                    for replay, plan in prefill_n.items()}
    hw = load_hardware(hardware)
    per_gpu = [{**memory_per_gpu(model, p, hw), "mapping": mapping_summary(p)}
               for p in report_mappings(mapping).values()]
    return {
        "model": model.name, "hardware": hardware, "layout": layout_summary(model),
        "memory": [memory_summary(model, n) for n in REPORT_CONTEXTS],
        "prefill": prefill,
        "decode_b64_ctx8k": {"step_s": decode.total_time_s, "tokens_per_s": 64 / decode.total_time_s,
                             "bound_by": decode.bound_by},
        "closed_forms": {"token_layers": token_layers,
                         "kv_bytes": str(closed_form(model, prefill_n["off"], "kv_bytes").expr)},
        "memory_per_gpu": per_gpu,
        **sections_data(model, plans["decode 64 @ 8K"], hardware, cost),
        **({} if cost is None or cost.mode == "sol" else
           {"cost_mode": cost.mode, "decode_coverage": {k: v for k, v in decode.coverage.items() if k != "nodes"},
            "sol_ceiling": sol_ceiling(model, plans, hardware, prefill, decode.total_time_s)}),
    }


def boundary_graph(model: ModelSpec) -> Graph | None:
    """The lowered 8K prefill the report's boundary diagram draws; None for a model without an encoder."""
    if model.family != "v4.1":
        return None
    from ..ir.lower.blocks import lower
    return lower(model, Plan([Request.prefill(8192)]))


def report_answer(model: ModelSpec, hardware: str, served, choice, checkpoints=()):
    """``report``'s answer (report.json) on the deployment ``choice`` (a ``MappingChoice``): :func:`report_data`
    on its degrees, priced on ``served`` (a :class:`~.basis.ServingBasis`: the basis record carries the decode
    coverage off SOL), every value JSON-ready (:func:`~.summaries.jsonable`).

    >>> from v41graph import load_model
    >>> from v41graph.analysis.basis import serving_basis
    >>> from v41graph.analysis.mapping_search import smallest_fitting
    >>> from v41graph.costs.hardware import load_hardware
    >>> model, hw = load_model(), load_hardware("h200_sxm")
    >>> a = report_answer(model, "h200_sxm", serving_basis("sol", "h200_sxm"),
    ...                   smallest_fitting(model, hw, report_workload()))
    >>> a.basis["mode"], a.deployment.line()
    ('sol', '8 × h200_sxm: tp 8 · ep 8 (auto: smallest that fits)')
    """
    from .answer import Priced
    from .basis import basis_record
    from .summaries import jsonable
    data = report_data(model, hardware, served.mode, mapping=degrees(choice.mapping))
    basis = basis_record(served.basis, chosen=served.chosen, why=served.why, coverage=data.get("decode_coverage"))
    return Priced(jsonable(data), jsonable(basis), choice, tuple(checkpoints))


def degrees(mapping) -> dict[str, int]:
    """A mapping's degrees as the report's plans take them: ``{"tp", "ep", "dp"}``."""
    return {"tp": mapping.tp, "ep": mapping.ep, "dp": mapping.dp}


def report_page_data(record: dict, model: ModelSpec, hardware: str, cost, mapping: dict[str, int], *,
                     diagram_layers=None):
    """The page data of ``report.html``: the report's plans at ``mapping`` (:func:`degrees`) compiled on ``cost``,
    with ``record``'s (report.json's) basis and deployment records; ``diagram_layers``: the layers its diagram
    draws (the markdown report's)."""
    from .basis import basis_line
    from .page import page_data
    sources = report_plans(model, mapping)
    plans = {k: compile(model, p, hardware, cost=cost) for k, p in sources.items()}
    deployment = record["deployment"]["line"] if "deployment" in record else None
    return page_data(model, hardware, plans, report_mappings(mapping), sources=sources,
                     basis=basis_line(record["basis"]), deployment=deployment, mapping=mapping,
                     diagram_layers=diagram_layers)
