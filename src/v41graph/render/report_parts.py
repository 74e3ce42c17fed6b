"""The report's sections on parameters and op families, as Markdown lines and summary lines
(``analysis/report_sections.py`` computes the figures; this only formats them).
"""

from __future__ import annotations

from typing import Any


def sections_markdown(d: dict[str, Any]) -> list[str]:
    """Markdown lines: a parameters table and the decode step by op family."""
    pa = d["parameters"]
    active = {k: v for k, v in pa["active"].items() if v}
    lines = ["", "## Parameters", "",
             f"{pa['total'] / 1e9:.2f}B in total (draft blocks {pa['draft'] / 1e9:.2f}B apart); active per token: "
             + ", ".join(f"{k.replace('_', ' ')} {v['total'] / 1e9:.2f}B" for k, v in active.items())
             + " (docs/parameters.md explains each term).", "",
             "| group | parameters | " + " | ".join(f"active, {k.replace('_', ' ')}" for k in active) + " |",
             "|---|---:|" + "---:|" * len(active)]
    for g, n in pa["by_group"].items():
        if n:
            lines.append(f"| {g} | {n / 1e9:.3f}B | "
                         + " | ".join(f"{v['by_group'].get(g, 0) / 1e9:.3f}B" for v in active.values()) + " |")
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
