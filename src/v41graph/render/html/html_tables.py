"""The page's static tables: the report's (memory, prefill, decode, per-GPU fit, families,
closed forms) from ``report.json``'s data, or one plan's from its ``cost --json`` summary.

Each function returns HTML text; figures are formatted as the terminal formats them.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from ..report_parts import basis_title, decode_ceiling, parameter_table, parameters_line, prefill_table
from ..units import fit_verdict, human_bytes, seconds


def table(header: Iterable[str], rows: Iterable[Iterable[Any]], *, ident: str = "") -> str:
    """An HTML table; every cell is escaped."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table{f" id={chr(34)}{ident}{chr(34)}" if ident else ""}><tr>{head}</tr>{body}</table>'


def _dash(v) -> str:
    return "–" if v is None else str(v)


def per_gpu_rows(gpus: Iterable[dict[str, Any]]) -> list[tuple]:
    return [(f"{g['mapping']['tp']} · {g['mapping']['dp']} · {g['mapping']['ep']}", human_bytes(g["weights_bytes"]),
             human_bytes(g["cache_bytes"]), human_bytes(g["workspace_bytes"]), human_bytes(g["total_bytes"]),
             human_bytes(g["budget_bytes"]), fit_verdict(g, short=True), f"{g['kv_tokens_fit']:,}") for g in gpus]


#: "fits": weights + cache within the budget (model/gpu_memory.py); the HBM total with the workspace is shown raw
PER_GPU = ("tp · dp · ep", "weights", "cache", "workspace", "HBM total", "budget (weights + cache)", "fits",
           "KV tokens that fit")


def families(plans: dict[str, dict[str, Any]]) -> str:
    """Node time by op family (as ``cost`` reports them: a fused module split over the families it covers)
    for each plan: one column per plan."""
    names = sorted({f for p in plans.values() for f in p["families"]},
                   key=lambda f: (-max(p["families"].get(f, 0.0) for p in plans.values()), f))
    rows = [(f, *(seconds(p["families"][f]) if f in p["families"] else "–" for p in plans.values())) for f in names]
    return table(("op family", *plans), rows, ident="families")


def report_tables(d: dict[str, Any], plans: dict[str, dict[str, Any]]) -> str:
    """The report's tables, from ``report.json``'s data."""
    basis = basis_title(d)
    out = ["<h3>Memory (one request)</h3>",
           table(("context", "weights", "global KV", "SWA rings", "cache total"),
                 [(f"{m['context']:,}", human_bytes(m["weights_bytes"]), human_bytes(m["kv"]["global_bytes"]),
                   human_bytes(m["kv"]["swa_bytes"]), human_bytes(m["kv"]["total_bytes"])) for m in d["memory"]],
                 ident="memory"),
           (f"<p>Engram tables: {escape(human_bytes(d['memory'][0]['engram_table_bytes']))}, resident whatever "
            "the plan.</p>"), f"<h3>Prefill, {escape(basis)}</h3>",
           table(*prefill_table(d), ident="prefill")]
    dec = d["decode_b64_ctx8k"]
    out += ["<h3>Decode step (batch 64, context 8K)</h3>",
            f"<p>{escape(seconds(dec['step_s']))} per step, {dec['tokens_per_s']:,.0f} tokens/s"
            f"{escape(decode_ceiling(d))}.</p>",
            table(("bound by", "nodes"), list(dec["bound_by"].items()), ident="decode"),
            "<h3>Per-GPU memory (decode batch 64 at 8K)</h3>",
            table(PER_GPU, per_gpu_rows(d["memory_per_gpu"]), ident="per-gpu"),
            "<h3>Node time by op family</h3>", families(plans),
            "<h3>Parameters</h3>", f"<p>{escape(parameters_line(d))}.</p>",
            table(*parameter_table(d), ident="parameters")]
    forms = d["closed_forms"]
    out += ["<h3>Closed forms (SOL)</h3>",
            table(("quantity", "closed form in N"),
                  [("token×layers of an N-token prefill, replay off", forms["token_layers"]["replay_off"]),
                   ("token×layers of an N-token prefill, replay bounded",
                    _dash(forms["token_layers"]["replay_bounded"])),
                   ("global KV bytes for N tokens", forms["kv_bytes"])], ident="closed-forms")]
    return "\n".join(out)


def plan_tables(s: dict[str, Any], plans: dict[str, dict[str, Any]]) -> str:
    """One plan's tables, from its ``cost --json`` summary."""
    reqs = [(r["kind"], f"{r['cached']:,}", f"{r['new']:,}", f"{r['copies']:,}") for r in s["requests"]]
    sysf = s["system"]
    out = ["<h3>Plan</h3>", table(("request", "cached", "new", "copies"), reqs, ident="requests"),
           table(("policy", "value"), [(k, v) for k, v in s["policies"].items()], ident="policies"),
           "<h3>Time</h3>",
           table(("figure", "value"),
                 [("forward", seconds(s["total_time_s"])), ("critical path", seconds(s["critical_path_s"])),
                  ("busiest resource", seconds(s["resource_bound_s"])), ("token×layers", f"{s['token_layers']:,}"),
                  ("TTFT", seconds(sysf.get("ttft_s"))), ("ITL", seconds(sysf.get("itl_s")))], ident="time"),
           table(("stage", "Σ node time"), [(k, seconds(v)) for k, v in s["breakdown"]["by_stage"].items()],
                 ident="stages"),
           table(("bound by", "nodes"), list(s["bound_by"].items()), ident="bounds"),
           "<h3>Per-GPU memory</h3>", table(PER_GPU, per_gpu_rows([s["memory_per_gpu"]]), ident="per-gpu"),
           "<h3>Node time by op family</h3>", families(plans),
           "<h3>Assumptions</h3>", "<ul>" + "".join(f"<li>{escape(a)}</li>" for a in s["assumptions"]) + "</ul>"]
    return "\n".join(out)
