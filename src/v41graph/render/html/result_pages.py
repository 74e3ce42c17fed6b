"""Pages for the answers of ``sweep`` and ``deploy``: one self-contained HTML file each (every style,
chart and script inline, nothing fetched when it opens), beside their CSV and JSON.

The charts are drawn here as SVG from the figures (no script computes a figure), with both axes,
tick labels and units; a deploy page's launch lines each carry a copy button (the page's one
script). ``report.html`` is :mod:`.html_report`'s; these share its style.

>>> svg = scatter_svg([{"name": "valid", "colour": "#1f77b4", "points": [(10.0, 100.0), (20.0, 50.0)]}],
...                   "tokens/s per user", "tokens/s per GPU")
>>> svg.count('class="axis"'), "tokens/s per user" in svg, svg.count("<circle")
(2, True, 2)
>>> upper_front([(1, 5), (2, 4), (1.5, 3), (3, 1)])
[(1, 5), (2, 4), (3, 1)]
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, Iterable

from ...errors import V41Error
from .html_assets import CSS
from .html_tables import table
from ..units import ms_or_dash

#: colours of the two serving modes (deploy) and of a sweep's valid points and its front
COLOURS = {"aggregated": "#1f77b4", "disaggregated": "#ff7f0e", "valid": "#1f77b4", "front": "#d62728"}

_W, _H, _L, _R, _T, _B = 640, 360, 80, 16, 14, 44  # the chart's box and its margins (px of the viewBox)


def upper_front(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats in both coordinates (higher x and higher y), by x."""
    out, best = [], float("-inf")
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if y > best:
            out.append((x, y))
            best = y
    return sorted(out)


def _ticks(lo: float, hi: float) -> list[float]:
    return [lo] if hi <= lo else [lo, (lo + hi) / 2, hi]


def _number(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


def scatter_svg(series: list[dict[str, Any]], xlabel: str, ylabel: str, *,
                vlines: Iterable[tuple[float, str]] = (), ident: str = "") -> str:
    """An inline SVG scatter: each series ``{"name", "colour", "points": [(x, y)], "front": bool, "picks":
    [(x, y, label)]}`` (its front joined when ``front``), dashed vertical lines at ``vlines`` (x, label), both
    axes from 0 with three ticks each and their labels (which carry the units)."""
    xs = [p[0] for s in series for p in s["points"]] + [x for x, _ in vlines]
    ys = [p[1] for s in series for p in s["points"]]
    xmax, ymax = (max(xs) * 1.05 if xs else 1.0), (max(ys) * 1.05 if ys else 1.0)

    def X(x: float) -> float:
        return _L + (_W - _L - _R) * x / xmax

    def Y(y: float) -> float:
        return _H - _B - (_H - _T - _B) * y / ymax
    out = [f'<line class="axis" x1="{_L}" x2="{_W - _R}" y1="{_H - _B}" y2="{_H - _B}" stroke="#555"/>',
           f'<line class="axis" x1="{_L}" x2="{_L}" y1="{_T}" y2="{_H - _B}" stroke="#555"/>']
    out += [f'<text x="{X(x):.1f}" y="{_H - _B + 14}" font-size="11" text-anchor="middle">{_number(x)}</text>'
            for x in _ticks(0.0, xmax)]
    out += [f'<text x="{_L - 5}" y="{Y(y) + 4:.1f}" font-size="11" text-anchor="end">{_number(y)}</text>'
            for y in _ticks(0.0, ymax)]
    out += [f'<text x="{(_L + _W - _R) / 2:.1f}" y="{_H - 8}" font-size="12" text-anchor="middle">'
            f'{escape(xlabel)}</text>',
            f'<text font-size="12" text-anchor="middle" transform="translate(16,{(_H - _B + _T) / 2:.1f}) '
            f'rotate(-90)">{escape(ylabel)}</text>']
    for x, label in vlines:
        out.append(f'<line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{_T}" y2="{_H - _B}" stroke="#777" '
                   f'stroke-dasharray="4,3"/><text x="{X(x) + 3:.1f}" y="{_T + 10}" font-size="10">'
                   f'{escape(label)}</text>')
    for s in series:
        out += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="2.5" fill="{s["colour"]}" fill-opacity="0.45"/>'
                for x, y in s["points"]]
        if s.get("front") and s["points"]:
            line = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in upper_front(s["points"]))
            out.append(f'<polyline class="front" fill="none" stroke="{s["colour"]}" stroke-width="2" points="{line}"/>')
        for x, y, label in s.get("picks", ()):
            out.append(f'<circle class="pick" cx="{X(x):.1f}" cy="{Y(y):.1f}" r="6" fill="{s["colour"]}" '
                       f'stroke="#000"/><text x="{X(x) + 8:.1f}" y="{Y(y) - 6:.1f}" font-size="10">'
                       f'{escape(label)}</text>')
    legend = " · ".join(f'<span style="color:{s["colour"]}">●</span> {escape(s["name"])}' for s in series)
    attr = f' id="{ident}"' if ident else ""
    return (f'<svg{attr} class="scatter" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}">{"".join(out)}</svg>'
            f"<p>{legend}</p>")


_COPY = """
document.querySelectorAll("button.copy").forEach((b) => b.addEventListener("click", () => {
  const text = document.getElementById(b.dataset.for).textContent, done = () => { b.textContent = "copied"; };
  const range = document.createRange(), sel = window.getSelection();  // selected either way, for a manual copy
  range.selectNodeContents(document.getElementById(b.dataset.for)); sel.removeAllRanges(); sel.addRange(range);
  b.textContent = "selected: copy with Ctrl-C";  // at once; "copied" once the clipboard takes it
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, () => {});
}));
"""


def page(title: str, lines: Iterable[str], sections: Iterable[tuple[str, str, str]], script: str = "") -> str:
    """A whole page: ``title``, header ``lines`` (the basis, the deployment), and ``sections`` as
    (anchor, heading, inner HTML), each linked from the navigation bar."""
    sections = list(sections)
    head = "".join(f"<p>{escape(line)}</p>" for line in lines)
    nav = "".join(f'<a href="#{a}">{escape(h)}</a>' for a, h, _ in sections)
    body = "".join(f'<section id="{a}"><h2>{escape(h)}</h2>{inner}</section>' for a, h, inner in sections)
    js = f"<script>{script}</script>" if script else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{escape(title)}</title><style>{CSS}'
            f".scatter{{max-width:100%;height:auto;background:#fff;border:1px solid #d5dae1}}"
            f"pre.launch{{white-space:pre-wrap;background:#fff;border:1px solid #d5dae1;padding:4px 8px;margin:2px 0}}"
            f"</style></head><body><header><h1>{escape(title)}</h1>{head}</header><nav>{nav}</nav>{body}{js}"
            f"</body></html>\n")


def write_page(text: str, path: str | Path) -> str:
    """Write a page; an unwritable path is a :class:`V41Error` naming it. Returns a one-line message."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise V41Error(f"page {os.fspath(path)!r}: cannot write: {exc.strerror or exc}") from None
    return f"wrote the page to {path}"


# --- sweep ---------------------------------------------------------------------------------------------------

def sweep_page(result, shown: tuple[str, ...], basis_lines: Iterable[str], fmt) -> str:
    """The page of a sweep: the tokens/s per GPU against tokens/s per user of every valid row with its
    front (the rows' Pareto flags where ``--pareto`` marked them, else the upper front of the valid rows),
    the rows as the table prints them (``shown`` columns, ``fmt`` a cell's text) and the notes."""
    rows = [r for r in result.rows if r.get("valid") and r.get("tok_s_per_user") and r.get("tok_s_per_gpu")]
    pts = [(r["tok_s_per_user"], r["tok_s_per_gpu"]) for r in rows]
    flagged = [(r["tok_s_per_user"], r["tok_s_per_gpu"]) for r in rows if r.get("pareto")]
    series = [{"name": f"valid rows ({len(pts)})", "colour": COLOURS["valid"], "points": pts,
               "front": not flagged}]
    if flagged:
        series.append({"name": f"Pareto frontier ({len(flagged)}, --pareto)", "colour": COLOURS["front"],
                       "points": flagged, "front": True})
    chart = scatter_svg(series, "tokens/s per user (1 / ITL)", "tokens/s per GPU", ident="sweep-chart")
    body = table(shown, [[fmt(r, c) for c in shown] for r in result.rows], ident="rows")
    notes = sorted({r["fit_note"] for r in result.rows if r.get("fit_note")}) + ([result.note] if result.note else [])
    invalid = [r for r in result.rows if not r.get("valid")]
    summary = f"<p>{len(result.rows)} rows, {len(invalid)} invalid.</p>"
    return page("v41graph sweep", basis_lines,
                [("chart", "Tokens/s per GPU vs per user", chart), ("rows", "Rows", summary + body),
                 ("notes", "Notes", "".join(f"<p>{escape(n)}</p>" for n in notes) or "<p>none</p>")])


# --- deploy --------------------------------------------------------------------------------------------------



def _pick_table(mode: str, p: dict[str, Any], percentile: float) -> str:
    a, s = p["analytic"], p.get("simulated") or {}
    pc = f"p{percentile:g}"
    rows = [("TTFT", ms_or_dash(a["ttft_s"]), ms_or_dash(s.get(f"ttft_{pc}_s"))),
            ("TPOT", ms_or_dash(a["tpot_s"]), ms_or_dash(s.get(f"tpot_{pc}_s"))),
            ("tokens/s per GPU", f"{a['tokens_per_s_per_gpu']:,.0f}",
             "—" if s.get("tokens_per_s_per_gpu") is None else f"{s['tokens_per_s_per_gpu']:,.0f}"),
            ("tokens/s per user", f"{a['tokens_per_s_per_user']:,.1f}",
             "—" if s.get("tokens_per_s_per_user") is None else f"{s['tokens_per_s_per_user']:,.1f}")]
    return table(("", "analytic (steady state)", f"simulated ({pc})"), rows, ident=f"pick-{mode}")


def _launch(mode: str, p: dict[str, Any]) -> str:
    out = []
    for engine, lines in (("SGLang", p.get("launch", ())), ("vLLM", p.get("vllm_launch", ()))):
        for i, line in enumerate(lines):
            ident = f"launch-{mode}-{engine.lower()}-{i}"
            out.append(f'<pre class="launch" id="{ident}">{escape(line)}</pre><button class="copy" '
                       f'data-for="{ident}">copy</button>')
        if lines:
            out.insert(len(out) - len(lines), f"<h4>{engine}</h4>")
    out += [f"<p>note: {escape(n)}</p>" for n in p.get("launch_notes", ())]
    return "".join(out)


def reason_kind(reason: str) -> str:
    """What kind of reason rejected a candidate (its first clause, without the figures).

    >>> reason_kind("prefill instance: weights + cache of 4 requests at 4,000 tokens: 150 GiB > 126.9 GiB")
    'prefill instance: weights + cache over the memory budget'
    >>> reason_kind("analytic TPOT 61.20 ms > 50.0 ms; analytic TTFT 1,200.0 ms > 1,000 ms")
    'analytic TPOT over the SLA'
    """
    first = reason.split(";")[0]
    role, _, rest = first.partition("instance: ") if "instance: " in first else ("", "", first)
    role = f"{role}instance: " if role else ""
    for key, kind in (("weights + cache", "weights + cache over the memory budget"),
                      ("capacity", "capacity below the offered rate"), ("TTFT", "TTFT over the SLA"),
                      ("TPOT", "TPOT over the SLA")):
        if key in rest:
            basis = next((b for b in ("analytic", "simulated") if rest.startswith(b)), "")
            return role + (f"{basis} {kind}" if basis and key in ("TTFT", "TPOT") else kind)
    return role + rest[:60]


def _reasons(data: dict[str, Any]) -> str:
    """Why candidates were rejected: each kind of reason, how many, and the first one in full."""
    counts: dict[str, list] = {}
    for c in data["candidates"]:
        if c["status"] == "rejected" and c.get("reason"):
            counts.setdefault(reason_kind(c["reason"]), [0, c["reason"]])[0] += 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return table(("reason", "candidates", "for example"), [(k, f"{n:,}", first) for k, (n, first) in rows],
                 ident="reasons")


def deploy_page(data: dict[str, Any], basis: str) -> str:
    """The page of a deploy answer: each mode's pick (analytic beside simulated), the candidates that meet
    the SLA analytically as tokens/s per GPU against per user with each mode's front and the TPOT bound,
    why the others were rejected, and the picks' launch lines with a copy button each."""
    q = data["question"]
    series = []
    for mode in ("aggregated", "disaggregated"):
        pts = [(c["analytic"]["tokens_per_s_per_user"], c["analytic"]["tokens_per_s_per_gpu"])
               for c in data["candidates"] if c["mode"] == mode and c["status"] != "rejected" and c.get("analytic")]
        pick = data["picks"].get(mode)
        picks = [] if not pick else [(pick["analytic"]["tokens_per_s_per_user"],
                                      pick["analytic"]["tokens_per_s_per_gpu"], f"{mode} pick")]
        series.append({"name": f"{mode} ({len(pts)} meet the SLA analytically)", "colour": COLOURS[mode],
                       "points": pts, "front": True, "picks": picks})
    chart = scatter_svg(series, "tokens/s per user (1 / TPOT)", "tokens/s per GPU",
                        vlines=[(1.0 / q["tpot_s"], f"TPOT ≤ {q['tpot_s'] * 1e3:g} ms")], ident="deploy-chart")
    picks = []
    for mode in ("aggregated", "disaggregated"):
        p = data["picks"].get(mode)
        if p is None:
            picks.append(f"<h3>{mode}: none</h3><p>{escape(str(data.get('why_none', {}).get(mode, '')))}</p>")
            continue
        picks.append(f"<h3>{mode}: {escape(p['label'])} — {p['gpus']} GPUs</h3>"
                     + _pick_table(mode, p, q["percentile"]) + _launch(mode, p))
    winner = data.get("winner") or {}
    lines = [basis, f"{data['model']} on up to {q['gpus']} × {data['hardware']}; SLA p{q['percentile']:g} "
             f"TTFT ≤ {q['ttft_s'] * 1e3:g} ms, TPOT ≤ {q['tpot_s'] * 1e3:g} ms; ISL {q['isl']:,}, OSL {q['osl']:,}"]
    if winner.get("mode"):
        lines.append(f"winner: {winner['mode']}" + (f" ({winner['why']})" if winner.get("why") else ""))
    return page("v41graph deploy", lines,
                [("picks", "Picks", "".join(picks)), ("front", "Candidates that meet the SLA", chart),
                 ("rejected", "Why the others were rejected", _reasons(data))], script=_COPY)
