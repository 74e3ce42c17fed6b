"""``v41graph deploy`` as text: the question, the two picks with analytic vs simulated figures side
by side, the top N of each mode, which mode wins, and each pick's SGLang and vLLM launch lines; and the
CSV of every candidate with its status and reason.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from .serving_text import EMISSION_LINE
from ..tabular import text_table
from ..units import beside_sol, ms_or_dash

GIB = 1 << 30




def _question(data: dict[str, Any]) -> str:
    q = data["question"]
    at = f"at {q['rate']:,.3g} req/s" if q.get("rate") else "at each pick's rate"
    work = (f"ISL {q['isl']:,} · OSL {q['osl']:,} (Poisson {at})" if q["workload"] == "poisson" else
            f"trace: {q['trace_requests']:,} requests at {q['trace_rate_per_s']:.3g} req/s (mean ISL {q['isl']:,}"
            f" · OSL {q['osl']:,})")
    budget = (f"the fewest {data['hardware']} GPUs (budgets tried: {', '.join(map(str, data['fewest']['budgets']))})"
              if "fewest" in data else f"up to {q['gpus']} × {data['hardware']}")
    return (f"{data['model']} on {budget}: {work}; SLA p{q['percentile']:g} "
            f"TTFT ≤ {ms_or_dash(q['ttft_s'])}, TPOT ≤ {ms_or_dash(q['tpot_s'])}")


def _pick(name: str, p: dict[str, Any] | None, q: dict[str, Any], why: str = "") -> list[str]:
    if p is None:
        return [f"best {name}: none — {why}"]
    a, s, pc = p["analytic"], p["simulated"], f"p{q['percentile']:g}"
    lines = [f"best {name}: {p['label']} — {p['gpus']} GPUs, {p['memory_per_gpu_bytes'] / GIB:,.1f} GiB per GPU "
             f"(weights + cache)"]
    rows = [["TTFT", ms_or_dash(a["ttft_s"]), ms_or_dash(s[f"ttft_{pc}_s"])],
            ["TPOT", ms_or_dash(a["tpot_s"]), ms_or_dash(s[f"tpot_{pc}_s"])],
            ["tokens/s per GPU at the offered load", f"{a['tokens_per_s_per_gpu']:,.0f}",
             f"{s['tokens_per_s_per_gpu']:,.0f}"],
            ["tokens/s per GPU at capacity", f"{a['tokens_per_s_per_gpu_at_capacity']:,.0f}", "—"],
            ["tokens/s per user", f"{a['tokens_per_s_per_user']:,.1f}",
             "—" if s["tokens_per_s_per_user"] is None else f"{s['tokens_per_s_per_user']:,.1f}"],
            ["request rate", f"{a['rate_per_s']:,.2f}/s", f"{s['requests']:,} requests checked" + (
                f" on {' + '.join(map(str, s['slice']['instances']))} instances ({s['slice']['share_of_rate']:.0%} "
                f"of the rate)" if s.get("slice") else "")]]
    body = text_table(["", "analytic (steady state)", f"simulated ({pc})"], rows, "lrr")
    lines += ["  " + line for line in body.splitlines()]
    if p.get("sol_ceiling"):
        lines.append("  " + _ceiling(a, p["sol_ceiling"]))
    for role, b in p["bottleneck"].items():
        lines.append(f"  bottleneck ({role} step): {b['family']} ({b['share']:.0%} of the step), {b['resource']}")
    lines.append(f"  SGLang launch ({_engines(p['launch'], '--node-rank [1-9]')}):")
    lines += [f"    {line}" for line in p["launch"]]
    lines.append(f"  vLLM launch ({_engines(p['vllm_launch'], '--headless')}):")
    lines += [f"    {line}" for line in p["vllm_launch"]]
    lines += [f"  note: {n}" for n in p.get("launch_notes", ())]
    return lines


def _engines(lines: list[str], later_host: str) -> str:
    """``router + 2 engines``: a pick's launch lines counted (an engine across hosts has a line per host).

    >>> _engines(["python -m sglang_router.launch_router …", "python -m sglang.launch_server … --node-rank 0",
    ...           "python -m sglang.launch_server … --node-rank 1"], "--node-rank [1-9]")
    'router + 1 engine'
    """
    n = sum(1 for line in lines if " -m sglang_router" not in line and not re.search(later_host, line))
    router = "router + " if any(" -m sglang_router" in line for line in lines) else ""
    return f"{router}{n} engine{'s' * (n != 1)}"


def _ceiling(a: dict[str, Any], c: dict[str, Any]) -> str:
    """A pick's analytic forecast beside the same deployment on SOL step costs (forecast / SOL).

    >>> a = {"tokens_per_s_per_gpu": 602.0, "tpot_s": 0.0451, "ttft_s": 0.2173}
    >>> c = {"tokens_per_s_per_gpu": 1905.0, "tpot_s": 0.0166, "ttft_s": 0.0904,
    ...      "ratio": {"tokens_per_s_per_gpu": 0.316, "tpot": 2.717, "ttft": 2.404}}
    >>> for part in _ceiling(a, c).split("; "):
    ...     print(part)
    SOL ceiling (analytic, forecast / SOL): tokens/s per GPU 602 · SOL 1,905 · 0.32×
    TPOT 45.1 ms · SOL 16.6 ms · 2.72×
    TTFT 217.3 ms · SOL 90.4 ms · 2.40×
    """
    x = c["ratio"]
    return ("SOL ceiling (analytic, forecast / SOL): tokens/s per GPU "
            + beside_sol(f"{a['tokens_per_s_per_gpu']:,.0f}", f"{c['tokens_per_s_per_gpu']:,.0f}",
                         x["tokens_per_s_per_gpu"])
            + "; TPOT " + beside_sol(ms_or_dash(a["tpot_s"]), ms_or_dash(c["tpot_s"]), x["tpot"])
            + "; TTFT " + beside_sol(ms_or_dash(a["ttft_s"]), ms_or_dash(c["ttft_s"]), x["ttft"]))


def _top(data: dict[str, Any]) -> list[str]:
    by_label = {c["label"]: c for c in data["candidates"]}
    out = []
    for mode, labels in data["top"].items():
        rows = []
        for i, label in enumerate(labels, 1):
            c, sim = by_label[label], by_label[label].get("simulated")
            rows.append([i, label, c["gpus"], f"{c['analytic']['tokens_per_s_per_gpu']:,.0f}",
                         f"{c['analytic']['tokens_per_s_per_user']:,.1f}", ms_or_dash(c["analytic"]["ttft_s"]),
                         ms_or_dash(c["analytic"]["tpot_s"]),
                         "—" if sim is None else ("meets SLA" if sim["meets_sla"] else sim["reason"])])
        out.append(f"top {len(rows)} {mode} (analytic, SLA met):")
        body = text_table(["#", "deployment", "GPUs", "tok/s/GPU", "tok/s/user", "TTFT", "TPOT", "simulated"], rows,
                          "rlrrrrrl")
        out += ["  " + line for line in body.splitlines()] if rows else ["  none"]
    return out


def deploy_text(data: dict[str, Any]) -> str:
    q = data["question"]
    lines = [_question(data), f"routing: {data['routing']['describe']} (the expert loads of every MoE step priced)",
             f"emission: {EMISSION_LINE[data['emission']]}", ""]
    for mode in ("aggregated", "disaggregated"):
        lines += _pick(mode, data["picks"][mode], q, data["why_none"].get(mode, "")) + [""]
    f = data.get("fewest")
    if f is not None:
        lines.append(f"fewest GPUs for {f['rate_per_s']:,.3g} req/s: " + (
            f"{f['gpus']} ({f['mode']}: {f['label']})" if f["gpus"] else
            f"none up to {f['budgets'][-1]} GPUs meets the SLA at that rate"))
        if f.get("skipped"):
            lines.append(f"  budgets {', '.join(map(str, f['skipped']))} not searched: the last of them, {f['bound']}")
    w = data["winner"]
    if w is None:
        lines.append("winner: none — no deployment meets the SLA on this budget")
    elif w["by"] is None:
        lines.append(f"winner: {w['mode']} ({w['why']})")
    else:
        lines.append(f"winner: {w['mode']} by {w['by']:.2f}× tokens/s per GPU ({w['why']})")
    lines += [""] + _top(data)
    counts: dict[str, int] = {}
    for c in data["candidates"]:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    lines.append("")
    pruned = sum((data.get("pruned_by_bound") or {}).values())
    lines.append(f"{len(data['candidates']):,} candidates" + "".join(
        f"{', ' if i else ': '}{n:,} {k}" for i, (k, n) in enumerate(counts.items())) +
                 (f"; {pruned:,} more not priced (their bound could not reach the best)" if pruned else "") +
                 f"; {data['step_shapes_compiled']} step shapes compiled")
    return "\n".join(lines)


CSV_COLUMNS = ("mode", "label", "gpus", "status", "reason", "memory_per_gpu_gib", "ttft_ms", "tpot_ms",
               "rate_per_s", "tokens_per_s_per_gpu", "tokens_per_s_per_gpu_at_capacity", "tokens_per_s_per_user",
               "sim_ttft_ms", "sim_tpot_ms")


def deploy_csv(data: dict[str, Any]) -> str:
    """Every candidate, one row each, with the reason it was rejected (figures analytic unless sim_)."""
    pc = f"p{data['question']['percentile']:g}"
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in data["candidates"]:
        a, s = c.get("analytic") or {}, c.get("simulated") or {}

        def f(v, scale=1.0, digits=6):
            return "" if v is None else round(v * scale, digits)
        w.writerow([c["mode"], c["label"], c["gpus"], c["status"], c["reason"] or "",
                    f(c["memory_per_gpu_bytes"], 1 / GIB, 3), f(a.get("ttft_s"), 1e3), f(a.get("tpot_s"), 1e3),
                    f(a.get("rate_per_s")), f(a.get("tokens_per_s_per_gpu")),
                    f(a.get("tokens_per_s_per_gpu_at_capacity")), f(a.get("tokens_per_s_per_user")),
                    f(s.get(f"ttft_{pc}_s"), 1e3), f(s.get(f"tpot_{pc}_s"), 1e3)])
    return out.getvalue()
