"""v41graph's SOL for each table's boundary at any coordinates, from the same cost rules.

Utilisation = SOL / measured needs the SOL of the exact work a table row times, at the row's
coordinates (not only the query's). Each function builds the op payloads that boundary holds
and prices them with :func:`v41graph.costs.rules.op_cost` and :func:`v41graph.costs.value.sol_time`
— no second formula. Activations around a kernel are bf16 in and out (what the collectors feed).

>>> from v41graph.costs.hardware import load_hardware
>>> hw = load_hardware("h200_sxm")
>>> t = gemm_sol({"gemm_dtype": "bfloat16", "m": 4096, "n": 4096, "k": 4096}, hw)
>>> t == 2 * 4096 ** 3 / 989e12
True
"""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

from ...ir.ops import Communication, Gemm, MhcCoefficients, MhcCollapse, MhcExpand, RoutedExperts, SwiGLU
from ...model.formats import BF16, FP4_E2M1_UE8M0_G32, FP8_E4M3_B128, FP32, bytes_per_value
from ..hardware import Hardware
from ..rules import op_cost
from ..value import Cost, sol_time

#: table dtype → v41graph weight format
GEMM_DTYPES = {"fp8_block": FP8_E4M3_B128.name, "bfloat16": BF16.name, "float32": FP32.name}
MOE_DTYPES = {"fp8_block": FP8_E4M3_B128.name, "w4a8_mxfp4_mxfp8": FP4_E2M1_UE8M0_G32.name,
              "w4a16_mxfp4": FP4_E2M1_UE8M0_G32.name, "bfloat16": BF16.name}
_ACT = bytes_per_value(BF16.name)


def _seconds(cost: Cost, hw: Hardware) -> float:
    return float(sol_time(cost, hw).time)


def _io(t, dims_in, dims_out) -> Cost:
    return Cost.of(bytes={"act_in": t * dims_in * _ACT, "act_out": t * dims_out * _ACT})


def gemm_sol(c: dict, hw: Hardware, weight_format: str | None = None) -> float:
    """y[m, n] = x[m, k] · W[k, n] at the table dtype (or ``weight_format`` when pricing a transfer)."""
    fmt = weight_format or GEMM_DTYPES[c["gemm_dtype"]]
    op = Gemm("table", int(c["k"]), int(c["n"]), fmt)
    return _seconds(op_cost(op, None, None, c["m"]) + _io(c["m"], c["k"], c["n"]), hw)


def moe_sol(c: dict, hw: Hardware, weight_format: str | None = None) -> float:
    """Routed experts up → SwiGLU → down on one GPU of a moe_tp × moe_ep group."""
    fmt = weight_format or MOE_DTYPES[c["moe_dtype"]]
    split = int(c["moe_tp_size"]) * int(c["moe_ep_size"])
    e, k, d, inter = int(c["num_experts"]), int(c["topk"]), int(c["hidden_size"]), int(c["inter_size"])
    t = c["num_tokens"]
    work = (op_cost(RoutedExperts(e, k, d, inter, fmt, "up"), None, None, t)
            + op_cost(SwiGLU(inter, k), None, None, t)
            + op_cost(RoutedExperts(e, k, d, inter, fmt, "down"), None, None, t))
    return _seconds(work.scaled(Fraction(1, split)) + _io(t, d, d), hw)


def mhc_sol(c: dict, hw: Hardware) -> float:
    """One site: ``pre`` = coefficients + collapse (n·d in, d out), ``post`` = expand (d + n·d in, n·d out)."""
    n, d, t = int(c["hc_mult"]), int(c["hidden_size"]), c["num_tokens"]
    if c["op_name"] == "pre":
        work = (op_cost(MhcCoefficients(n, d, int(c["sinkhorn_iters"])), None, None, t)
                + op_cost(MhcCollapse(n, d, False), None, None, t))
        return _seconds(work + _io(t, n * d, d), hw)
    return _seconds(op_cost(MhcExpand(n, d), None, None, t) + _io(t, d + n * d, n * d), hw)


#: what the collective rule may read of its context: no model (top-k travels in the op), one NVLink domain
_BARE = SimpleNamespace(model=SimpleNamespace(experts_per_token=1), gpus_per_node=None)
#: NCCL table names → v41graph collectives
COLLECTIVES = {"alltoall": "all_to_all", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
               "all_reduce": "all_reduce"}


#: bytes of one element of a communication table's ``message_size``: the collectors count elements,
#: not bytes — ai-dynamo/aiconfigurator collector/collect_nccl.py logs ``"message_size": size //
#: bytes_per_element`` of the nccl-tests buffer (2 for ``half``), collector/collect_all_reduce.py an
#: all-reduce of ``[size / 4096, 4096]`` bf16 values as ``"message_size": size``
ELEMENT_BYTES = {"half": 2, "bfloat16": 2, "int8": 1}


def _collective_cost(kind: str, p: int, elements, element_bytes: int = 2) -> Cost:
    # the rule prices t tokens × 1 value × 2 B (bf16): an element of element_bytes is element_bytes / 2 tokens
    return op_cost(Communication(kind, "table", 1, p), None, _BARE, Fraction(elements) * element_bytes / 2)


def bytes_per_message_byte(kind: str, p: int) -> Fraction:
    """What one byte of a collective's buffer puts on the links per GPU (the rule's own wire factor)."""
    return Fraction(_collective_cost(kind, p, 1).total_comm) / 2


def all_to_all_cost(dim: int, copies: int, payload: str, p: int, t) -> Cost:
    """Per-GPU link bytes of ``t`` tokens' ``copies`` rows of ``dim`` values sent over ``p`` ranks, evenly spread."""
    return op_cost(Communication("all_to_all", "table", dim, p, payload, copies), None, _BARE, t)


def deepep_sol(c: dict, hw: Hardware, payload: str) -> float:
    """A DeepEP dispatch (FP8) or combine (bf16) row: ``num_token`` tokens per rank, top-k copies each,
    over ``node_num`` nodes of ``hw.gpus_per_node`` ranks."""
    p = int(c["node_num"]) * hw.gpus_per_node
    return _seconds(all_to_all_cost(int(c["hidden_size"]), int(c["num_topk"]), payload, p, c["num_token"]), hw)


def collective_sol(c: dict, hw: Hardware) -> float:
    """A collective of a ``message_size``-element buffer over ``num_gpus`` (custom all-reduce or NCCL rows)."""
    kind = COLLECTIVES[c.get("op_name", "all_reduce")]
    size = ELEMENT_BYTES[c.get("nccl_dtype", c.get("allreduce_dtype", "half"))]
    return _seconds(_collective_cost(kind, int(c["num_gpus"]), c["message_size"], size), hw)
