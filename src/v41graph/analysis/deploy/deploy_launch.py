"""Launch lines for a deployment pick that start as printed: SGLang's and vLLM's, one per engine and
host, each engine on its own GPUs, and the router in front.

Every SGLang flag below is a full name from SGLang 0.5.23's server parser
(``reference/sglang-0.5.23-server-flags.txt``; tests/test_deploy.py parses every printed line against
it): argparse prefixes such as ``--tp`` work today only by ``allow_abbrev``, and the deprecated
``--enable-dp-attention`` (+ ``--dp-size``; "remove after 2026-12-31") is replaced by ``--attn-dp-size``.

**SGLang** (``python -m sglang.launch_server``): ``--model-path`` the checkpoint's Hugging Face id
(model/checkpoints.py; ``deploy`` passes ``ModelSpec.checkpoint``, the config's name only for a
config.json given by path); ``--tp-size T`` the engine's GPUs; ``--attn-dp-size D`` its attention
groups inside the TP group (any D | T; it adds no GPUs); ``--ep-size E``. With E = T the lines add
``--moe-a2a-backend deepep`` (the collectives were priced as DeepEP's dispatch/combine, the plan's
``moe_a2a`` default; SGLang's own default is ``none``); with 1 < E < T they cannot, because SGLang's
DeepEP backend spans the TP group (it sets ``ep_size = tp_size``), so the engine runs the default
backend and a note says so. Then ``--max-running-requests`` (not on a prefill engine; engine-wide, SGLang
gives each attention-DP rank cap / D, as the search priced it), ``--chunked-prefill-size`` as the chunk × D:
under attention DP SGLang divides the flag by D ("DP attention is enabled. The chunked prefill size is
adjusted to …", ``server_args.py``), and the simulation priced a prompt's piece of up to one chunk on its
rank, so each rank must keep the whole chunk; then, on V4.1 ``--enable-decoder-swa-bounded-replay`` or
``--no-enable-decoder-swa-bounded-replay`` (on by default where supported, so "off" is said) and
DSpark as ``--speculative-algorithm DSPARK --speculative-dspark-block-size k`` (k drafts verified a
step: the verify window is k + 1, as the flag sheet says), ``--disable-overlap-schedule`` when the
search priced engines without SGLang's overlap scheduler.

**Placement** (:mod:`.deploy_hosts`): engines are packed onto hosts of :func:`~.deploy_hosts.host_gpus` GPUs, largest first, each on
disjoint GPUs of one host (``--base-gpu-id``); an engine larger than a host spans whole hosts
(``--nnodes``, ``--node-rank``, ``--dist-init-addr`` on its first host), one line per host. Hosts
are named ``node0``, ``node1``, …; each line ends in a shell comment naming its host. Ports:
the k-th engine of a host listens on 30000 + 2000 k, because an engine takes ports above its own
— NCCL's at port + 100…1000 and, under DP attention, ZMQ's from port + 234 — and 2000 apart they
never reach the next engine's (SGLang ``PortArgs.init_new``).

**Disaggregated**: ``--disaggregation-mode prefill|decode``, ``--disaggregation-transfer-backend
mooncake`` (SGLang's default, named so the line says which; NIXL is the other backend exercised for
V4.1, reference/kv-pool-facts.md §5), each prefill engine its own ``--disaggregation-bootstrap-port``
(8998, SGLang's default, then 8999, …), and the router first (sglang-router, a separate package):
``python -m sglang_router.launch_router --pd-disaggregation --prefill URL BOOTSTRAP_PORT … --decode
URL …``. Aggregated replicas get the router's ``--worker-urls`` form. Both route round-robin, as the
simulation deals the arrivals, and listen on port 8000 of ``node0``.

A knob no SGLang flag expresses — Engram tables in host memory (vLLM's default, ``cpu_offload=True``
[VE]; no SGLang 0.5.23 flag: the ``--ple-offload-*`` flags are another model's) — is in
:data:`~.deploy_space.UNLAUNCHABLE`: ``deploy`` searches it only with ``--allow-unlaunchable``, and then every
line of such an engine ends by saying what is missing (:func:`missing`).

**vLLM** (``vllm serve``), which serves V4 and V4.1 (reference/sharding-facts.md [V4], [VE]):
``CUDA_VISIBLE_DEVICES`` places each engine; vLLM's data parallelism replicates attention per DP
rank and, with ``--enable-expert-parallel``, spreads the experts over all TP × DP GPUs. So SGLang's
``--tp-size T --attn-dp-size D`` is vLLM's ``--tensor-parallel-size T/D --data-parallel-size D``;
EP over fewer GPUs than the engine has no vLLM flag (a note says so). ``--max-num-seqs`` is the cap,
``--max-num-batched-tokens`` the chunk (vLLM V1 always chunks prefill; kv-pool-facts §3).
Disaggregated: ``--kv-transfer-config`` with the ``NixlConnector`` (a proxy routes prompts to the
prefill engines). An engine across hosts runs its data-parallel ranks per host
(``--data-parallel-size-local``, ``--data-parallel-start-rank``, ``--data-parallel-address``,
``--data-parallel-rpc-port``, ``--headless`` past the first), which needs T/D ≤ a host's GPUs. The
figures beside a pick are SGLang's scheduler's; the vLLM lines launch the same mapping and are not
priced as a vLLM scheduler.

>>> from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance
>>> fp8 = "sgl-project/DeepSeek-V4-Flash-FP8"
>>> lines = launch_flags("aggregated", (Instance(EngineMapping(4, 2, 4), 64, 8192), 2), fp8)
>>> print(lines[0])
python -m sglang_router.launch_router --worker-urls http://node0:30000 http://node0:32000 --policy round_robin --host 0.0.0.0 --port 8000  # node0
>>> print(lines[2].split(" --max")[0].split(fp8)[1], "…", lines[2].split("--chunked-prefill-size 16384 ")[1])
 --tp-size 4 --attn-dp-size 2 --ep-size 4 --moe-a2a-backend deepep … --base-gpu-id 4 --host 0.0.0.0 --port 32000  # node0
>>> launch_gpus(lines)
8
>>> v = vllm_flags("aggregated", (Instance(EngineMapping(4, 2, 4), 64, 8192), 2), fp8)
>>> v[1].split(" --max")[0]
'CUDA_VISIBLE_DEVICES=4,5,6,7 vllm serve sgl-project/DeepSeek-V4-Flash-FP8 --tensor-parallel-size 2 --data-parallel-size 2 --enable-expert-parallel'
>>> vllm_gpus(v)
8
"""  # noqa: E501  (doctest output lines are whole command lines)

from __future__ import annotations

import re

from .deploy_hosts import ROUTER_PORT, Slot, host_gpus, place  # noqa: F401  (host_gpus re-exported)
from .deploy_space import UNLAUNCHABLE, Instance



#: the KV transfer backend the PD lines name (SGLang's default; nixl also serves V4.1)
TRANSFER_BACKEND = "mooncake"
#: vLLM's KV connector for disaggregated prefill (docs.vllm.ai features/nixl_connector_usage)
VLLM_KV_TRANSFER = '\'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\''


def missing(inst: Instance) -> list[str]:
    """What no engine flag of the SGLang line can say for ``inst`` (:data:`~.deploy_space.UNLAUNCHABLE`)."""
    return [UNLAUNCHABLE["engram"][inst.engram]] if inst.engram in UNLAUNCHABLE["engram"] else []


def _url(s: Slot) -> str:
    return f"http://node{s.node}:{s.port}"


def _router(mode: str, slots: list[Slot]) -> list[str]:
    tail = f"--policy round_robin --host 0.0.0.0 --port {ROUTER_PORT}  # node0"
    if mode == "aggregated":
        if len(slots) == 1:
            return []
        return ["python -m sglang_router.launch_router --worker-urls " + " ".join(_url(s) for s in slots) + " " + tail]
    prefill = " ".join(f"--prefill {_url(s)} {s.bootstrap}" for s in slots if s.role == "prefill")
    decode = " ".join(f"--decode {_url(s)}" for s in slots if s.role == "decode")
    return [f"python -m sglang_router.launch_router --pd-disaggregation {prefill} {decode} {tail}"]


def _comment(s: Slot, rank: int) -> str:
    where = f"node{s.node + rank}" + (f" (rank {rank} of {s.nodes})" if s.nodes > 1 else "")
    gaps = missing(s.inst)
    return f"  # {where}" + (f"; missing: {'; '.join(gaps)}" if gaps else "")


def _sglang(s: Slot, model: str, replay_flag: bool) -> list[str]:
    flags = _sglang_parallel(s.inst.engine, model) + _sglang_engine(s, replay_flag)
    lines = []
    for rank in range(s.nodes):
        multi = (f" --nnodes {s.nodes} --node-rank {rank} --dist-init-addr node{s.node}:{s.port - 500}"
                 if s.nodes > 1 else "")
        lines.append("python -m sglang.launch_server " + " ".join(flags) + multi +
                     f" --base-gpu-id {s.gpu} --host 0.0.0.0 --port {s.port}" + _comment(s, rank))
    return lines


def _sglang_parallel(e, model: str) -> list[str]:
    """The model and how an SGLang engine spreads it over its GPUs."""
    flags = [f"--model-path {model}", f"--tp-size {e.tp}"]
    if e.attn_dp > 1:
        flags.append(f"--attn-dp-size {e.attn_dp}")
    if e.ep > 1:  # DeepEP (the priced a2a) only where it spans the TP group, as SGLang requires
        flags.append(f"--ep-size {e.ep}" + (" --moe-a2a-backend deepep" if e.ep == e.tp else ""))
    return flags


def _sglang_engine(s: Slot, replay_flag: bool) -> list[str]:
    """How an SGLang engine schedules (batch, chunk, V4.1 knobs) and, disaggregated, its role."""
    inst, flags = s.inst, []
    if s.role != "prefill":
        flags.append(f"--max-running-requests {inst.cap}")
    flags.append(f"--chunked-prefill-size {inst.chunk * inst.engine.attn_dp}")  # SGLang divides it by the DP ranks
    if inst.mixed and s.role is None:  # priced with prefill chunks riding the decode batch (aggregated engines)
        flags.append("--enable-mixed-chunk")
    if replay_flag:  # V4.1: on by default where supported, so off is said too
        flags.append(("--enable" if inst.replay == "bounded" else "--no-enable") + "-decoder-swa-bounded-replay")
    if inst.verify and s.role != "prefill":
        flags.append(f"--speculative-algorithm DSPARK --speculative-dspark-block-size {inst.verify}")
    if not inst.overlap:
        flags.append("--disable-overlap-schedule")
    if s.role:
        flags.append(f"--disaggregation-mode {s.role} --disaggregation-transfer-backend {TRANSFER_BACKEND}")
    if s.bootstrap is not None:
        flags.append(f"--disaggregation-bootstrap-port {s.bootstrap}")
    return flags


def _vllm(s: Slot, model: str) -> list[str]:
    inst, e = s.inst, s.inst.engine
    tp, local = e.tp // e.attn_dp, e.gpus // s.nodes
    flags = [f"vllm serve {model}", f"--tensor-parallel-size {tp}"]
    if e.attn_dp > 1:
        flags.append(f"--data-parallel-size {e.attn_dp}")
    if e.ep > 1:
        flags.append("--enable-expert-parallel")
    if s.role != "prefill":
        flags.append(f"--max-num-seqs {inst.cap}")
    flags.append(f"--max-num-batched-tokens {inst.chunk}")
    if s.role:
        flags.append(f"--kv-transfer-config {VLLM_KV_TRANSFER}")
    gpus = ",".join(map(str, s.gpus_on(s.node)))
    lines = []
    for rank in range(s.nodes):
        multi = ""
        if s.nodes > 1:  # data-parallel ranks per host; the first host runs the API server
            per = local // tp
            multi = (f" --data-parallel-size-local {per} --data-parallel-start-rank {rank * per} "
                     f"--data-parallel-address node{s.node} --data-parallel-rpc-port {s.port - 500}" +
                     (" --headless" if rank else ""))
        lines.append(f"CUDA_VISIBLE_DEVICES={gpus} " + " ".join(flags) + multi + f" --port {s.port}" +
                     _comment(s, rank))
    return lines


def launch_flags(mode: str, parts, model: str, host: int = 8, replay_flag: bool | None = None) -> list[str]:
    """The router line (several engines) then one SGLang line per engine and host (see the module doc);
    ``host``: GPUs per host (:func:`host_gpus`); ``replay_flag``: write the decoder-replay flag (V4.1;
    None: when an engine runs bounded replay)."""
    slots = place(mode, parts, host)
    if replay_flag is None:
        replay_flag = any(s.inst.replay == "bounded" for s in slots)
    return _router(mode, slots) + [line for s in slots for line in _sglang(s, model, replay_flag)]


def vllm_flags(mode: str, parts, model: str, host: int = 8) -> list[str]:
    """One vLLM command line per engine and host (see the module doc)."""
    return [line for s in place(mode, parts, host) for line in _vllm(s, model)]


def _server_lines(lines: list[str], marker: str) -> list[str]:
    return [line for line in lines if marker in line]


def launch_gpus(lines: list[str]) -> int:
    """GPUs SGLang lines ask for: Σ --tp-size / --nnodes over the server lines (DP attention and EP
    live inside the TP group; an engine across hosts has one line per host)."""
    total = 0
    for line in _server_lines(lines, "sglang.launch_server"):
        nodes = re.search(r"--nnodes (\d+)", line)
        total += int(re.search(r"--tp-size (\d+)", line).group(1)) // (int(nodes.group(1)) if nodes else 1)
    return total


def vllm_gpus(lines: list[str]) -> int:
    """GPUs vLLM lines ask for: the devices each line makes visible."""
    return sum(len(re.match(r"CUDA_VISIBLE_DEVICES=([\d,]+) ", line).group(1).split(","))
               for line in _server_lines(lines, "vllm serve"))


def knob_notes(mode: str, parts) -> list[str]:
    """What the lines say only in words: knobs no flag expresses, mappings a backend cannot run as priced."""
    insts = [parts[0]] if mode == "aggregated" else [parts[0], parts[2]]
    notes = [f"{gap}: the lines run without it; the pick was searched with --allow-unlaunchable"
             for gap in dict.fromkeys(g for i in insts for g in missing(i))]
    if mode == "disaggregated":
        notes.append(f"KV transfer backend: {TRANSFER_BACKEND} (SGLang's default; nixl also serves V4.1); the "
                     "router (sglang-router) goes first")
    split = sorted({(i.engine.ep, i.engine.tp) for i in insts if 1 < i.engine.ep < i.engine.tp})
    for ep, tp in split:
        notes.append(f"EP {ep} < TP {tp}: SGLang's DeepEP backend spans the TP group, so this engine runs the "
                     f"default all-to-all backend (none); vLLM's --enable-expert-parallel spreads the experts "
                     f"over all {tp} GPUs, not {ep}")
    if any(i.verify for i in insts):
        k = max(i.verify for i in insts)
        notes.append(f"DSpark verifies {k} drafted tokens a step (--speculative-dspark-block-size {k}: a verify "
                     f"window of {k + 1}); vLLM's DSpark flags were not found in the reference sheets")
    return notes
