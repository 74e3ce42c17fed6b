"""The report's sections on parameters and op families (``report.md``, ``report.json``, summary).

Kept apart from :mod:`~v41graph.backends.markdown_report` so each section is one function of the
figures the other commands print: :func:`~v41graph.model.parameters.parameters` and
:func:`~v41graph.analysis.families.by_family` of the report's decode step.

>>> from v41graph import load_model, Plan, Request
>>> d = sections_data(load_model("deepseek-v4-flash"), Plan([Request.decode(8192, copies=64)]), "h200_sxm")
>>> round(d["parameters"]["total"] / 1e9), "Fused" in d["decode_by_family"]["families"]
(284, False)
"""

from __future__ import annotations

from typing import Any

from ..analysis.families import by_family
from ..model.parameters import parameters
from ..passes import schedule


def sections_data(model, decode_plan, hardware: str, cost=None) -> dict[str, Any]:
    """Parameters by group and active per token; the decode step's time, flops and bytes by op family."""
    compiled = schedule(model, decode_plan, hardware, cost=cost)
    return {"parameters": parameters(model).as_dict(),
            "decode_by_family": by_family(model, decode_plan, compiled, hardware).as_dict()}


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
