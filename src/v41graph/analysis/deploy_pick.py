"""What a deployment pick says besides its figures: its instances, its bottleneck, its launch flags.

**Launch flags** are SGLang's (``python -m sglang.launch_server``): one line per instance, with
``--tp T`` the instance's GPUs, ``--ep E`` (``--enable-ep-moe`` on older releases), ``--dp D
--enable-dp-attention`` for DP attention (inside the TP group: it adds no GPUs — the mistake
that makes some tools' launch files ask for 4–8× the plan), ``--max-running-requests``,
``--chunked-prefill-size`` and, disaggregated, ``--disaggregation-mode prefill|decode``. The GPUs
of all lines add up to the plan's (:func:`launch_gpus`; tests/test_deploy.py parses them).

>>> from v41graph.analysis.deploy_space import EngineMapping, Instance
>>> lines = launch_flags("aggregated", (Instance(EngineMapping(8, 8, 8), 64, 8192), 2), "deepseek-v4-flash")
>>> lines[0].split(" --model-path ")[1].split(" --max")[0]
'deepseek-v4-flash --tp 8 --ep 8 --dp 8 --enable-dp-attention'
>>> launch_gpus(lines)
16
"""

from __future__ import annotations

import re
from typing import Any

from ..ir.plan import Plan, Request
from ..passes import compile
from .deploy_space import Instance, prefill_prompts
from .families import by_family


def _instance(inst: Instance, count: int, role: str) -> dict[str, Any]:
    e = inst.engine
    out = {"role": role, "count": count, "tp": e.tp, "attn_dp": e.attn_dp, "ep": e.ep, "gpus_each": e.gpus,
           "decoder_replay": inst.replay}
    if role != "prefill":
        out["max_running_requests"] = inst.cap
    out["chunked_prefill_size"] = inst.chunk
    return out


def describe(mode: str, parts) -> list[dict[str, Any]]:
    """JSON-ready: the instances of a deployment, by role."""
    if mode == "aggregated":
        inst, r = parts
        return [_instance(inst, r, "prefill+decode")]
    pre, x, dec, y = parts
    return [_instance(pre, x, "prefill"), _instance(dec, y, "decode")]


def _line(inst: Instance, model: str, role: str | None, port: int) -> str:
    e = inst.engine
    flags = [f"--model-path {model}", f"--tp {e.tp}"]
    if e.ep > 1:
        flags.append(f"--ep {e.ep}")
    if e.attn_dp > 1:
        flags.append(f"--dp {e.attn_dp} --enable-dp-attention")
    if role != "prefill":
        flags.append(f"--max-running-requests {inst.cap}")
    flags.append(f"--chunked-prefill-size {inst.chunk}")
    if role:
        flags.append(f"--disaggregation-mode {role}")
    return "python -m sglang.launch_server " + " ".join(flags) + f" --port {port}"


def launch_flags(mode: str, parts, model: str) -> list[str]:
    """One SGLang command line per instance (see the module doc)."""
    if mode == "aggregated":
        inst, r = parts
        return [_line(inst, model, None, 30000 + i) for i in range(r)]
    pre, x, dec, y = parts
    return [_line(pre, model, "prefill", 30000 + i) for i in range(x)] + \
        [_line(dec, model, "decode", 31000 + i) for i in range(y)]


def launch_gpus(lines: list[str]) -> int:
    """GPUs the command lines ask for: Σ --tp (DP attention and EP live inside the TP group)."""
    return sum(int(re.search(r"--tp (\d+)", line).group(1)) for line in lines)


def _resource(family: str, fig, hardware) -> str:
    if family == "communication":
        return "interconnect"
    compute = fig.flops / max(hardware.peak_flops.values())
    memory = fig.bytes / hardware.hbm_bandwidth
    return "compute" if compute > memory else "HBM bandwidth"


def _top_family(model, hardware, plan) -> dict[str, Any]:
    f = by_family(model, plan, compile(model, plan, hardware), hardware)
    name, fig = max(f.families.items(), key=lambda kv: (kv[1].time_s, kv[0]))
    return {"family": name, "share": fig.time_s / f.total_time_s if f.total_time_s else 0.0,
            "resource": _resource(name, fig, hardware)}


def bottleneck(model, hardware, mode: str, parts, isl: int, osl: int) -> dict[str, Any]:
    """The family with the most node time in the decode step at the cap (and the prefill step of a
    prefill instance), and the resource that family is nearer to (flops at the GPU's top peak vs
    bytes at HBM bandwidth; communication: the interconnect). SOL schedule."""
    dec = parts[0] if mode == "aggregated" else parts[2]
    m = dec.engine.mapping
    policies = {"tp": m.tp, "dp": m.dp, "ep": m.ep, "decoder_replay": dec.replay}
    out = {"decode": _top_family(model, hardware, Plan([Request.decode(isl + osl // 2, copies=dec.cap)],
                                                          **policies))}
    if mode == "disaggregated":
        pre = parts[0]
        pm = pre.engine.mapping
        prompts = [Request.prefill(isl, seq=i) for i in range(prefill_prompts(isl) if isl <= pre.chunk else 1)]
        plan = Plan(prompts, tp=pm.tp, dp=pm.dp, ep=pm.ep, decoder_replay=pre.replay)
        out["prefill"] = _top_family(model, hardware, plan)
    return out
