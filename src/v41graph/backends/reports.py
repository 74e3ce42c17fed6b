"""JSON-ready form of compiled graphs: every pass's typed report, token×layers, memory.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.passes import compile_graph
>>> m = load_model()
>>> s = compile_summary(m, compile_graph(m, Plan([Request.prefill(128)], decoder_replay="bounded")))
>>> s["token_layers"], [p["name"] for p in s["passes"]]
(5120, ['precision', 'replay', 'kv_dedup', 'fusion'])
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import sympy

from ..inventory import inventory
from ..model import ModelSpec
from ..passes import Compiled
from ..passes.replay import token_layers


def jsonable(value: Any) -> Any:
    """Dataclasses → dicts, exact numbers → int (or float for a true fraction), sympy → str."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for name in ("tokens_pruned",):
            if hasattr(value, name):
                out[name] = jsonable(getattr(value, name))
        return out
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    if isinstance(value, sympy.Basic):
        return int(value) if value.is_Integer else str(value)
    return value


def compile_summary(model: ModelSpec, compiled: Compiled) -> dict[str, Any]:
    """``compile --json``: passes with reports, token×layers, resident weights, KV by owner."""
    kv_table = compiled.graph.annotations.get("kv", {})
    dedup = compiled.report("kv_dedup")
    owners = {nid: {"owner": r.owner, "kind": r.kind, "bytes": jsonable(r.bytes), "readers": len(r.readers)}
              for nid, r in sorted(kv_table.items()) if r.kind in ("GlobalKVStore", "IndexKStore")}
    return {
        "model": model.name,
        "passes": [{"name": p.name, "changed": p.changed, "report": jsonable(p.report)} for p in compiled.passes],
        "token_layers": jsonable(token_layers(compiled.graph)),
        "nodes": len(compiled.graph.nodes),
        "edges": len(compiled.graph.edges),
        "weights_bytes": inventory(model).total_bytes,
        "kv": {"global_bytes": jsonable(dedup.global_bytes), "naive_global_bytes": jsonable(dedup.naive_global_bytes),
               "reads": dedup.reads, "owners": owners},
    }
