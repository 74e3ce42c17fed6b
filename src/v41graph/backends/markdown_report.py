"""``v41graph report``: the main job, written as a folder with a Markdown report and its files.

Contents: the layout summary, memory at 4K / 128K / 1M tokens, prefill SOL at 8K and 128K
with decoder replay off and on (and the speed-up), a decode step at batch 64 and context 8K,
the closed forms of token×layers and KV bytes, and a diagram around the encoder → decoder
boundary (layers 18–22). Every figure comes from the same functions as the other commands.
"""

from __future__ import annotations

import json
import os

from ..ir.plan import Plan, Request
from ..model.config import ModelSpec, load_model
from ..passes import schedule
from ..symbols import N
from .dot import find_renderer, render_dot, write_diagram
from .query import closed_form
from .summaries import jsonable, layout_summary, memory_summary
from .terminal import human_bytes, layout_text

REPORT_CONTEXTS = (4096, 131072, 1048576)
PREFILLS = (8192, 131072)
DIAGRAM_LAYERS = range(18, 23)  # last encoder Reuse layers, 20 (decoder Full), 21–22


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def _sol(model: ModelSpec, plan: Plan, hardware: str, cost=None):
    return schedule(model, plan, hardware, cost=cost).report("schedule")


def report_data(model: ModelSpec, hardware: str, cost=None) -> dict:
    """Every figure of the report, JSON-ready (``cost``: a CostMode for OP / hybrid times; SOL if None)."""
    prefill = {}
    for n in PREFILLS:
        off = _sol(model, Plan([Request.prefill(n)], decoder_replay="off"), hardware, cost).total_time_s
        on = (_sol(model, Plan([Request.prefill(n)], decoder_replay="bounded"), hardware, cost).total_time_s
              if model.family == "v4.1" else None)
        prefill[str(n)] = {"replay_off_s": off, "replay_bounded_s": on, "speedup": None if on is None else off / on}
    decode = _sol(model, Plan([Request.decode(8192, copies=64)]), hardware, cost)
    forms = {}
    replay = "bounded" if model.family == "v4.1" else "off"
    for metric in ("token_layers", "kv_bytes"):
        forms[metric] = str(closed_form(model, Plan([Request.prefill(N)], decoder_replay=replay), metric).expr)
    return {
        "model": model.name, "hardware": hardware, "layout": layout_summary(model),
        "memory": [memory_summary(model, n) for n in REPORT_CONTEXTS],
        "prefill_sol": prefill,
        "decode_b64_ctx8k": {"step_s": decode.total_time_s, "tokens_per_s": 64 / decode.total_time_s,
                             "bound_by": decode.bound_by},
        "closed_forms": {"replay": replay, **forms},
        **({} if cost is None or cost.mode == "sol" else
           {"cost_mode": cost.mode, "decode_coverage": {k: v for k, v in decode.coverage.items() if k != "nodes"}}),
    }


def _markdown(d: dict, diagram: str) -> str:
    counts = d["layout"]["path_counts"]
    lines = [f"# v41graph report — {d['model']} on {d['hardware']}", "",
             "## Layout", "", "paths: " + ", ".join(f"{k} {v}" for k, v in counts.items()), "",
             "```", layout_text(d["layout"]), "```", "", "## Memory (one request)", "",
             "| context | weights | global KV | SWA rings | cache total |", "|---|---|---|---|---|"]
    for m in d["memory"]:
        kv = m["kv"]
        lines.append(f"| {m['context']:,} | {human_bytes(m['weights_bytes'])} | {human_bytes(kv['global_bytes'])} | "
                     f"{human_bytes(kv['swa_bytes'])} | {human_bytes(kv['total_bytes'])} |")
    lines += ["", f"Engram tables: {human_bytes(d['memory'][0]['engram_table_bytes'])}, resident whatever the plan.",
              "", "## Prefill, " + ("speed of light" if "cost_mode" not in d else
                                     f"{d['cost_mode']} (OP times from measured tables)"), "",
              "| prompt | replay off | replay bounded | speed-up |", "|---|---|---|---|"]
    for n, p in d["prefill_sol"].items():
        on = "–" if p["replay_bounded_s"] is None else _ms(p["replay_bounded_s"])
        up = "–" if p["speedup"] is None else f"{p['speedup']:.2f}×"
        lines.append(f"| {int(n):,} | {_ms(p['replay_off_s'])} | {on} | {up} |")
    dec = d["decode_b64_ctx8k"]
    lines += ["", "## Decode step (batch 64, context 8K)", "",
              f"{_ms(dec['step_s'])} per step, {dec['tokens_per_s']:,.0f} tokens/s; nodes by bound: {dec['bound_by']}",
              *([] if "cost_mode" not in d else
                [f"measured or interpolated: {d['decode_coverage']['measured_or_interpolated']:.1%} of the decode "
                 f"step's node time; fell back to SOL: {', '.join(d['decode_coverage']['fell_back']) or 'nothing'}"]),
              "", f"## Closed forms (decoder replay {d['closed_forms']['replay']})"
              + ("" if "cost_mode" not in d else "; closed forms are SOL, never OP"), "",
              f"- token×layers of an N-token prefill: `{d['closed_forms']['token_layers']}`",
              f"- global KV bytes for N tokens: `{d['closed_forms']['kv_bytes']}`", "",
              "## Diagram: the encoder → decoder boundary (layers 18–22)", "", diagram, ""]
    return "\n".join(lines)


def write_report(out_dir: str = "v41graph-report", *, model: ModelSpec | None = None,
                 hardware: str = "h200_sxm", cost=None) -> str:
    """Write ``report.md``, ``report.json`` and the diagram into ``out_dir``; return a text summary."""
    model = model or load_model()
    os.makedirs(out_dir, exist_ok=True)
    data = jsonable(report_data(model, hardware, cost))
    diagram = "(no boundary diagram: the model is not a causal encoder-decoder)"
    if model.family == "v4.1":
        from ..ir.lower.blocks import lower
        text = render_dot(lower(model, Plan([Request.prefill(8192)])), layers=DIAGRAM_LAYERS,
                          title=f"{model.name} · 8K prefill · layers 18–22")
        write_diagram(text, os.path.join(out_dir, "boundary.dot"))
        name = "boundary.svg" if find_renderer() is not None else "boundary.dot"
        if name.endswith(".svg"):
            write_diagram(text, os.path.join(out_dir, name))
        diagram = f"![layers 18–22]({name})" if name.endswith(".svg") else f"See [{name}]({name})."
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(_markdown(data, diagram))
    summary = [f"{model.name} on {hardware}: report written to {os.path.join(out_dir, 'report.md')}",
               "paths: " + " · ".join(f"{k} {v}" for k, v in data["layout"]["path_counts"].items())]
    for m in data["memory"]:
        summary.append(f"memory @ {m['context']:>9,} tokens: cache {human_bytes(m['kv']['total_bytes'])}, "
                       f"weights {human_bytes(m['weights_bytes'])}")
    for n, p in data["prefill_sol"].items():
        on = "" if p["replay_bounded_s"] is None else (f", replay bounded {_ms(p['replay_bounded_s'])} "
                                                       f"({p['speedup']:.2f}× faster)")
        summary.append(f"prefill {int(n):>7,} {data.get('cost_mode', 'SOL')}: replay off {_ms(p['replay_off_s'])}{on}")
    dec = data["decode_b64_ctx8k"]
    summary.append(f"decode step, batch 64 @ 8K: {_ms(dec['step_s'])} ({dec['tokens_per_s']:,.0f} tok/s)")
    summary.append(f"token×layers(N) = {data['closed_forms']['token_layers']}")
    summary.append(f"global KV bytes(N) = {data['closed_forms']['kv_bytes']}")
    summary.append(f"diagram: {diagram}")
    return "\n".join(summary)
