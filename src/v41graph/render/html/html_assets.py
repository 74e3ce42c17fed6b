"""The page's style and script, inline in every ``report.html`` (nothing is fetched when it opens).

The script reads the page's data (``#v41-data``, JSON) and the closed forms (``V41_FORMS``,
functions printed from sympy by ``html_report``); it formats bytes and times as the terminal
does (``human_bytes``, ``seconds``) so the calculators read like the CLI at the same inputs.
"""

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#26344a;color:#fff;padding:10px 18px}header h1{font-size:19px;margin:0}
header p{margin:3px 0 0;color:#cfd8e6;font-size:13px}
nav{position:sticky;top:0;background:#eef1f5;border-bottom:1px solid #d5dae1;padding:5px 18px;z-index:5}
nav a{margin-right:14px;color:#26344a;text-decoration:none;font-weight:600}
section{padding:8px 18px 14px;border-bottom:1px solid #e3e6ea}h2{font-size:17px;margin:6px 0}
.map-wrap{display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap}.map{flex:1 1 560px}
.row{display:flex;flex-wrap:wrap;gap:3px;margin:3px 0}.row-label{width:66px;font-size:12px;color:#555;align-self:center}
.layer{width:44px;height:40px;border:1px solid #9aa3ad;border-radius:5px;cursor:pointer;font:12px/1.1 inherit;padding:1px}
.layer small{display:block;font-size:9px;color:#444}.layer.sel{outline:3px solid #d62728}
.layer.owner{box-shadow:0 0 0 3px #1f77b4 inset}.layer.producer{box-shadow:0 0 0 3px #2ca02c inset}
.p-swa{background:#c6dbef}.p-full{background:#fdd0a2}.p-reindex{background:#c7e9c0}.p-reuse{background:#dadaeb}
.p-csa{background:#fdae6b}.p-hca{background:#9ecae1}.p-draft{background:#f0f0f0}.legend span{display:inline-block;padding:1px 7px;margin-right:5px;border:1px solid #9aa3ad;border-radius:4px;font-size:12px}
#panel{flex:1 1 420px;background:#fff;border:1px solid #d5dae1;border-radius:6px;padding:8px 12px;min-height:120px}
#panel h3{margin:2px 0 6px;font-size:16px}#panel a{color:#1f77b4;cursor:pointer}
table{border-collapse:collapse;margin:4px 0 8px;font-size:13px}th,td{border:1px solid #dde1e6;padding:2px 7px;text-align:right}
th{background:#eef1f5}td:first-child,th:first-child{text-align:left}.crit{color:#d62728;font-weight:600}
.calc{display:grid;grid-template-columns:repeat(auto-fit,minmax(380px,1fr));gap:14px}
.card{background:#fff;border:1px solid #d5dae1;border-radius:6px;padding:8px 12px}
.card input{width:130px;font:inherit}.err{color:#b00020;font-size:12px}.big{font-size:16px;font-weight:600}
.chart{width:100%;height:180px;display:block}.diagram{overflow:auto;max-height:560px;border:1px solid #d5dae1;background:#fff}
.diagram svg{height:auto}#tip{position:fixed;display:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;
font-size:12px;pointer-events:none;z-index:10;white-space:pre}code{font-size:12px;word-break:break-all}
"""

JS = r"""
"use strict";
const D = JSON.parse(document.getElementById("v41-data").textContent);
const $ = (id) => document.getElementById(id);
const GIB = 1 << 30, MIB = 1 << 20;
function group(s) { return s.replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
function fixed(x, d) {  // Python's f"{x:.{d}f}" for values exact in binary (ties to even)
  const q = x * Math.pow(10, d), f = Math.floor(q), r = q - f;
  const n = r > 0.5 || (r === 0.5 && f % 2 !== 0) ? f + 1 : f;
  const s = String(n).padStart(d + 1, "0");
  return group(s.slice(0, s.length - d)) + (d ? "." + s.slice(s.length - d) : "");
}
function bytes(n) {  // terminal.human_bytes
  const u = Math.abs(n) >= GIB ? ["GiB", GIB] : Math.abs(n) >= MIB ? ["MiB", MIB] : ["KiB", 1024];
  return group(String(Math.trunc(n))) + " B (" + fixed(n / u[1], 2) + " " + u[0] + ")";
}
function seconds(s) {  // terminal.seconds
  if (s === 0) return "0 s";
  return s >= 1 ? ms3(s) + " s" : s >= 1e-3 ? ms3(s * 1e3) + " ms" : ms3(s * 1e6) + " µs";
}
function ms3(v) { const [i, f] = v.toFixed(3).split("."); return group(i) + "." + f; }
function read(id, key) {  // an integer input inside its form's domain, else null and a message
  const m = D.domains[key], el = $(id), v = Number(el.value), err = $(id + "-error");
  const ok = el.value.trim() !== "" && Number.isInteger(v) && v >= m.lo && v <= m.hi;
  err.textContent = ok ? "" : m.symbol + " must be a whole number in [" + group(String(m.lo)) + ", " +
    group(String(m.hi)) + "]";
  return ok ? v : null;
}
function chart(svg, series, lo, hi, at, log, xlabel, ylabel, yfmt) {  // lines of f(x) over [lo, hi], a marker at x = at
  // axes: x from lo to hi (log or linear, its label with the unit), y from the series' least to greatest value
  // (ticks formatted by yfmt, its label with the unit)
  const W = 420, H = 170, L = 86, R = 10, T = 8, B = 36, xs = [];
  for (let i = 0; i <= 120; i++) xs.push(Math.round(log ? lo * Math.pow(hi / lo, i / 120) : lo + (hi - lo) * i / 120));
  let top = -Infinity, low = Infinity;
  for (const s of series) for (const x of xs) { top = Math.max(top, s.f(x)); low = Math.min(low, s.f(x)); }
  const X = (x) => L + (W - L - R) * (log ? Math.log(x / lo) / Math.log(hi / lo) : (x - lo) / (hi - lo));
  const Y = (y) => H - B - (H - T - B) * (top > low ? (y - low) / (top - low) : 0);
  const text = (x, y, anchor, t) => '<text x="' + x.toFixed(1) + '" y="' + y.toFixed(1) + '" font-size="10" text-anchor="' +
    anchor + '">' + t + "</text>";
  let out = '<line class="axis" x1="' + L + '" x2="' + (W - R) + '" y1="' + (H - B) + '" y2="' + (H - B) + '" stroke="#555"/>' +
    '<line class="axis" x1="' + L + '" x2="' + L + '" y1="' + T + '" y2="' + (H - B) + '" stroke="#555"/>';
  const mid = log ? Math.round(Math.sqrt(lo * hi)) : Math.round((lo + hi) / 2);
  for (const x of [lo, mid, hi]) out += text(X(x), H - B + 12, "middle", group(String(x)));
  for (const y of top > low ? [low, (low + top) / 2, top] : [low]) out += text(L - 4, Y(y) + 3, "end", yfmt(y));
  out += text(L + (W - L - R) / 2, H - 4, "middle", xlabel + (log ? " (log scale)" : ""));
  out += '<text font-size="10" text-anchor="middle" transform="translate(10,' + ((H - B + T) / 2).toFixed(1) +
    ') rotate(-90)">' + ylabel + "</text>";
  for (const s of series) out += '<polyline fill="none" stroke="' + s.c + '" stroke-width="2" points="' +
    xs.map((x) => X(x).toFixed(1) + "," + Y(s.f(x)).toFixed(1)).join(" ") + '"/>';
  if (at !== null) out += '<line x1="' + X(at).toFixed(1) + '" x2="' + X(at).toFixed(1) + '" y1="' + T + '" y2="' + (H - B) +
    '" stroke="#d62728" stroke-dasharray="3,2"/>';
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.innerHTML = out;
}
function shortBytes(n) { return (n / 1073741824).toFixed(n >= 10737418240 ? 0 : 2) + " GiB"; }
function shortSeconds(s) { return s >= 1 ? s.toFixed(2) + " s" : s >= 1e-3 ? (s * 1e3).toFixed(1) + " ms" : (s * 1e6).toFixed(0) + " µs"; }
function cache() {
  const L = read("calc-context", "cache.total"), F = V41_FORMS;
  for (const o of D.owners) {
    const k = "cache." + o.owner + ".";
    $("cache-owner-" + o.owner).innerHTML = "<td>layer " + o.owner + " (m=" + o.ratio + ")</td><td>" +
      (L === null ? "–" : group(String(F[k + "entries"](L)))) + "</td><td>" +
      (L === null ? "–" : bytes(F[k + "main_kv_bytes"](L))) + "</td><td>" + (L === null ? "–" : bytes(F[k + "index_k_bytes"](L))) + "</td>";
  }
  for (const p of ["global_bytes", "swa_bytes", "state_bytes", "total"]) $("cache-" + p).textContent = L === null ? "–" : bytes(F["cache." + p](L));
  chart($("cache-chart"), [{f: F["cache.total"], c: "#1f77b4"}, {f: F["cache.global_bytes"], c: "#ff7f0e"}], 1,
        D.domains["cache.total"].hi, L, true, "context L (tokens)", "cache (GiB)", shortBytes);
}
function prefill() {
  const N = read("calc-prompt", "prefill.off"), F = V41_FORMS, series = [{f: F["prefill.off"], c: "#1f77b4"}];
  $("prefill-off").textContent = N === null ? "–" : seconds(F["prefill.off"](N));
  if (F["prefill.bounded"]) {
    series.push({f: F["prefill.bounded"], c: "#2ca02c"});
    $("prefill-bounded").textContent = N === null ? "–" : seconds(F["prefill.bounded"](N));
    $("prefill-speedup").textContent = N === null ? "–" : (F["prefill.off"](N) / F["prefill.bounded"](N)).toFixed(2) + "×";
  }
  chart($("prefill-chart"), series, 1, D.domains["prefill.off"].hi, N, true, "prompt N (tokens)", "SOL forward",
        shortSeconds);
}
function gpu() {
  if (!D.mappings.length) return;
  const b = read("calc-batch", D.mappings[0].form), series = [];
  D.mappings.forEach((m, i) => {
    const t = b === null ? null : V41_FORMS[m.form](b);
    $("gpu-" + i + "-total").textContent = t === null ? "–" : bytes(t);
    // one rule for "fits" (model/gpu_memory.py): weights + cache within the budget, 90 % of HBM
    $("gpu-" + i + "-fit").textContent = t === null ? "–" : t <= m.budget_bytes ? "fits" : "does NOT fit (" + bytes(t - m.budget_bytes) + " over the 90 % budget)";
    series.push({f: V41_FORMS[m.form], c: ["#1f77b4", "#2ca02c", "#9467bd"][i % 3]});
  });
  chart($("gpu-chart"), series, 1, 1024, b === null ? null : Math.min(b, 1024), false, "batch B (requests)",
        "per GPU (GiB)", shortBytes);
}
function linkTo(i) { return i === null ? null : '<a data-go="' + i + '">layer ' + i + "</a>"; }
function select(i) {
  const l = D.layers.find((x) => x.index === i);
  if (!l) return;
  document.querySelectorAll(".layer").forEach((b) => b.classList.remove("sel", "owner", "producer"));
  $("layer-" + i).classList.add("sel");
  if (l.kv_owner !== null) $("layer-" + l.kv_owner).classList.add("owner");
  if (l.topk_producer !== null) $("layer-" + l.topk_producer).classList.add("producer");
  $("panel-title").textContent = (l.draft ? "DSpark draft block " + l.block + " (index " + i + ")" : "Layer " + i) + " · " + l.stage + " · " + l.path;
  const kv = l.kv_owner === null ? "no global KV (SWA ring only)" : l.kv_owner === i ? "owns its global KV" : "global KV from " + linkTo(l.kv_owner);
  const tk = l.topk_producer === null ? "no Top-K" : l.topk_producer === i ? "produces its own Top-K" : "Top-K from " + linkTo(l.topk_producer);
  $("panel-links").innerHTML = kv + " · " + tk;
  $("panel-ratio").textContent = "compress ratio m = " + l.compress_ratio + " · SWA window " + l.window;
  panelNodes();
}
function panelNodes() {
  const sel = document.querySelector(".layer.sel");
  if (!sel) return;
  const plan = D.plans[$("panel-plan").value], nodes = plan.nodes[sel.dataset.layer] || [], fam = {};
  let rows = "", total = 0;
  for (const n of nodes) {
    total += n.time_s;
    for (const [f, t] of Object.entries(n.families)) fam[f] = (fam[f] || 0) + t;
    rows += "<tr" + (n.critical ? ' class="crit"' : "") + "><td>" + n.name + "</td><td>" + n.family + "</td><td>" + seconds(n.time_s) + "</td><td>" + n.bound + "</td></tr>";
  }
  const fr = Object.entries(fam).sort((a, b) => b[1] - a[1]).map(([k, v]) => "<tr><td>" + k + "</td><td>" + seconds(v) + "</td></tr>").join("");
  $("panel-nodes").innerHTML = nodes.length ? "<p>" + nodes.length + " nodes, " + seconds(total) + " (critical path in red)</p>" +
    "<table><tr><th>family</th><th>time</th></tr>" + fr + "</table><table><tr><th>node</th><th>family</th><th>time</th><th>bound</th></tr>" + rows + "</table>"
    : "<p>No node of this plan lies in this layer.</p>";
}
function hover() {
  const tip = $("tip"), diag = D.diagram ? D.plans[D.diagram].nodes : {}, byName = {}, byLayer = {};
  for (const [k, ns] of Object.entries(diag)) for (const n of ns) { byName[n.name] = n; byLayer[k] = (byLayer[k] || 0) + n.time_s; }
  document.querySelectorAll(".diagram g.node").forEach((g) => {
    const name = g.querySelector("title").textContent, n = byName[name], m = /\.L(\d+)$/.exec(name);
    const text = n ? name + "\n" + seconds(n.time_s) + " · " + n.bound + " bound\nfamily " + n.family + (n.critical ? "\non the critical path" : "")
      : m ? "layer " + m[1] + "\n" + seconds(byLayer[m[1]] || 0) + " (Σ node time)\nclick: open in the layer map" : null;
    if (!text) return;
    g.addEventListener("mousemove", (e) => { tip.textContent = text; tip.style.display = "block"; tip.style.left = e.clientX + 12 + "px"; tip.style.top = e.clientY + 12 + "px"; });
    g.addEventListener("mouseleave", () => { tip.style.display = "none"; });
    if (m) g.addEventListener("click", () => { select(Number(m[1])); $("map").scrollIntoView(); });
  });
}
document.querySelectorAll(".layer").forEach((b) => b.addEventListener("click", () => select(Number(b.dataset.layer))));
$("panel").addEventListener("click", (e) => { const a = e.target.closest("a[data-go]"); if (a) select(Number(a.dataset.go)); });
$("panel-plan").addEventListener("change", panelNodes);
for (const [id, f] of [["calc-context", cache], ["calc-prompt", prefill], ["calc-batch", gpu]]) {
  if ($(id)) { $(id).addEventListener("input", f); $(id).addEventListener("change", f); }
}
cache(); prefill(); gpu(); hover(); select(D.start_layer);
"""
