"""The report's parts shared by its Markdown, summary and page: the sections on parameters and op
families (``analysis/report_sections.py`` computes the figures; this only formats them), and the
prefill and decode times with their SOL ceilings.
"""

from __future__ import annotations

from typing import Any

from .units import ms, times


def report_ms(seconds: float) -> str:
    """A report time: milliseconds to two decimals (report.md, the summary and the page)."""
    return ms(seconds, ",.2f")


def basis_title(d: dict) -> str:
    """The prefill table's title: what its times are."""
    if "cost_mode" not in d:
        return "speed of light"
    return f"{d['cost_mode']} (measured kernel tables where they cover; SOL beside as the ceiling)"


def prefill_table(d: dict) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The prefill table's header and rows (Markdown and the page): each time, and off SOL its ceiling too.

    >>> head, rows = prefill_table({"prefill": {"8192": {"replay_off_s": 0.1, "replay_bounded_s": None,
    ...                                                   "speedup": None}}})
    >>> head, rows
    (('prompt', 'replay off', 'replay bounded', 'speed-up'), [('8,192', '100.00 ms', '–', '–')])
    """
    ceiling = d.get("sol_ceiling")
    head = ("prompt", "replay off", "replay bounded", "speed-up") + \
        (() if ceiling is None else ("SOL replay off (×)", "SOL replay bounded (×)"))
    rows = []
    for n, p in d["prefill"].items():
        bounded = "–" if p["replay_bounded_s"] is None else report_ms(p["replay_bounded_s"])
        speedup = "–" if p["speedup"] is None else f"{p['speedup']:.2f}×"
        row = (f"{int(n):,}", report_ms(p["replay_off_s"]), bounded, speedup)
        if ceiling is not None:
            c = ceiling["prefill"][n]
            row += tuple("–" if c[f"{k}_s"] is None else f"{report_ms(c[f'{k}_s'])} ({times(c['ratio'][k])})"
                         for k in ("replay_off", "replay_bounded"))
        rows.append(row)
    return head, rows


def decode_ceiling(d: dict) -> str:
    """The decode step's SOL ceiling after its forecast (empty on SOL)."""
    c = d.get("sol_ceiling")
    return "" if c is None else f" · SOL {report_ms(c['decode_step_s'])} · {times(c['decode_ratio'])}"



def parameters_line(d: dict[str, Any]) -> str:
    """Total parameters and the active ones per token, in one sentence."""
    pa = d["parameters"]
    active = {k: v for k, v in pa["active"].items() if v}
    return (f"{pa['total'] / 1e9:.2f}B in total (draft blocks {pa['draft'] / 1e9:.2f}B apart); active per token: "
            + ", ".join(f"{k.replace('_', ' ')} {v['total'] / 1e9:.2f}B" for k, v in active.items()))


def parameter_table(d: dict[str, Any]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The parameters by group, total and active per token of each kind (Markdown and the page)."""
    pa = d["parameters"]
    active = {k: v for k, v in pa["active"].items() if v}
    head = ("group", "parameters", *(f"active, {k.replace('_', ' ')}" for k in active))
    rows = [(g, f"{n / 1e9:.3f}B", *(f"{v['by_group'].get(g, 0) / 1e9:.3f}B" for v in active.values()))
            for g, n in pa["by_group"].items() if n]
    return head, rows


def sections_markdown(d: dict[str, Any]) -> list[str]:
    """Markdown lines: a parameters table and the decode step by op family."""
    pa = d["parameters"]
    head, rows = parameter_table(d)
    lines = ["", "## Parameters", "", parameters_line(d) + " (docs/parameters.md explains each term).", "",
             "| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (len(head) - 2)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", "| storage format | parameters | bytes per parameter |", "|---|---:|---:|"]
    lines += [f"| {k} | {v['parameters'] / 1e9:.3f}B | {v['bytes_per_parameter']:.5g} |"
              for k, v in pa["formats"].items()]
    fam = d["decode_by_family"]
    total = fam["total_time_s"]
    lines += ["", "## Decode step by op family (batch 64, context 8K)", "",
              f"Node time summed over all nodes: {total * 1e3:,.3f} ms; {fam['rule']}.", "",
              "| family | time | share | TFLOP | GB |", "|---|---:|---:|---:|---:|"]
    for k, v in sorted(fam["families"].items(), key=lambda kv: -kv[1]["time_s"]):
        lines.append(f"| {k} | {v['time_s'] * 1e3:,.3f} ms | {100 * v['time_s'] / total:.1f}% | "
                     f"{v['flops'] / 1e12:.3f} | {v['bytes'] / 1e9:.2f} |")
    return lines


def sections_summary(d: dict[str, Any]) -> list[str]:
    """Two summary lines: parameters, and the decode step's largest op families."""
    pa, fam = d["parameters"], d["decode_by_family"]
    active = " · ".join(f"{k.replace('_', ' ')} {v['total'] / 1e9:.2f}B" for k, v in pa["active"].items() if v)
    top = sorted(fam["families"].items(), key=lambda kv: -kv[1]["time_s"])[:4]
    total = fam["total_time_s"]
    return [f"parameters: {pa['total'] / 1e9:.2f}B total, active per token {active}",
            "decode step by op family: " + " · ".join(f"{k} {100 * v['time_s'] / total:.1f}%" for k, v in top)]
