"""``v41graph report``: the main job, written as a folder with a Markdown report and its files.

Contents: the layout, memory at 4K / 128K / 1M tokens, prefill at 8K and 128K with decoder
replay off and bounded (and the speed-up), a decode step at batch 64 and context 8K — on the
report's basis, each beside its SOL ceiling off SOL — (with its
time by op family), parameters (total and active per token), the closed
forms of token×layers (replay off and bounded) and of KV bytes, and a diagram around the
encoder → decoder boundary (layers 18–22, ``boundary.svg`` beside its ``boundary.dot``). Every
figure comes from the same functions as the other commands, and every plan names its replay
policy. The terminal summary is plain text; ``report.md`` is Markdown with tables. The figures
come from ``analysis/report_data.py``; this module only writes them.
"""

from __future__ import annotations

import json
import os

from ..analysis.summaries import jsonable
from ..ir.graph import Graph
from .dot import find_renderer, render_dot, write_diagram
from .tabular import markdown_table
from .units import beside_sol, fit_verdict, human_bytes
from ..analysis.basis import basis_line
from .report_parts import basis_title, report_ms, decode_ceiling, prefill_table, sections_markdown, sections_summary

DIAGRAM_LAYERS = range(18, 23)  # last encoder Reuse layers, 20 (decoder Full), 21–22


def _dash(value) -> str:
    return "–" if value is None else str(value)


def _sol_beside(p: dict, ceiling: dict | None, key: str) -> str:
    """One prefill time, beside its SOL ceiling when the report's basis is not SOL."""
    if ceiling is None:
        return report_ms(p[f"{key}_s"])
    return beside_sol(report_ms(p[f"{key}_s"]), report_ms(ceiling[f"{key}_s"]), ceiling["ratio"][key])


def _markdown(d: dict, diagram: str) -> str:
    counts, layers = d["layout"]["path_counts"], d["layout"]["layers"]
    lines = [f"# v41graph report — {d['model']} on {d['hardware']}", "", "## Layout", "",
             "Paths: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + ".", ""]
    layout = [(l["index"], l["stage"], l["path"], l["compress_ratio"], _dash(l["kv_owner"]), _dash(l["topk_producer"]))
              for l in layers]
    lines += markdown_table(("layer", "stage", "path", "m", "KV owner", "Top-K producer"), layout, "rllrrr")
    lines += ["", "## Memory (one request)", ""]
    memory = [(f"{m['context']:,}", human_bytes(m["weights_bytes"]), human_bytes(m["kv"]["global_bytes"]),
               human_bytes(m["kv"]["swa_bytes"]), human_bytes(m["kv"]["total_bytes"])) for m in d["memory"]]
    lines += markdown_table(("context", "weights", "global KV", "SWA rings", "cache total"), memory, "rrrrr")
    lines += ["", f"Engram tables: {human_bytes(d['memory'][0]['engram_table_bytes'])}, resident whatever the plan.",
              *([f"Basis of every time: {basis_line(d['basis'])}.", f"Deployment: {d['deployment']['line']}."]
                if "basis" in d else []),
              "", "## Prefill, " + basis_title(d), ""]
    lines += markdown_table(*prefill_table(d), "rrrr" + "rr" * ("sol_ceiling" in d))
    dec, forms = d["decode_b64_ctx8k"], d["closed_forms"]
    lines += ["", "## Decode step (batch 64, context 8K)", "",
              f"{report_ms(dec['step_s'])} per step, {dec['tokens_per_s']:,.0f} tokens/s{decode_ceiling(d)}.", ""]
    lines += markdown_table(("bound by", "nodes"), list(dec["bound_by"].items()), "lr")
    if "cost_mode" in d:
        cov = d["decode_coverage"]
        lines += ["", f"Measured or interpolated: {cov['measured_or_interpolated']:.1%} of the decode step's node "
                  f"time; fell back to SOL: {', '.join(cov['fell_back']) or 'nothing'}."]
    lines += sections_markdown(d)
    lines += ["", "## Per-GPU memory (decode batch 64 at 8K)", ""]
    per_gpu = [(g["mapping"]["gpus"], f"{g['mapping']['tp']} · {g['mapping']['dp']} · {g['mapping']['ep']}",
                human_bytes(g["weights_bytes"]), human_bytes(g["cache_bytes"]), human_bytes(g["budget_bytes"]),
                human_bytes(g["capacity_bytes"]), fit_verdict(g, short=True),
                f"{g['kv_tokens_fit']:,}") for g in d["memory_per_gpu"]]
    lines += markdown_table(("GPUs", "tp · dp · ep", "weights", "cache", "budget (weights + cache)", "HBM",
                             "fits", "KV tokens that fit"), per_gpu, "rlrrrrlr")
    lines += ["", "## Closed forms" + ("" if "cost_mode" not in d else " (SOL: closed forms are never OP)"), ""]
    bounded = forms["token_layers"]["replay_bounded"]
    closed = [("token×layers of an N-token prefill, replay off", f"`{forms['token_layers']['replay_off']}`"),
              ("token×layers of an N-token prefill, replay bounded",
               _dash(bounded) if bounded is None else f"`{bounded}`"),
              ("global KV bytes for N tokens", f"`{forms['kv_bytes']}`")]
    lines += markdown_table(("quantity", "closed form in N"), closed, "ll")
    lines += ["", "## Diagram: the encoder → decoder boundary (layers 18–22)", "", diagram, ""]
    return "\n".join(lines)


def write_report(out_dir: str, data: dict, boundary: Graph | None, head_lines: tuple[str, ...] = (),
                 shown_dir: str | None = None) -> str:
    """Write ``report.md``, ``report.json`` and the diagram into ``out_dir``; return a text summary.

    ``data`` is ``analysis.report_data.report_data(...)`` (with any ``basis`` and ``deployment``
    records the caller adds), ``boundary`` the lowered graph around the encoder → decoder boundary
    (``boundary_graph``; None for a model without one), ``head_lines`` the summary's first lines and
    ``shown_dir`` the folder the summary names (default ``out_dir``; the CLI writes into a temporary
    sibling and renames it into place)."""
    os.makedirs(out_dir, exist_ok=True)
    shown_dir = out_dir if shown_dir is None else shown_dir
    data = jsonable(data)
    model_name, hardware = data["model"], data["hardware"]
    diagram, shown = "(no boundary diagram: the model is not a causal encoder-decoder)", "none (V4 has no boundary)"
    if boundary is not None:
        text = render_dot(boundary, layers=DIAGRAM_LAYERS, title=f"{model_name} · 8K prefill · layers 18–22")
        write_diagram(text, os.path.join(out_dir, "boundary.dot"))
        name = "boundary.svg" if find_renderer() is not None else "boundary.dot"
        if name.endswith(".svg"):
            write_diagram(text, os.path.join(out_dir, name))
        diagram = f"![layers 18–22]({name})" if name.endswith(".svg") else f"DOT source: [{name}]({name})."
        shown = os.path.join(shown_dir, name) + ("" if name.endswith(".svg") else " (no DOT renderer found)")
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(_markdown(data, diagram))
    summary = [*head_lines, f"{model_name} on {hardware}: report written to {os.path.join(shown_dir, 'report.md')}",
               "paths: " + " · ".join(f"{k} {v}" for k, v in data["layout"]["path_counts"].items())]
    for m in data["memory"]:
        summary.append(f"memory @ {m['context']:>9,} tokens: cache {human_bytes(m['kv']['total_bytes'])}, "
                       f"weights {human_bytes(m['weights_bytes'])}")
    ceiling = data.get("sol_ceiling")
    for n, p in data["prefill"].items():
        c = None if ceiling is None else ceiling["prefill"][n]
        on = "" if p["replay_bounded_s"] is None else (f", replay bounded {_sol_beside(p, c, 'replay_bounded')} "
                                                       f"({p['speedup']:.2f}× faster)")
        summary.append(f"prefill {int(n):>7,} {data.get('cost_mode', 'SOL')}: replay off "
                       f"{_sol_beside(p, c, 'replay_off')}{on}")
    dec = data["decode_b64_ctx8k"]
    summary.append(f"decode step, batch 64 @ 8K: {report_ms(dec['step_s'])} ({dec['tokens_per_s']:,.0f} tok/s)"
                   f"{decode_ceiling(data)}")
    for g in data["memory_per_gpu"]:
        mp = g["mapping"]
        summary.append(f"per GPU of {mp['gpus']} at tp {mp['tp']} · dp {mp['dp']} · ep {mp['ep']} (decode 64 @ 8K): "
                       f"{fit_verdict(g)}")
    summary += sections_summary(data)
    forms = data["closed_forms"]
    summary.append(f"token×layers(N), replay off = {forms['token_layers']['replay_off']}")
    if forms["token_layers"]["replay_bounded"] is not None:
        summary.append(f"token×layers(N), replay bounded = {forms['token_layers']['replay_bounded']}")
    summary.append(f"global KV bytes(N) = {forms['kv_bytes']}")
    summary.append(f"diagram (layers 18–22): {shown}")
    return "\n".join(summary)
