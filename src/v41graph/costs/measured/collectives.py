"""Collectives as SGLang runs them: per collective of a step, the algorithm the engine takes at that
message size and the measured table that times it (OP and hybrid modes).

* **All-reduce** (attention ``wo_b`` over attn-TP, the MoE output without an all-to-all backend, the
  vocab-parallel embedding): SGLang's ``tensor_model_parallel_all_reduce`` runs its custom all-reduce
  when ``should_custom_ar`` holds — 2, 4, 6 or 8 fully NVLinked GPUs and ``inp_size < max_size``,
  ``max_size = 8192 * 1024`` bytes — and NCCL otherwise ([CAR]). AIConfigurator's SGLang collector
  times that very call (``tensor_model_parallel_all_reduce`` in collector/collect_all_reduce.py), so
  ``custom_allreduce_perf`` holds both regimes: its ``sglang_graph`` rows are the call captured in a
  CUDA graph — SGLang's graph runner takes decode and target-verify batches ([FB]
  ``ForwardMode.is_cuda_graph``), not extends — its ``sglang_eager`` rows the call outside one (prefill).
  A group of another size, or across NVLink domains, reads NCCL's ``all_reduce`` rows.
* **All-gather / reduce-scatter** (the DP gather, the attention-TP gather after a DeepEP MoE, Engram
  rows): NCCL's rows of that collective.
* **EP dispatch / combine** under DeepEP: ``--deepep-mode auto`` resolves to ``normal`` for a batch
  with an extend (prefill) and ``low_latency`` otherwise ([MU] ``DeepEPMode.resolve``); the wide-EP
  tables time each at the tokens one rank sends, normal mode at DeepEP's default 20 SMs ([DE]
  ``Buffer.num_sms = 20``), and the busiest EP rank's load over the mean scales the time. Where no
  DeepEP table answers (the vendored slice has none; EP over other than whole nodes), NCCL's
  all-to-all rows stand in as a ``transfer:op``.

Sizes: these tables count elements, not bytes (:data:`.boundaries.ELEMENT_BYTES`). Sources:
[CAR] sgl-project/sglang ``python/sglang/srt/distributed/device_communicators/custom_all_reduce.py``;
[MU] sgl-project/sglang ``python/sglang/srt/layers/moe/utils.py``; [FB] sgl-project/sglang
``python/sglang/srt/model_executor/forward_batch_info.py``; [DE] deepseek-ai/DeepEP
``deep_ep/buffer.py``; ai-dynamo/aiconfigurator ``collector/collect_all_reduce.py``,
``collector/collect_nccl.py``, ``collector/deep_collector/``.

>>> custom_all_reduce(8, 8), custom_all_reduce(16, 8), custom_all_reduce(3, 8)
(True, False, False)
>>> deepep_mode(True), deepep_mode(False)
('ll', 'normal')
"""

from __future__ import annotations

from fractions import Fraction

from ...ir.routing import decode_step
from ...model.sharding import mapping_of, rule_for_node
from ..node import Covered
from . import boundaries as B
from .tables import ALL_REDUCE, DEEPEP, NCCL
from .tiers import Part

#: SGLang's CustomAllreduce._SUPPORTED_WORLD_SIZES [CAR]
CUSTOM_AR_WORLD_SIZES = (2, 4, 6, 8)
#: DeepEP's default SM budget for normal-mode kernels [DE]
DEEPEP_SMS = 20


def custom_all_reduce(ranks: int, gpus_per_node: int) -> bool:
    """Whether SGLang's all-reduce over ``ranks`` GPUs can take its custom kernel (one NVLink domain)."""
    return ranks in CUSTOM_AR_WORLD_SIZES and ranks <= gpus_per_node


def deepep_mode(decode: bool) -> str:
    """DeepEP's mode under ``--deepep-mode auto``: low-latency for a decode-only batch, else normal."""
    return "ll" if decode else "normal"


def price_collective(pricer, what: str, item: Covered, elements) -> Part:
    """``item`` (a Communication) of ``elements`` table elements, priced as the engine runs it."""
    op, p, hw = item.op, item.op.ranks, pricer.hw
    if op.purpose in ("dispatch", "combine"):
        return _deepep(pricer, what, item, elements)
    sol = lambda c: B.collective_sol(c, hw)  # noqa: E731
    if op.collective == "all_reduce" and custom_all_reduce(p, hw.gpus_per_node):
        backend = "sglang_graph" if decode_step(pricer.plan) else "sglang_eager"
        return pricer._lookup(what, ALL_REDUCE, {"allreduce_dtype": "bfloat16", "num_gpus": p, "backend": backend},
                              {"message_size": elements}, sol, tag=("collective",))
    return _nccl(pricer, what, op.collective, p, elements)


def _nccl(pricer, what, collective: str, p: int, elements) -> Part:
    name = next(k for k, v in B.COLLECTIVES.items() if v == collective)
    return pricer._lookup(what, NCCL, {"op_name": name, "nccl_dtype": "half", "num_gpus": p},
                          {"message_size": elements}, lambda c: B.collective_sol(c, pricer.hw), tag=("collective",))


def _deepep(pricer, what, item: Covered, elements) -> Part:
    op, hw, plan = item.op, pricer.hw, pricer.plan
    mode = deepep_mode(decode_step(plan))
    spec = DEEPEP[(mode, op.purpose)]
    # the tokens one rank sends: the node's tokens over the attention group they were scattered across
    t = Fraction(item.tokens) / mapping_of(plan).token_divisor(rule_for_node(item.member, op))
    key = {"hidden_size": op.dim, "num_topk": op.copies, "num_experts": pricer.model.n_routed_experts,
           "node_num": op.ranks // hw.gpus_per_node}
    if mode == "normal":
        key[f"{op.purpose}_sms"] = DEEPEP_SMS
    part = None
    if op.ranks % hw.gpus_per_node == 0 and t > 0:
        sol = lambda c: B.deepep_sol(c, hw, op.payload)  # noqa: E731
        point = {"num_token": int(t) if t.denominator == 1 else float(t)}
        part = pricer._lookup(what, spec, key, point, sol, tag=("deepep", op.payload))
    if part is not None and part.tier != "sol":
        # the busiest rank moves `imbalance` times the mean rank's rows (costs/rules.py)
        even = B.all_to_all_cost(op.dim, op.copies, op.payload, op.ranks, t).total_comm
        imbalance = Fraction(item.cost.total_comm) / even if even else 1
        return Part(what, part.tier, part.time * float(imbalance), part.sol * float(imbalance), part.table,
                    part.coords, part.distance)
    stand_in = _nccl(pricer, what, op.collective, op.ranks, elements)
    if pricer.mode.allows("op") and stand_in.tier != "sol":
        return Part(what, "transfer:op", stand_in.time, stand_in.sol, stand_in.table, stand_in.coords,
                    stand_in.distance)
    return Part(what, "sol", 0.0, 0.0, spec.path, tuple({**key, "num_token": float(t)}.items()))
