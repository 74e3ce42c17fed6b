"""Plain text for ``v41graph simulate``, ``restore`` and ``ratios``, rendered from their dicts.

>>> row = {"rate_per_s": 2.0, "requests": 3, "ttft_s": {"p50": 0.03, "p90": 0.04, "p99": 0.05},
...        "queue_s": {"p50": 0.0, "p90": 0.0, "p99": 0.001}, "itl_s": {"p50": 0.0005, "p90": 0.0006,
...        "p99": 0.0009}, "throughput_tok_s": 500.0, "steps": 10}
>>> _row(row)
'     2.0       3    30.00    40.00    50.00    0.500    0.600    0.900      500.0'
"""

from __future__ import annotations

from typing import Any

from ..units import beside_sol


def _ms(v) -> float:
    return float("nan") if v is None else v * 1e3


def _row(r: dict[str, Any]) -> str:
    rate = "trace" if r["rate_per_s"] is None else f"{r['rate_per_s']:.1f}"
    t, i = r["ttft_s"], r["itl_s"]
    return (f"{rate:>8} {r['requests']:>7} {_ms(t['p50']):>8.2f} {_ms(t['p90']):>8.2f} {_ms(t['p99']):>8.2f} "
            f"{_ms(i['p50']):>8.3f} {_ms(i['p90']):>8.3f} {_ms(i['p99']):>8.3f} {r['throughput_tok_s']:>10.1f}")


#: the table's column names, on one line (times in ms)
HEADER = (f"{'rate/s':>8} {'reqs':>7} {'TTFT p50':>8} {'p90':>8} {'p99':>8} {'ITL p50':>8} {'p90':>8} "
          f"{'p99':>8} {'tok/s':>10}   (TTFT, ITL in ms)")


#: what each ``emission`` value means, on the header line of every serving answer
EMISSION_LINE = {"overlap": "tokens emitted one step late (SGLang overlap scheduler)",
                 "step_end": "tokens emitted at the end of their step (--disable-overlap-schedule)"}


def workload_line(w: dict[str, Any]) -> str:
    """The workload a simulation ran: Poisson's lengths, or a trace's own figures.

    >>> print(workload_line({"arrivals": "trace", "requests": 19366, "span_s": 3502.1, "rate_per_s": 5.53,
    ...                      "prompt": {"mean": 1154.7, "p50": 1020.0, "p99": 4207.3},
    ...                      "output": {"mean": 211.9, "p50": 129.0, "p99": 697.0}, "duration_s": None}))
    ... # doctest: +NORMALIZE_WHITESPACE
    workload: trace of 19,366 requests over 3,502.1 s (5.53/s); prompt mean 1,155 · p50 1,020 · p99 4,207;
    output mean 212 · p50 129 · p99 697
    """
    if w["arrivals"] != "trace":
        return f"workload: {w['arrivals']} arrivals, prompt {w['prompt']:,}, output {w['output']:,}, seed {w['seed']}"
    rate = "" if w["rate_per_s"] is None else f" ({w['rate_per_s']:.3g}/s)"

    def lengths(x):
        return f"mean {x['mean']:,.0f} · p50 {x['p50']:,.0f} · p99 {x['p99']:,.0f}"
    return (f"workload: trace of {w['requests']:,} requests over {w['span_s']:,.1f} s{rate}; prompt "
            f"{lengths(w['prompt'])}; output {lengths(w['output'])}")


def _window_note(w: dict[str, Any]) -> str:
    """Whose window the throughput covers, for a trace: the whole of it, or the --duration cut."""
    if w["arrivals"] != "trace":
        return ""
    return " (the whole trace, to its last token)" if w["duration_s"] is None else " (the trace cut at --duration)"


def simulate_text(s: dict[str, Any]) -> str:
    m, w, sch = s["mapping"], s["workload"], s["scheduler"]
    lines = [f"{s['model']} on {s['hardware']} (TP{m['tp']} EP{m['ep']} DP{m['dp']}), {s['cost_basis'].upper()} "
             f"step costs, {s['step_shapes_costed']} step shapes compiled"
             + (" (bucketed: decode batch and context rounded up)" if s["bucketed"] else " (exact shapes)"),
             workload_line(w),
             f"scheduler: {sch['policy']}, max_prefill_tokens {sch['max_prefill_tokens']:,}, chunked_prefill_size "
             f"{sch['chunked_prefill_size']:,}, max_running_requests {sch['max_running_requests']}"
             + (", mixed prefill+decode" if sch["mixed"] else ", prefill steps first")
             + f", KV pool {sch['kv_pages']:,} pages of 256 tokens (global KV; prompt + output reserved)",
             f"emission: {EMISSION_LINE[s['emission']]}",
             f"TTFT and ITL: {s['boundary']}",
             f"throughput: output tokens emitted in [{s['window_s'][0]:g}, {s['window_s'][1]:,.6g}) s per second"
             + _window_note(w)]
    lines += _basis_lines(s)
    for r in s["rates"]:  # the step costers of a whole-forward table (FPM, runtime) give the means
        if "ttft_mean_s" in r:
            lines.append(f"means: TTFT {_ms(r['ttft_mean_s']):.2f} ms, TPOT {_ms(r['tpot_mean_s'] or 0):.2f} ms, "
                         f"forward interval {_ms(r['forward_mean_s']):.2f} ms")
    # by hand: one header line whose columns line up with the rows' fixed widths
    lines.append(HEADER)
    lines += [_row(r) for r in s["rates"]]
    if any("sol_ceiling" in r for r in s["rates"]):
        lines.append("SOL ceiling (the same arrivals on SOL step costs; forecast / SOL):")
        lines += [_ceiling(r) for r in s["rates"] if "sol_ceiling" in r]
    for r in s["rates"]:
        if "kv_transfer_bytes" in r:
            lines.append(f"rate {r['rate_per_s']}: KV transfer p50 {r['kv_transfer_bytes']['p50']:,.0f} B, "
                         f"{_ms(r['kv_transfer_s']['p50']):.3f} ms")
    return "\n".join(lines)


def _basis_lines(s: dict[str, Any]) -> list[str]:
    """The lines a run adds by what priced its steps: DSpark, a disaggregated pair, an FPM table, a runtime fit."""
    m, lines = s["mapping"], []
    if s.get("dspark"):
        d = s["dspark"]
        lines.append(f"DSpark: decode steps verify {d['verify_len']} drafted tokens; acceptance {d['acceptance']} "
                     f"(E = {d['expected_tokens_per_step']:.4f} tokens a step); a burst's extra tokens give ITL 0")
    if s["disaggregated"]:
        d = s["disaggregated"]
        lines.append(f"disaggregated: prefill TP{d['prefill']['tp']} EP{d['prefill']['ep']}, decode TP{m['tp']} "
                     f"EP{m['ep']}; KV over {d['link']} at {d['link_bandwidth'] / 1e9:g} GB/s, TTFT includes it")
    if s.get("fpm"):
        f = s["fpm"]
        lines.append(f"FPM step costs: table {f['table']} (admission: {f['admission']}; decoder replay "
                     f"{f['decoder_replay']}); estimator {', '.join(f'{k}: {v}' for k, v in f['estimator'].items())}; "
                     f"steps by tier {_shares(f['steps_share_by_tier'])}")
        if f.get("extrapolated_on") and f["answers_by_tier"].get("extrapolated"):
            lines.append(f"extrapolated steps: kernels (SOL) plus the runtime terms fitted to {f['table']} "
                         f"({_terms(f['extrapolated_on'])})")
        lines.append(f"forward interval boundary: {f['boundary']}; TTFT here is queue + forwards, with the "
                     f"following step under the overlap scheduler (no HTTP, tokenization or output processing)")
    if s.get("runtime"):
        rt = s["runtime"]
        lines.append(f"runtime basis: {rt['kernel']} kernels of each step plus {_terms(rt['fit'])}; steps by tier "
                     f"{_shares(rt['steps_share_by_tier'])}"
                     + ("" if rt["same_deployment"] else f" (fitted on {rt['fit']['gpu']} TP{rt['fit']['tp']}: "
                        "this deployment is extrapolated)"))
    return lines


def restore_text(s: dict[str, Any]) -> str:
    swa = "SWA kept" if s["swa_cached"] else "SWA lost: encoder bounded replay of the window"
    return "\n".join([
        f"{s['model']} on {s['hardware']}: prefix hit {s['prefix']:,} tokens in {s['tier']}, then "
        f"{s['suffix']:,} new tokens ({swa})",
        f"fetch: {s['fetch_bytes']:,} B at {s['tier_bandwidth'] or 0:,} B/s + {s['tier_latency_ns']:,} ns "
        f"= {s['fetch_s'] * 1e3:.4f} ms",
        f"forward (extend{' + replay' if not s['swa_cached'] else ''}): {s['forward_s'] * 1e3:.4f} ms; "
        f"replayed token-layers {s['replayed_token_layers']:,}",
        f"TTFT (fetch overlapped with the forward layer by layer): {s['ttft_s'] * 1e3:.4f} ms "
        f"(fetch exposed {s['exposed_fetch_s'] * 1e3:.4f} ms)",
        f"boundary: {s['boundary']}"])


def ratios_text(s: dict[str, Any]) -> str:
    a, b = s["v41_persisted_bytes"], s["v4_persisted_bytes"]
    return "\n".join([
        f"{s['models'][0]} / {s['models'][1]} at {s['context']:,} tokens",
        f"global KV per token (exact entries): {s['global_kv_ratio_exact_entries']:.4f}  (paper: about 1/4)",
        f"global KV, paged (256-token pages):  {s['global_kv_ratio_paged']:.4f}",
        f"persisted cache, V4.1 without SWA / V4-Flash with its SWA window pages: "
        f"{s['persisted_ratio_v41_no_swa_vs_v4_with_swa']:.4f}  (paper: about 1/8)",
        f"  V4.1 persisted: global {a['global']:,} B (SWA {a['swa']:,} B not persisted)",
        f"  V4-Flash persisted: global {b['global']:,} B + SWA {b['swa']:,} B"])


def _ceiling(r: dict[str, Any]) -> str:
    """One rate's forecast beside its SOL ceiling.

    >>> r = {"rate_per_s": 2.0, "ttft_s": {"p50": 0.0312}, "itl_s": {"p50": 0.005}, "throughput_tok_s": 470.0,
    ...      "sol_ceiling": {"ttft_p50_s": 0.0095, "itl_p50_s": 0.0005, "throughput_tok_s": 490.0,
    ...                      "ratio": {"ttft_p50": 3.284, "itl_p50": 10.0, "throughput": 0.959}}}
    >>> for part in _ceiling(r).strip().split("; "):
    ...     print(part)
    rate 2.0/s: forecast TTFT p50 31.2 ms · SOL 9.5 ms · 3.28×
    ITL p50 5.000 ms · SOL 0.500 ms · 10.00×
    throughput 470.0 tok/s · SOL 490.0 tok/s · 0.96×
    """
    c, x = r["sol_ceiling"], r["sol_ceiling"]["ratio"]
    rate = "trace" if r["rate_per_s"] is None else f"rate {r['rate_per_s']:.1f}/s"
    return (f"  {rate}: forecast TTFT p50 "
            + beside_sol(f"{_ms(r['ttft_s']['p50']):.1f} ms", f"{_ms(c['ttft_p50_s']):.1f} ms", x["ttft_p50"])
            + "; ITL p50 " + beside_sol(f"{_ms(r['itl_s']['p50']):.3f} ms", f"{_ms(c['itl_p50_s']):.3f} ms",
                                        x["itl_p50"])
            + "; throughput " + beside_sol(f"{r['throughput_tok_s']:.1f} tok/s", f"{c['throughput_tok_s']:.1f} tok/s",
                                           x["throughput"]))


def _shares(shares: dict[str, float]) -> str:
    return " · ".join(f"{k} {v:.1%}" for k, v in shares.items()) or "none"


def runtime_terms(fit: dict) -> str:
    """A runtime fit's non-zero terms in words (``RuntimeFit.to_dict()``).

    >>> runtime_terms({"terms": ["forward", "request"], "coefficients": {"forward": 150.0, "request": 0.0},
    ...                "units": {"forward": "ms per forward", "request": "ms per request"}})
    '150 ms per forward'
    """
    return " + ".join(f"{fit['coefficients'][t]:.4g} {fit['units'][t]}" for t in fit["terms"] if fit["coefficients"][t])


def _terms(fit: dict) -> str:
    """The fitted runtime terms in words, with the fit's leave-one-out error."""
    return f"{runtime_terms(fit)} (leave-one-out MAPE {fit['loo_error']['mape']:.2f} % over {fit['points']} forwards)"
