"""``v41graph report``: the main job, written as a folder with a Markdown report and its files.

Contents: the layout, memory at 4K / 128K / 1M tokens, prefill SOL at 8K and 128K with decoder
replay off and bounded (and the speed-up), a decode step at batch 64 and context 8K, the closed
forms of token×layers (replay off and bounded) and of KV bytes, and a diagram around the
encoder → decoder boundary (layers 18–22, ``boundary.svg`` beside its ``boundary.dot``). Every
figure comes from the same functions as the other commands, and every plan names its replay
policy. The terminal summary is plain text; ``report.md`` is Markdown with tables.
"""

from __future__ import annotations

import json
import os

from ..costs.hardware import load_hardware
from ..ir.plan import Plan, Request
from ..model.config import ModelSpec, load_model
from ..passes import schedule
from ..symbols import N
from .dot import find_renderer, render_dot, write_diagram
from .gpu_summary import mapping_summary, memory_per_gpu
from .query import closed_form
from .summaries import jsonable, layout_summary, memory_summary
from .terminal import human_bytes

REPORT_CONTEXTS = (4096, 131072, 1048576)
PREFILLS = (8192, 131072)
DIAGRAM_LAYERS = range(18, 23)  # last encoder Reuse layers, 20 (decoder Full), 21–22
DECODE_PLAN = Plan([Request.decode(8192, copies=64)])


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def _sol(model: ModelSpec, plan: Plan, hardware: str, cost=None):
    return schedule(model, plan, hardware, cost=cost).report("schedule")


def report_plans(model: ModelSpec) -> dict[str, Plan]:
    """The report's plans by label: each prefill with replay off (and bounded on V4.1), the decode step."""
    out = {}
    for n in PREFILLS:
        out[f"prefill {n:,} replay off"] = Plan([Request.prefill(n)], decoder_replay="off")
        if model.family == "v4.1":
            out[f"prefill {n:,} replay bounded"] = Plan([Request.prefill(n)], decoder_replay="bounded")
    out["decode 64 @ 8K"] = DECODE_PLAN
    return out


def report_mappings() -> dict[str, Plan]:
    """The decode step under the report's two mappings (its per-GPU table)."""
    return {"tp 1 · ep 1": DECODE_PLAN, "tp 8 · ep 8": DECODE_PLAN.with_policies(tp=8, ep=8)}


def report_data(model: ModelSpec, hardware: str, cost=None) -> dict:
    """Every figure of the report, JSON-ready (``cost``: a CostMode for OP / hybrid times; SOL if None)."""
    plans = report_plans(model)
    prefill = {}
    for n in PREFILLS:
        off = _sol(model, plans[f"prefill {n:,} replay off"], hardware, cost).total_time_s
        on = (_sol(model, plans[f"prefill {n:,} replay bounded"], hardware, cost).total_time_s
              if model.family == "v4.1" else None)
        prefill[str(n)] = {"replay_off_s": off, "replay_bounded_s": on, "speedup": None if on is None else off / on}
    decode = _sol(model, DECODE_PLAN, hardware, cost)
    # Every plan here states its replay policy; the closed form of token×layers is given under both,
    # as the prefill table is, so nothing depends on a default (the CLI's --replay defaults to off).
    prefill_n = {replay: Plan([Request.prefill(N)], decoder_replay=replay) for replay in ("off", "bounded")}
    token_layers = {f"replay_{replay}": (str(closed_form(model, plan, "token_layers").expr)
                                         if replay == "off" or model.family == "v4.1" else None)
                    for replay, plan in prefill_n.items()}
    hw = load_hardware(hardware)
    per_gpu = [{**memory_per_gpu(model, p, hw), "mapping": mapping_summary(p)}
               for p in report_mappings().values()]
    return {
        "model": model.name, "hardware": hardware, "layout": layout_summary(model),
        "memory": [memory_summary(model, n) for n in REPORT_CONTEXTS],
        "prefill_sol": prefill,
        "decode_b64_ctx8k": {"step_s": decode.total_time_s, "tokens_per_s": 64 / decode.total_time_s,
                             "bound_by": decode.bound_by},
        "closed_forms": {"token_layers": token_layers,
                         "kv_bytes": str(closed_form(model, prefill_n["off"], "kv_bytes").expr)},
        "memory_per_gpu": per_gpu,
        **({} if cost is None or cost.mode == "sol" else
           {"cost_mode": cost.mode, "decode_coverage": {k: v for k, v in decode.coverage.items() if k != "nodes"}}),
    }


def _table(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    """A Markdown table: ``| a | b |`` rows under a header and its ``|---|`` rule."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def _dash(value) -> str:
    return "–" if value is None else str(value)


def _markdown(d: dict, diagram: str) -> str:
    counts, layers = d["layout"]["path_counts"], d["layout"]["layers"]
    lines = [f"# v41graph report — {d['model']} on {d['hardware']}", "", "## Layout", "",
             "Paths: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + ".", ""]
    lines += _table(("layer", "stage", "path", "m", "KV owner", "Top-K producer"),
                    [(l["index"], l["stage"], l["path"], l["compress_ratio"], _dash(l["kv_owner"]),
                      _dash(l["topk_producer"])) for l in layers])
    lines += ["", "## Memory (one request)", ""]
    lines += _table(("context", "weights", "global KV", "SWA rings", "cache total"),
                    [(f"{m['context']:,}", human_bytes(m["weights_bytes"]), human_bytes(m["kv"]["global_bytes"]),
                      human_bytes(m["kv"]["swa_bytes"]), human_bytes(m["kv"]["total_bytes"])) for m in d["memory"]])
    lines += ["", f"Engram tables: {human_bytes(d['memory'][0]['engram_table_bytes'])}, resident whatever the plan.",
              "", "## Prefill, " + ("speed of light" if "cost_mode" not in d else
                                     f"{d['cost_mode']} (OP times from measured tables)"), ""]
    lines += _table(("prompt", "replay off", "replay bounded", "speed-up"),
                    [(f"{int(n):,}", _ms(p["replay_off_s"]),
                      "–" if p["replay_bounded_s"] is None else _ms(p["replay_bounded_s"]),
                      "–" if p["speedup"] is None else f"{p['speedup']:.2f}×") for n, p in d["prefill_sol"].items()])
    dec, forms = d["decode_b64_ctx8k"], d["closed_forms"]
    lines += ["", "## Decode step (batch 64, context 8K)", "",
              f"{_ms(dec['step_s'])} per step, {dec['tokens_per_s']:,.0f} tokens/s.", ""]
    lines += _table(("bound by", "nodes"), list(dec["bound_by"].items()))
    if "cost_mode" in d:
        cov = d["decode_coverage"]
        lines += ["", f"Measured or interpolated: {cov['measured_or_interpolated']:.1%} of the decode step's node "
                  f"time; fell back to SOL: {', '.join(cov['fell_back']) or 'nothing'}."]
    lines += ["", "## Per-GPU memory (decode batch 64 at 8K)", ""]
    lines += _table(("tp · dp · ep", "weights", "cache", "total", "capacity", "fits", "KV tokens that fit"),
                    [(f"{g['mapping']['tp']} · {g['mapping']['dp']} · {g['mapping']['ep']}",
                      human_bytes(g["weights_bytes"]), human_bytes(g["cache_bytes"]), human_bytes(g["total_bytes"]),
                      human_bytes(g["capacity_bytes"]),
                      "yes" if g["fits"] else f"no (short {human_bytes(g['shortfall_bytes'])})",
                      f"{g['kv_tokens_fit']:,}") for g in d["memory_per_gpu"]])
    lines += ["", "## Closed forms" + ("" if "cost_mode" not in d else " (SOL: closed forms are never OP)"), ""]
    lines += _table(("quantity", "closed form in N"),
                    [("token×layers of an N-token prefill, replay off", f"`{forms['token_layers']['replay_off']}`"),
                     ("token×layers of an N-token prefill, replay bounded",
                      _dash(forms["token_layers"]["replay_bounded"]) if forms["token_layers"]["replay_bounded"] is None
                      else f"`{forms['token_layers']['replay_bounded']}`"),
                     ("global KV bytes for N tokens", f"`{forms['kv_bytes']}`")])
    lines += ["", "## Diagram: the encoder → decoder boundary (layers 18–22)", "", diagram, ""]
    return "\n".join(lines)


def write_report(out_dir: str = "v41graph-report", *, model: ModelSpec | None = None,
                 hardware: str = "h200_sxm", cost=None) -> str:
    """Write ``report.md``, ``report.json`` and the diagram into ``out_dir``; return a text summary."""
    model = model or load_model()
    os.makedirs(out_dir, exist_ok=True)
    data = jsonable(report_data(model, hardware, cost))
    diagram, shown = "(no boundary diagram: the model is not a causal encoder-decoder)", "none (V4 has no boundary)"
    if model.family == "v4.1":
        from ..ir.lower.blocks import lower
        text = render_dot(lower(model, Plan([Request.prefill(8192)])), layers=DIAGRAM_LAYERS,
                          title=f"{model.name} · 8K prefill · layers 18–22")
        write_diagram(text, os.path.join(out_dir, "boundary.dot"))
        name = "boundary.svg" if find_renderer() is not None else "boundary.dot"
        if name.endswith(".svg"):
            write_diagram(text, os.path.join(out_dir, name))
        diagram = f"![layers 18–22]({name})" if name.endswith(".svg") else f"DOT source: [{name}]({name})."
        shown = os.path.join(out_dir, name) + ("" if name.endswith(".svg") else " (no DOT renderer found)")
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
    for g in data["memory_per_gpu"]:
        mp = g["mapping"]
        verdict = "fits" if g["fits"] else f"does NOT fit (short {human_bytes(g['shortfall_bytes'])})"
        summary.append(f"per GPU at tp {mp['tp']} · ep {mp['ep']} (decode 64 @ 8K): {human_bytes(g['total_bytes'])} of "
                       f"{human_bytes(g['capacity_bytes'])}, {verdict}")
    forms = data["closed_forms"]
    summary.append(f"token×layers(N), replay off = {forms['token_layers']['replay_off']}")
    if forms["token_layers"]["replay_bounded"] is not None:
        summary.append(f"token×layers(N), replay bounded = {forms['token_layers']['replay_bounded']}")
    summary.append(f"global KV bytes(N) = {forms['kv_bytes']}")
    summary.append(f"diagram (layers 18–22): {shown}")
    return "\n".join(summary)
