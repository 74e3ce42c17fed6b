"""The figures of the report's sections on parameters and op families (``report.json``;
``render/report_parts.py`` writes them into ``report.md`` and the summary).

Each section is one function of the figures the other commands print:
:func:`~v41graph.model.parameters.parameters` and :func:`~v41graph.analysis.families.by_family`
of the report's decode step.

>>> from v41graph import load_model, Plan, Request
>>> d = sections_data(load_model("deepseek-v4-flash"), Plan([Request.decode(8192, copies=64)]), "h200_sxm")
>>> round(d["parameters"]["total"] / 1e9), "Fused" in d["decode_by_family"]["families"]
(284, False)
"""

from __future__ import annotations

from typing import Any

from ..analysis.families import by_family
from ..model.parameters import parameters
from ..passes import compile


def sections_data(model, decode_plan, hardware: str, cost=None) -> dict[str, Any]:
    """Parameters by group and active per token; the decode step's time, flops and bytes by op family."""
    compiled = compile(model, decode_plan, hardware, cost=cost)
    return {"parameters": parameters(model).as_dict(),
            "decode_by_family": by_family(model, decode_plan, compiled, hardware).as_dict()}
