"""Where a deployment's engines run: hosts of a GPU's size, each engine on disjoint GPUs of one host (or whole
hosts of its own), its port and, for a prefill engine, its bootstrap port (:mod:`.deploy_launch` writes the lines).
"""

from __future__ import annotations

from dataclasses import dataclass

from .deploy_space import Instance

#: GPUs of one host (one OS, one CUDA device numbering) where it differs from the hardware file's
#: ``gpus_per_node`` (the NVLink domain): a GB200/GB300 NVL72 compute tray holds 4 GPUs of the 72
#: (NVIDIA's NVL72 enterprise reference architecture, cited in data/hardware/gb200.json). HGX boards
#: (h200_sxm, b200_sxm) are 8-GPU hosts, their NVLink domain. The one place this is assumed.
HOST_GPUS = {"gb200": 4, "gb300": 4}
#: the router's port, and the first engine port of a host (the k-th engine: + PORT_STRIDE · k)
ROUTER_PORT, FIRST_PORT, PORT_STRIDE = 8000, 30000, 2000
#: SGLang's default bootstrap port: the first prefill engine's (the next ones count up)
BOOTSTRAP_PORT = 8998


def host_gpus(hardware) -> int:
    """GPUs one host holds (:data:`HOST_GPUS`, else the hardware's NVLink domain).

    >>> from v41graph.costs.hardware import load_hardware
    >>> host_gpus(load_hardware("h200_sxm")), host_gpus(load_hardware("gb300"))
    (8, 4)
    """
    return HOST_GPUS.get(hardware.name, hardware.gpus_per_node)


@dataclass(frozen=True)
class Slot:
    """One engine placed: its role (None: aggregated), first host, first GPU there, hosts spanned, port."""

    inst: Instance
    role: str | None
    node: int
    gpu: int
    nodes: int
    port: int
    bootstrap: int | None = None

    def gpus_on(self, host: int) -> range:
        """The GPUs this engine takes on its host ``host`` (empty when it is not there)."""
        if not self.node <= host < self.node + self.nodes:
            return range(0)
        return range(self.gpu, self.gpu + self.inst.engine.gpus // self.nodes)


def place(mode: str, parts, host: int = 8) -> list[Slot]:
    """The engines of a deployment on hosts of ``host`` GPUs: prefill engines first, then decode (or
    the replicas), packed largest first onto disjoint GPUs; an engine larger than a host takes whole
    hosts. Sizes that are powers of two dividing the host pack with no gap.

    >>> from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance
    >>> pd = (Instance(EngineMapping(2), 1, 8192), 2, Instance(EngineMapping(4, 4, 4), 64, 8192), 1)
    >>> [(s.role, s.node, s.gpu, s.port, s.bootstrap) for s in place("disaggregated", pd)]
    [('prefill', 0, 4, 32000, 8998), ('prefill', 0, 6, 34000, 8999), ('decode', 0, 0, 30000, None)]
    """
    engines = ([(parts[0], None)] * parts[1] if mode == "aggregated" else
               [(parts[0], "prefill")] * parts[1] + [(parts[2], "decode")] * parts[3])
    used: list[int] = []  # GPUs taken on each host so far
    where: dict[int, tuple[int, int, int]] = {}
    for i in sorted(range(len(engines)), key=lambda i: -engines[i][0].engine.gpus):  # stable: listing order
        g = engines[i][0].engine.gpus
        if g > host:  # whole hosts of its own
            where[i] = (len(used), 0, -(-g // host))
            used += [host] * where[i][2]
            continue
        h = next((h for h, n in enumerate(used) if host - n >= g), None)
        if h is None:
            h = len(used)
            used.append(0)
        where[i] = (h, used[h], 1)
        used[h] += g
    slots, on_host, boot = [], {}, BOOTSTRAP_PORT
    for i in sorted(range(len(engines)), key=lambda i: where[i][:2]):  # ports count up along each host
        node, gpu, nodes = where[i]
        k = on_host[node] = on_host.get(node, -1) + 1
        inst, role = engines[i]
        slots.append((i, Slot(inst, role, node, gpu, nodes, FIRST_PORT + PORT_STRIDE * k,
                              boot if role == "prefill" else None)))
        boot += role == "prefill"
    return [s for _, s in sorted(slots, key=lambda t: t[0])]
