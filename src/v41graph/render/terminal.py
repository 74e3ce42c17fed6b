"""Plain-text rendering of the summaries (what the CLI prints without ``--json``)."""

from __future__ import annotations

from typing import Any

from .tabular import text_table
from .units import fit_verdict, human_bytes, seconds  # noqa: F401  (re-exported: renderers import them from here)


def header_lines(choice, basis: dict[str, Any] | None, checkpoints: list[str] | tuple = ()) -> list[str]:
    """The lines above an answer: the shortfall (first, when the mapping does not fit), the basis, the
    deployment, then the checkpoint it runs (``checkpoints``: ``cli/options/checkpoint_options.checkpoint_lines``);
    their JSON twin is :class:`~v41graph.analysis.answer.Priced`.

    >>> from v41graph import load_model, Plan, Request
    >>> from v41graph.analysis.mapping_search import explicit
    >>> from v41graph.costs.hardware import load_hardware
    >>> header_lines(explicit(load_model(), load_hardware("h200_sxm"), Plan([Request.prefill(8)], tp=8, ep=8)), None)
    ['deployment: 8 × h200_sxm: tp 8 · ep 8 (explicit)']
    """
    from ..analysis.basis import basis_line
    lines = [choice.shortfall_line()] if choice is not None and not choice.fits else []
    lines += [basis_line(basis)] if basis is not None else []
    return lines + ([f"deployment: {choice.line()}"] if choice is not None else []) + list(checkpoints)


def layout_text(s: dict[str, Any]) -> str:
    rows = []
    for l in s["layers"]:
        notes = [n for n, on in (("candidate source", l["candidate_source"]), ("candidate pool", l["candidate_user"]),
                                 ("engram", l["engram"]), ("dspark target", l["dspark_target"])) if on]
        rows.append((l["index"], l["stage"], l["path"], l["compress_ratio"], "-" if l["kv_owner"] is None
                     else l["kv_owner"], "-" if l["topk_producer"] is None else l["topk_producer"], ", ".join(notes)))
    for d in s["draft_blocks"]:
        rows.append((d["index"], "dspark", "swa", 0, "-", "-",
                     f"draft block {d['block']} ({d['n_routed_experts']} experts, top-{d['experts_per_token']})"))
    lines = [f"{s['model']} ({s['family']}): {len(s['layers'])} backbone layers, {len(s['draft_blocks'])} draft blocks",
             text_table(("layer", "stage", "path", "m", "kv_owner", "topk", "notes"), rows, "rllrrrl"),
             "paths: " + " · ".join(f"{k} {v}" for k, v in s["path_counts"].items())]
    return "\n".join(lines)


def parameter_lines(pa: dict[str, Any]) -> list[str]:
    """Total and active parameters per token (model/parameters.py) and bytes per parameter by format."""
    act = " · ".join(f"{k.replace('_', ' ')} {v['total'] / 1e9:.2f}B" for k, v in pa["active"].items() if v)
    fmts = " · ".join(f"{k} {v['bytes_per_parameter']:.5g}" for k, v in pa["formats"].items())
    return [f"parameters: {pa['total'] / 1e9:.2f}B total (main model; draft blocks {pa['draft'] / 1e9:.2f}B apart)"
            f" · active per token: {act} (docs/parameters.md)", f"bytes per parameter by format: {fmts}"]


def memory_text(s: dict[str, Any]) -> str:
    kv = s["kv"]
    pa = s["parameters"]
    lines = [f"{s['model']}: memory for one request of {s['context']:,} tokens",
             "resident weights (from the module inventory; independent of any plan): "
             f"{human_bytes(s['weights_bytes'])}"]
    for group, b in s["weights_by_group"].items():
        n = pa["by_group"].get(group, pa["draft"] if group == "dspark" else 0)
        lines.append(f"  {group:<16} {human_bytes(b):<36} {n / 1e9:9.3f}B parameters")
    lines += parameter_lines(pa)
    lines.append("global cache by owner (one copy per owner):")
    for o in kv["owners"]:
        lines.append(f"  layer {o['owner']:>2} m={o['ratio']:<3} {o['entries']:>12,} entries  "
                     f"main KV {human_bytes(o['main_kv_bytes'])}  index K {human_bytes(o['index_k_bytes'])}"
                     + (f"  partial group {o['partial_tokens']} tok" if o["partial_tokens"] else ""))
    lines += [
        f"  global entries {kv['global_entries']:,}  bytes {human_bytes(kv['global_bytes'])}",
        f"SWA rings: {kv['swa_entries_per_layer']} entries/layer  payload {human_bytes(kv['swa_payload_bytes'])}"
        f"  with scales {human_bytes(kv['swa_bytes'])}",
        f"compressor state: {human_bytes(kv['state_bytes'])}",
    ]
    if kv["dspark_swa_bytes"]:
        lines.append(f"DSpark rings: {human_bytes(kv['dspark_swa_bytes'])}")
    pg = s["pages"]
    lines.append(f"paged ({pg['page_tokens']}-token pages): global KV {pg['full_pages']:,} pages × "
                 f"{pg['global_page_bytes']:,} B = {pg['global_bytes']:,} B; SWA {pg['swa_pages']} pages × "
                 f"{pg['swa_page_bytes']:,} B = {pg['swa_bytes']:,} B")
    host = s.get("memory_per_gpu", {}).get("engram_residency") == "host"
    where = "in host memory, --engram host" if host else "in GPU memory, --engram hbm"
    lines += [f"cache total per request: {human_bytes(kv['total_bytes'])}",
              f"Engram tables ({where}): {human_bytes(s['engram_table_bytes'])}"]
    if "memory_per_gpu" in s:
        lines += per_gpu_text(s["memory_per_gpu"])
    return "\n".join(lines)


def token_layers_line(s: dict[str, Any]) -> str:
    """``token×layers: 22,257`` (the whole plan's), with the costed DP rank's where it differs."""
    def fmt(v):
        return f"{v:,}" if isinstance(v, int) else str(v)
    rank = s.get("token_layers_per_dp_rank", s["token_layers"])
    return f"token×layers: {fmt(s['token_layers'])}" + (
        "" if rank == s["token_layers"] else f" (the costed DP rank's: {fmt(rank)})")


def compile_text(s: dict[str, Any]) -> str:
    lines = [f"{s['model']}: {s['nodes']} nodes, {s['edges']} edges after the pipeline",
             token_layers_line(s),
             f"resident weights: {human_bytes(s['weights_bytes'])} (independent of the plan)"]
    for p in s["passes"]:
        report = ", ".join(f"{k}={v}" for k, v in p["report"].items())
        lines.append(f"  pass {p['name']:<9} changed {p['changed']:>5}  {report}")
    kv = s["kv"]
    lines.append(f"global KV after this forward: {kv['global_bytes']:,} B (naive per-layer ownership: "
                 f"{kv['naive_global_bytes']:,} B), {kv['reads']} storage reads")
    return "\n".join(lines)


def _shares(table: dict[str, float], total: float, limit: int | None = None) -> list[str]:
    rows = sorted(table.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = rows[:limit] if limit else rows
    if len(rows) > len(shown):
        shown.append((f"({len(rows) - len(shown)} more)", sum(v for _, v in rows[len(shown):])))
    return [f"  {k:<20} {seconds(v):>14}  {100 * v / total if total else 0:5.1f}%" for k, v in shown]


def cost_text(s: dict[str, Any], families: list[str] | None = None) -> str:
    """``cost``'s text; ``families`` (render/text/family_text.py's lines) stand where the op kinds would."""
    path, res = s["critical_path"], s["resources_s"]
    busiest = max(res, key=lambda k: res[k])
    work = sum(s["breakdown"]["by_stage"].values())
    sysf = s["system"]
    mode = {"sol": "SOL", "op": "OP", "hybrid": "hybrid (OP, flagged fallback)"}[s.get("cost_mode", "sol")]
    lines = [f"{s['model']} on {s['hardware']}: {mode} forward {seconds(s['total_time_s'])} "
             f"= max(critical path {seconds(s['critical_path_s'])}, busiest resource {busiest} "
             f"{seconds(s['resource_bound_s'])})",
             f"critical path: {len(path)} nodes, {path[0]} → {path[-1]}" if path else "critical path: empty",
             token_layers_line(s),
             "resources summed over all nodes: " + " · ".join(f"{k} {seconds(v)}" for k, v in res.items()),
             f"node time by stage (Σ over nodes, {seconds(work)}):", *_shares(s["breakdown"]["by_stage"], work),
             *(families or ["node time by op kind (top 10):", *_shares(s["breakdown"]["by_op"], work, 10)]),
             "nodes by bound: " + " · ".join(f"{k} {v}" for k, v in s["bound_by"].items()),
             f"system: forward {seconds(sysf['forward_s'])} · TTFT {seconds(sysf['ttft_s'])} · "
             f"ITL {seconds(sysf['itl_s'])} · output tokens {sysf['output_tokens']:,} · throughput "
             + ("-" if sysf["throughput_tok_s"] is None else f"{sysf['throughput_tok_s']:,.1f} tokens/s"),
             "assumptions:", *(f"  - {a}" for a in s["assumptions"])]
    if "memory_per_gpu" in s:
        t = s["tokens_per_gpu"]
        lines += [f"tokens per GPU: attention {t['attention']:,} · MoE dispatch {t['moe_dispatch']:,} · "
                  f"expert copies {t['expert_copies']:,}", *_dp_ranks(s.get("dp_ranks")),
                  *per_gpu_text(s["memory_per_gpu"])]
    if s.get("moe", {}).get("layers"):
        lines += moe_text(s["moe"])
    if "coverage" in s:
        from .text.coverage_text import coverage_text
        lines.append(coverage_text(s["coverage"], None if s.get("per_node") else 12))
    return "\n".join(lines)


def _dp_ranks(ranks: list[dict[str, Any]] | None) -> list[str]:
    if not ranks:
        return []
    each = " · ".join(f"{r['tokens']:,} tokens / {r['requests']:,} req" for r in ranks)
    return [f"DP ranks (largest first, round-robin; rank 0, the busiest by tokens × context, is costed): {each}"]


def moe_text(m: dict[str, Any]) -> list[str]:
    """The routing, the placement and each run of MoE layers with equal loads."""
    ep = f"EP {m['ep']} · {m['slots_per_rank']} expert slots per rank" + (
        f", {m['redundant_experts']} redundant (EPLB placement)" if m["redundant_experts"] else "")
    runs: list[list[dict]] = []
    for row in m["layers"]:
        key = ("tokens", "distinct_experts", "busiest_rank_tokens", "imbalance")
        if runs and all(runs[-1][-1][k] == row[k] for k in key) and runs[-1][-1]["layer"] + 1 == row["layer"]:
            runs[-1].append(row)
        else:
            runs.append([row])
    lines = [f"MoE routing {m['routing']} · {ep}; per layer, expected experts read and the busiest rank:"]
    for run in runs:
        r, span = run[0], f"{run[0]['layer']}" if len(run) == 1 else f"{run[0]['layer']}–{run[-1]['layer']}"
        lines.append(f"  layers {span}: T {r['tokens']:,}, {r['distinct_experts']:,.2f} of {r['experts']} experts; "
                     f"rank {r['busiest_rank']} gets {r['busiest_rank_tokens']:,.1f} token copies "
                     f"({r['busiest_rank_distinct']:,.2f} experts) = imbalance {r['imbalance']:.3f} × mean")
    return lines


def formula_text(s: dict[str, Any]) -> str:
    args = ", ".join(s["symbols"])
    lines = [f"{s['metric']}({args}) = {s['expr']}" + (" [s]" if s.get("unit") == "s" else "")]
    pieces = s.get("pieces") or []
    if s["metric"] == "sol_time":
        at = ", ".join(f"{k} = {v:,}" for k, v in s["binding"].items())
        if len(pieces) > 1:
            lines.append(f"  SOL on {s['hardware']}: {len(pieces)} regimes, each the sum along its own critical "
                         "path (or the busiest resource over all nodes where that is longer)")
        elif s.get("bound", "path") != "path":
            lines.append(f"  SOL on {s['hardware']}: the {s['bound']} time summed over all nodes (longer than the "
                         f"critical path of {s['critical_path_nodes']} nodes)" + (f" at {at}" if at else ""))
        else:
            lines.append(f"  SOL on {s['hardware']}: the critical path ({s['critical_path_nodes']} nodes) "
                         + (f"at {at}, summed symbolically" if at else "of this numeric plan"))
    if "value" in s:
        at = ", ".join(f"{k} = {v:,}" for k, v in s["binding"].items())
        v = s["value"]
        shown = (seconds(v) if s.get("unit") == "s" else f"{v:,}" if isinstance(v, int) else f"{v:,.6g}")
        lines.append(f"  value at {at}: {shown}" + ("" if isinstance(v, int) else f" (exact {s['value_exact']})"))
    if len(pieces) > 1:
        lines.append("  regimes: " + " · ".join(f"[{lo:,}, {hi:,}]" for lo, hi in pieces))
    if s["valid_range"] is not None:
        lo, hi = s["valid_range"]
        lines.append(f"  holds for {args} in [{lo:,}, {hi:,}] (elsewhere: an error)")
    elif s["symbols"]:
        at = ", ".join(f"{k} = {v:,}" for k, v in s.get("binding", {}).items()) or "the binding"
        lines.append(f"  built at {at}; evaluating where another fusion or critical path holds is an error")
    return "\n".join(lines)


def per_gpu_text(s: dict[str, Any]) -> list[str]:
    """Text lines of a ``memory_per_gpu`` dict (with its mapping)."""
    mp = s["mapping"]
    lines = [f"per GPU on {s['hardware']} (tp {mp['tp']} · dp {mp['dp']} · ep {mp['ep']} = {mp['gpus']} GPUs, "
             f"MoE-TP {mp['moe_tp']}): {fit_verdict(s)}",
             f"  HBM, with the workspace: {human_bytes(s['total_bytes'])} of {human_bytes(s['capacity_bytes'])}",
             f"  weights {human_bytes(s['weights_bytes'])} · cache {human_bytes(s['cache_bytes'])} "
             f"({s['requests']} requests) · workspace {human_bytes(s['workspace_bytes'])} ({s['workspace_basis']})"]
    top = sorted(((b, g) for g, b in s["weights_by_group"].items() if b), reverse=True)[:4]
    lines.append("  largest weight groups: " + " · ".join(f"{g} {human_bytes(b)}" for b, g in top))
    lines.append(f"  KV tokens that fit per GPU (one request's cache in the budget the weights leave): "
                 f"{s['kv_tokens_fit']:,}")
    if s.get("engram_residency") == "host":
        lines.append(f"  Engram tables on the host; HBM keeps a hot cache of "
                     f"{human_bytes(s['weights_by_group'].get('engram_hot_cache', 0))} (engram_hot_cache)")
    return lines
