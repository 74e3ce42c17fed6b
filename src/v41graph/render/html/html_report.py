"""The interactive page (issue 29): one self-contained HTML file — every style, script and
diagram inline, nothing fetched when it opens — that holds the layer map, the costed graph, live
calculators evaluating the project's closed forms (printed from sympy to JavaScript by
``sympy.jscode``, never re-derived) and the report's tables.

``v41graph report`` writes it as ``report.html`` (:func:`write_report_html`); a plan from the API
gets the same page with :func:`write_html`, and ``v41graph cost … --html FILE`` too.

>>> import tempfile, pathlib
>>> from v41graph import load_model, compile, Plan, Request
>>> m, plan = load_model(), Plan([Request.decode(8192, copies=64)], tp=8, ep=8)
>>> path = pathlib.Path(tempfile.mkdtemp()) / "plan.html"
>>> write_html(compile(m, plan), path, model=m, plan=plan).startswith("wrote")
True
>>> text = path.read_text(encoding="utf-8")
>>> "http://" in text or "https://" in text, 'id="layer-29"' in text
(False, True)
"""

from __future__ import annotations

import json
import os
import re
from html import escape
from typing import Any

import sympy

from ...analysis.page import PageData, page_data
from ...errors import GraphError, OutputError
from ..dot import svg_text
from ..dot_costs import render_cost_dot
from .html_assets import CSS, JS
from .html_tables import plan_tables, report_tables

PATHS = ("swa", "full", "reindex", "reuse", "csa", "hca", "draft")  # V4.1 paths, V4 paths, draft blocks


def forms_script(page: PageData) -> str:
    """``const V41_FORMS = {key: (symbol) => <jscode>, …}``: each closed form as a JavaScript function."""
    body = ",\n".join(f"  {json.dumps(k)}: ({f.symbol}) => ({sympy.jscode(f.expr)})" for k, f in page.forms.items())
    return "const V41_FORMS = {\n" + body + "\n};"


def _inline_svg(dot_text: str) -> str:
    """The diagram as inline SVG (its XML prolog, comments and namespace URIs dropped: the HTML
    parser needs none of them); the DOT text in a ``<pre>`` where no renderer is installed."""
    svg = svg_text(dot_text)
    if svg is None:
        return f"<p>No DOT renderer found: the DOT source.</p><pre>{escape(dot_text)}</pre>"
    svg = re.sub(r"<!--.*?-->", "", svg[svg.index("<svg"):], flags=re.DOTALL)
    return re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg)


def _layer_map(page: PageData) -> str:
    rows = []
    for stage in dict.fromkeys(l["stage"] for l in page.layers):  # in layer order: encoder, decoder, dspark
        cells = [f'<button class="layer p-{l["path"]}" id="layer-{l["index"]}" data-layer="{l["index"]}" '
                 f'title="{l["stage"]} · {l["path"]} · m={l["compress_ratio"]}">{l["index"]}'
                 f'<small>{l["path"]} m{l["compress_ratio"]}</small></button>'
                 for l in page.layers if l["stage"] == stage]
        if cells:
            rows.append(f'<div class="row"><span class="row-label">{stage}</span>{"".join(cells)}</div>')
    legend = "".join(f'<span class="p-{p}">{p}</span>' for p in PATHS if any(l["path"] == p for l in page.layers))
    options = "".join(f'<option value="{escape(k)}">{escape(k)}</option>' for k in page.plans)
    return f"""<section id="map"><h2>Layer map</h2>
<p class="legend">Path: {legend} · selected layer outlined red; its KV owner ringed blue, its Top-K producer green.</p>
<div class="map-wrap"><div class="map">{"".join(rows)}</div>
<div id="panel"><h3 id="panel-title">Select a layer</h3><p id="panel-links"></p><p id="panel-ratio"></p>
<label>plan <select id="panel-plan">{options}</select></label><div id="panel-nodes"></div></div></div></section>"""


def _graph(page: PageData) -> str:
    if page.diagram is None:
        return ""
    lo, hi = page.diagram_layers.start, page.diagram_layers.stop - 1
    label = page.diagram_label
    detail = render_cost_dot(page.diagram, layers=page.diagram_layers,
                             title=f"{page.model} · {label} · layers {lo}–{hi}")
    whole = render_cost_dot(page.diagram, collapse=True, title=f"{page.model} · {label} · every layer")
    return f"""<section id="graph"><h2>Costed graph: {escape(label)}</h2>
<p>Hover a node for its time, bound resource and family; the critical path is drawn bold red. Layers {lo}–{hi}:</p>
<div class="diagram" id="diagram-layers">{_inline_svg(detail)}</div>
<p>The whole model, one box per layer (click a box to open it in the layer map):</p>
<div class="diagram" id="diagram-collapsed">{_inline_svg(whole)}</div></section>"""


def _mapping_flags(page: PageData) -> str:
    """The CLI options naming the prefill calculator's mapping (none on 1 GPU)."""
    m = page.prefill_mapping
    return "".join(f"--{k} {m[k]} " for k in ("tp", "ep", "dp") if m.get(k, 1) != 1)


def _calculators(page: PageData) -> str:
    owners = "".join(f'<tr id="cache-owner-{o["owner"]}"></tr>' for o in page.owners)
    sums = "".join(f'<tr><td>{name}</td><td colspan="3" id="cache-{key}"></td></tr>' for name, key in (
        ("global cache (main KV + index K)", "global_bytes"), ("SWA rings", "swa_bytes"),
        ("compressor state", "state_bytes"), ("cache total per request", "total")))
    bounded = "prefill.bounded" in page.forms
    pre = [("replay off", "prefill-off")] + ([("replay bounded", "prefill-bounded"), ("speed-up", "prefill-speedup")]
                                              if bounded else [])
    prefill_rows = "".join(f'<tr><td>{n}</td><td id="{i}"></td></tr>' for n, i in pre)
    gpus = "".join(f'<tr><td>tp {m["tp"]} · dp {m["dp"]} · ep {m["ep"]}</td><td>{m["context"]:,}</td>'
                   f'<td id="gpu-{i}-total"></td><td id="gpu-{i}-fit"></td></tr>' for i, m in enumerate(page.mappings))
    gpu_card = "" if not page.mappings else f"""<div class="card"><h3>Per-GPU memory vs batch</h3>
<label>batch B <input id="calc-batch" type="number" min="1" value="64"></label>
<span class="err" id="calc-batch-error"></span>
<table><tr><th>mapping</th><th>context</th><th>weights + cache</th><th>verdict</th></tr>{gpus}</table>
<svg class="chart" id="gpu-chart"></svg><p>Weights and the cache of the DP rank's requests (no workspace),
as the report's per-GPU table; it fits within the budget, 90 % of HBM (the rest is the engines' reserve
for activations and CUDA graphs, as every command judges); curves for B = 1…1,024.</p></div>"""
    return f"""<section id="calc"><h2>Calculators (closed forms evaluated in the page)</h2><div class="calc">
<div class="card"><h3>Cache memory by owner vs context</h3>
<label>context L <input id="calc-context" type="number" min="0" value="131072"></label> tokens
<span class="err" id="calc-context-error"></span>
<table><tr><th>owner</th><th>entries</th><th>main KV</th><th>index K</th></tr>{owners}{sums}</table>
<svg class="chart" id="cache-chart"></svg><p>One request; as <code>v41graph memory --context L</code>. Blue: total,
orange: global cache (log scale in L).</p></div>
<div class="card"><h3>Prefill SOL time vs prompt length</h3>
<label>prompt N <input id="calc-prompt" type="number" min="1" value="8192"></label> tokens
<span class="err" id="calc-prompt-error"></span>
<table><tr><th>decoder replay</th><th>SOL forward</th></tr>{prefill_rows}</table>
<svg class="chart" id="prefill-chart"></svg>
<p>As <code>v41graph cost --prefill N {_mapping_flags(page)}[--replay bounded]</code>.
Blue: replay off, green: bounded (log scale in N).</p></div>{gpu_card}</div></section>"""


def html_page(page: PageData, tables_html: str, *, title: str, start_layer: int = 29) -> str:
    """The whole page as text (deterministic: the same inputs give the same bytes)."""
    data = {"layers": page.layers, "plans": page.plans, "owners": page.owners, "mappings": page.mappings,
            "domains": {k: {"symbol": f.symbol, "lo": f.lo, "hi": f.hi} for k, f in page.forms.items()},
            "diagram": page.diagram_label,
            "start_layer": start_layer if any(l["index"] == start_layer for l in page.layers) else 0}
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    mapping = "; ".join(f"tp {m['tp']} · dp {m['dp']} · ep {m['ep']}" for m in page.mappings)
    deployment = (f"Deployment: {page.deployment}" if page.deployment else
                  f"On {page.hardware} · mapping{'s' if len(page.mappings) > 1 else ''} {mapping}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{CSS}</style></head><body>
<header><h1>{escape(title)}</h1><p id="basis">Basis: {escape(page.basis)}</p>
<p id="deployment">{escape(deployment)}</p></header>
<nav><a href="#map">Layer map</a><a href="#graph">Costed graph</a><a href="#calc">Calculators</a>
<a href="#tables">Tables</a></nav>
{_layer_map(page)}
{_graph(page)}
{_calculators(page)}
<section id="tables"><h2>Tables</h2>{tables_html}</section>
<div id="tip"></div>
<script type="application/json" id="v41-data">{blob}</script>
<script>{forms_script(page)}</script>
<script>{JS}</script>
</body></html>
"""


def _write(text: str, path, what: str = "write_html path") -> None:
    """``text`` to ``path``; a path that cannot be written is an OutputError naming it (an OSError too)."""
    try:
        with open(os.fspath(path), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    except OSError as exc:
        raise OutputError.of(what, path, exc) from exc


def write_report_html(data: dict[str, Any], page: PageData, path) -> None:
    """``report.html`` of ``v41graph report``: the page with the report's tables (``data``: report.json's)."""
    _write(html_page(page, report_tables(data, page.plans), title=f"v41graph report — {page.model} on "
                     f"{page.hardware}"), path, "report.html")


def write_html(result, path, *, model=None, plan, cost=None, layers: range = range(18, 23),
               deployment: str | None = None) -> str:
    """The page for one scheduled plan (``v41graph.compile(model, plan, hardware)``); returns a
    one-line message. ``model`` defaults to the embedded model the graph names; ``layers`` is the
    range the costed graph draws node by node; ``cost`` the CostMode the plan was priced with;
    ``deployment`` a line for the header (``cost --html`` gives its deployment line). The prefill
    calculator runs on the plan's mapping, as ``v41graph cost --prefill N --tp … --ep … --dp …``."""
    from ...analysis.basis import basis_line, basis_record
    from ...analysis.summaries import cost_summary
    from ...model.config import load_model
    if not callable(getattr(result, "report", None)) or not hasattr(result, "graph"):
        raise GraphError(f"write_html result: expected a compiled plan (v41graph.compile(model, plan, hardware)), "
                         f"got {result!r:.80}")
    model = model or load_model(result.graph.model)
    report = result.report("schedule")
    summary = cost_summary(model, plan, result)
    label = ", ".join(f"{r['kind']} {r['new']:,}" + (f"×{r['copies']:,}" if r["copies"] != 1 else "")
                      + (f" @ {r['cached']:,}" if r["cached"] else "") for r in summary["requests"])
    basis = basis_line(basis_record(getattr(cost, "mode", "sol"), coverage=summary.get("coverage")))
    page = page_data(model, report.hardware, {label: result}, {label: plan}, sources={label: plan}, basis=basis,
                     deployment=deployment,
                     mapping={"tp": plan.tp, "ep": plan.ep, "dp": plan.dp}, diagram_layers=layers)
    _write(html_page(page, plan_tables(summary, page.plans), title=f"v41graph — {model.name} · {label}"), path)
    return f"wrote the interactive page to {path}"
