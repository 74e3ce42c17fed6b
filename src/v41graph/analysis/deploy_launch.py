"""Launch lines for a deployment pick: SGLang's and vLLM's, one per instance, whose GPUs add up to the plan.

**SGLang** (``python -m sglang.launch_server``): ``--tp T`` is the instance's GPUs, ``--ep E``
(``--enable-ep-moe`` on older releases), ``--dp D --enable-dp-attention`` for DP attention (inside the
TP group: it adds no GPUs — the mistake that makes some tools' launch files ask for 4–8× the plan),
``--moe-a2a-backend deepep`` with EP (the collectives were priced as DeepEP's dispatch/combine, the
plan's ``moe_a2a`` default; SGLang's own default is ``none``: costs/measured/collectives.py),
``--max-running-requests``, ``--chunked-prefill-size``, ``--enable-decoder-swa-bounded-replay`` for
V4.1's decoder replay (reference/kv-pool-facts.md §2, VERIFIED hook string),
``--disable-overlap-schedule`` when the search priced engines without SGLang's overlap scheduler
(``deploy --disable-overlap-schedule``; the default prices it on, as SGLang runs) and, disaggregated,
``--disaggregation-mode prefill|decode`` (Mooncake and NIXL are the transfer backends exercised
for V4.1, §5; the lines leave SGLang's choice). GPUs = Σ ``--tp`` (:func:`launch_gpus`).

**vLLM** (``vllm serve``), which serves V4 (``vllm/model_executor/models/deepseek_v4.py``) and V4.1
(``vllm/models/deepseek_v4_1/``; reference/sharding-facts.md [V4], [VE]): vLLM's data parallelism
replicates attention per DP rank and, with ``--enable-expert-parallel``, spreads the experts over
all TP × DP GPUs (docs.vllm.ai serving/data_parallel_deployment, serving/expert_parallel_deployment;
the DeepSeek recipe's ``--data-parallel-size 8 --enable-expert-parallel`` on 8 × H200). So SGLang's
``--tp T --dp T --enable-dp-attention --ep T`` is vLLM's ``--tensor-parallel-size 1
--data-parallel-size T --enable-expert-parallel``, and ``--tp T --ep T`` is ``--tensor-parallel-size
T --enable-expert-parallel``. ``--max-num-seqs`` is the cap, ``--max-num-batched-tokens`` the chunk
(vLLM V1 always chunks prefill; kv-pool-facts §3). Disaggregated: ``--kv-transfer-config`` with the
``NixlConnector`` (``kv_role`` ``kv_both`` as in vLLM's NIXL examples; a proxy routes prompts to the
prefill engines). GPUs = Σ tensor × data parallel size (:func:`vllm_gpus`). The figures beside a
pick are SGLang's scheduler's, its token emission included (one step late under the overlap
scheduler); the vLLM lines launch the same mapping and are not priced as a vLLM scheduler.

Flags not written, because no engine flag for them was found in the reference sheets: Engram
residency (vLLM's Engram defaults to host memory, ``cpu_offload=True`` [VE]; SGLang's Engram was not
found) and DSpark's verify length; :func:`knob_notes` says so beside the lines.

The model both engines load is the checkpoint's Hugging Face id (``--model-path`` / ``vllm serve``):
the one the GPU runs (model/checkpoints.py; ``deploy`` passes ``ModelSpec.checkpoint``, the
config's name only where the id is unknown, a config.json given by path).

>>> from v41graph.analysis.deploy_space import EngineMapping, Instance
>>> fp8 = "sgl-project/DeepSeek-V4-Flash-FP8"
>>> lines = launch_flags("aggregated", (Instance(EngineMapping(8, 8, 8), 64, 8192), 2), fp8)
>>> lines[0].split(" --model-path ")[1].split(" --max")[0]
'sgl-project/DeepSeek-V4-Flash-FP8 --tp 8 --ep 8 --moe-a2a-backend deepep --dp 8 --enable-dp-attention'
>>> launch_gpus(lines)
16
>>> v = vllm_flags("aggregated", (Instance(EngineMapping(8, 8, 8), 64, 8192), 2), fp8)
>>> v[0].split(" --max")[0]
'vllm serve sgl-project/DeepSeek-V4-Flash-FP8 --tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel'
>>> vllm_gpus(v)
16
"""

from __future__ import annotations

import re

from .deploy_space import Instance

#: vLLM's KV connector for disaggregated prefill (docs.vllm.ai features/nixl_connector_usage)
VLLM_KV_TRANSFER = '\'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\''


def _instances(mode: str, parts) -> list[tuple[Instance, str | None, int]]:
    """(instance, role, port) per engine: aggregated ports 30000…, prefill 30000…, decode 31000…"""
    if mode == "aggregated":
        inst, r = parts
        return [(inst, None, 30000 + i) for i in range(r)]
    pre, x, dec, y = parts
    return [(pre, "prefill", 30000 + i) for i in range(x)] + [(dec, "decode", 31000 + i) for i in range(y)]


def _sglang(inst: Instance, model: str, role: str | None, port: int) -> str:
    e = inst.engine
    flags = [f"--model-path {model}", f"--tp {e.tp}"]
    if e.ep > 1:  # the EP collectives were priced as DeepEP's (the plan's moe_a2a default), not SGLang's none
        flags.append(f"--ep {e.ep} --moe-a2a-backend deepep")
    if e.attn_dp > 1:
        flags.append(f"--dp {e.attn_dp} --enable-dp-attention")
    if role != "prefill":
        flags.append(f"--max-running-requests {inst.cap}")
    flags.append(f"--chunked-prefill-size {inst.chunk}")
    if inst.mixed:  # priced with prefill chunks riding the decode batch (vLLM V1 schedules so by default)
        flags.append("--enable-mixed-chunk")
    if inst.replay == "bounded":
        flags.append("--enable-decoder-swa-bounded-replay")
    if not inst.overlap:
        flags.append("--disable-overlap-schedule")
    if role:
        flags.append(f"--disaggregation-mode {role}")
    return "python -m sglang.launch_server " + " ".join(flags) + f" --port {port}"


def _vllm(inst: Instance, model: str, role: str | None, port: int) -> str:
    e = inst.engine
    flags = [f"vllm serve {model}", f"--tensor-parallel-size {e.tp // e.attn_dp}"]
    if e.attn_dp > 1:
        flags.append(f"--data-parallel-size {e.attn_dp}")
    if e.ep > 1:
        flags.append("--enable-expert-parallel")
    if role != "prefill":
        flags.append(f"--max-num-seqs {inst.cap}")
    flags.append(f"--max-num-batched-tokens {inst.chunk}")
    if role:
        flags.append(f"--kv-transfer-config {VLLM_KV_TRANSFER}")
    return " ".join(flags) + f" --port {port}"


def launch_flags(mode: str, parts, model: str) -> list[str]:
    """One SGLang command line per instance (see the module doc)."""
    return [_sglang(i, model, role, port) for i, role, port in _instances(mode, parts)]


def vllm_flags(mode: str, parts, model: str) -> list[str]:
    """One vLLM command line per instance (see the module doc)."""
    return [_vllm(i, model, role, port) for i, role, port in _instances(mode, parts)]


def launch_gpus(lines: list[str]) -> int:
    """GPUs SGLang lines ask for: Σ --tp (DP attention and EP live inside the TP group)."""
    return sum(int(re.search(r"--tp (\d+)", line).group(1)) for line in lines)


def vllm_gpus(lines: list[str]) -> int:
    """GPUs vLLM lines ask for: Σ tensor-parallel × data-parallel size (data parallel 1 when absent)."""
    total = 0
    for line in lines:
        dp = re.search(r"--data-parallel-size (\d+)", line)
        total += int(re.search(r"--tensor-parallel-size (\d+)", line).group(1)) * (int(dp.group(1)) if dp else 1)
    return total


def knob_notes(mode: str, parts) -> list[str]:
    """What the lines cannot say: V4.1 knobs with no engine flag found (see the module doc)."""
    insts = [parts[0]] if mode == "aggregated" else [parts[0], parts[2]]
    notes = []
    if any(i.engram == "host" for i in insts):
        notes.append("Engram tables in host memory: vLLM's default (cpu_offload); no SGLang flag found")
    if any(i.verify for i in insts):
        notes.append(f"DSpark verifying {max(i.verify for i in insts)} drafted tokens per decode step: no engine "
                     f"flag found in the reference sheets")
    return notes
