"""Notebook display and tables of compiled results, in plain code (this layer may not import
the backends): a short ``repr``, a compact HTML summary, and one record per node.

:func:`node_records` reads the ``cost`` and ``schedule`` side tables the scheduling pass
writes; on a graph without them the cost columns are ``None``.

>>> from v41graph import load_model, Plan, Request, compile
>>> c = compile(load_model(), Plan([Request.prefill(1024)]))
>>> recs = node_records(c.graph)
>>> len(recs) == len(c.graph.nodes), sorted(recs[0])[:4]
(True, ['bound', 'bytes_act_in', 'bytes_act_out', 'bytes_kv_read'])
>>> sum(r["critical"] for r in recs) == len(c.report("schedule").critical_path)
True
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..algebra import is_symbolic
from ..costs.value import BYTE_CATEGORIES, LINKS
from ..ir.display import html_table as _table

PRECISIONS = ("fp4", "fp8", "bf16", "tf32")


def _plain(v: Any) -> Any:
    if is_symbolic(v):
        return str(v)
    if isinstance(v, Fraction):
        return int(v) if v.denominator == 1 else float(v)
    return v


def node_records(graph) -> list[dict[str, Any]]:
    """One dict per node in topological order: name, layer, stage, kind, flops by precision,
    bytes by category, comm by link, time, start, finish, bound, on the critical path."""
    costs = graph.annotations.get("cost", {})
    slots = graph.annotations.get("schedule", {})
    out = []
    for n in graph.topological_order():
        node, cost, slot = graph.nodes[n], costs.get(n), slots.get(n)
        rec: dict[str, Any] = {"name": n, "layer": node.layer, "stage": node.stage, "path": node.path,
                               "kind": node.op.kind}
        for p in PRECISIONS:
            rec[f"flops_{p}"] = None if cost is None else _plain(cost.flop(p))
        for b in BYTE_CATEGORIES:
            rec[f"bytes_{b}"] = None if cost is None else _plain(cost.byte(b))
        for link in LINKS:
            rec[f"comm_{link}"] = None if cost is None else _plain(dict(cost.comm).get(link, 0))
        rec.update({"time_s": None if slot is None else float(slot.sol.time),
                    "start_s": None if slot is None else slot.start,
                    "finish_s": None if slot is None else slot.finish,
                    "bound": None if slot is None else slot.sol.bound,
                    "critical": None if slot is None else slot.critical})
        out.append(rec)
    return out


def to_pandas(records: list[dict[str, Any]]):
    """A ``pandas.DataFrame`` of records; pandas is optional (``to_records`` works without it)."""
    try:
        import pandas as pd
    except ImportError:
        from ..errors import V41Error
        raise V41Error("to_pandas: needs pandas (pip install pandas); to_records() works without it") from None
    return pd.DataFrame(records)


def compiled_repr(compiled) -> str:
    passes = ",".join(p.name for p in compiled.passes)
    text = f"Compiled({compiled.graph.model!r}, {len(compiled.graph.nodes)} nodes, passes {passes}"
    sched = next((p.report for p in compiled.passes if p.name == "schedule"), None)
    if sched is not None:
        text += (f"; {sched.hardware}: total {sched.total_time_s * 1e3:.3f} ms, critical path "
                 f"{len(sched.critical_path)} nodes")
    return (text + ")")[:300]


def compiled_html(compiled) -> str:
    """Model, size, passes; when scheduled: hardware, times, bound counts and time by stage."""
    g = compiled.graph
    rows = [("model", g.model), ("nodes", len(g.nodes)), ("edges", len(g.edges)),
            ("passes", ", ".join(f"{p.name} ({p.changed})" for p in compiled.passes))]
    sched = next((p.report for p in compiled.passes if p.name == "schedule"), None)
    if sched is not None:
        rows += [("hardware", sched.hardware), ("total", f"{sched.total_time_s * 1e3:.3f} ms"),
                 ("critical path", f"{sched.critical_path_s * 1e3:.3f} ms over {len(sched.critical_path)} nodes"),
                 ("busiest resource", f"{sched.resource_bound_s * 1e3:.3f} ms"),
                 ("bound by", ", ".join(f"{k} {v}" for k, v in sched.bound_by.items()))]
        rows += [(f"stage {s}", f"{t * 1e3:.3f} ms") for s, t in sched.by_stage.items()]
    return _table(rows)


def schedule_report_repr(report) -> str:
    return (f"ScheduleReport({report.hardware}: total {report.total_time_s * 1e3:.3f} ms, critical path "
            f"{report.critical_path_s * 1e3:.3f} ms over {len(report.critical_path)} nodes, busiest resource "
            f"{report.resource_bound_s * 1e3:.3f} ms)")[:300]
