"""Storage tiers a prefix cache lives in: HBM, host DRAM, SSD or remote store.

A hardware file may carry ``"storage_tiers"``: per tier a per-GPU ``bandwidth`` (bytes/s, per
direction, into this GPU) and a ``latency_ns`` (the fixed cost of one fetch), each with a source
under ``"sources"`` keyed ``"storage_tiers.<tier>.<figure>"``. HBM is always present: a hit
there costs nothing to fetch.

>>> from v41graph.costs.hardware import load_hardware
>>> t = load_hardware("h200_sxm").tier("host_dram")
>>> t.bandwidth, t.latency_ns
(64000000000, 10000)
>>> t.fetch_s(64_000_000)                  # 1 ms of PCIe + 10 µs latency
0.00101
>>> load_hardware("h200_sxm").tier("hbm").fetch_s(10**9)
0.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import CostError

#: tiers from fastest to slowest; "hbm" is implicit (already on the GPU)
TIERS = ("hbm", "host_dram", "ssd", "remote")
_FIELDS = ("bandwidth", "latency_ns")


@dataclass(frozen=True)
class StorageTier:
    """Where a cached prefix waits: bandwidth into one GPU and the latency of one fetch."""

    name: str
    bandwidth: int | None   # bytes/s; None for HBM (no fetch)
    latency_ns: int

    def fetch_s(self, nbytes: int) -> float:
        """Seconds to bring ``nbytes`` from this tier into HBM: latency + bytes / bandwidth."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise CostError(f"fetch bytes: must be a non-negative integer, got {nbytes!r}")
        if self.bandwidth is None or nbytes == 0:
            return 0.0
        return self.latency_ns * 1e-9 + nbytes / self.bandwidth


HBM = StorageTier("hbm", None, 0)


def parse_tiers(data, origin: str) -> dict[str, StorageTier]:
    """Validate ``storage_tiers`` of a hardware file; returns the tiers by name (HBM included)."""
    if not isinstance(data, Mapping):
        raise CostError(f"{origin}: key 'storage_tiers' must be an object, got {data!r}")
    tiers = {"hbm": HBM}
    for name, figures in sorted(data.items()):
        if name not in TIERS or name == "hbm":
            raise CostError(f"{origin}: unknown storage tier {name!r} (known: {', '.join(TIERS[1:])})")
        if not isinstance(figures, Mapping) or sorted(figures) != sorted(_FIELDS):
            raise CostError(f"{origin}: storage_tiers.{name} must have exactly {', '.join(_FIELDS)}, got {figures!r}")
        for key in _FIELDS:
            v = figures[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key == "bandwidth" else 0):
                raise CostError(f"{origin}: storage_tiers.{name}.{key} must be a "
                                f"{'positive' if key == 'bandwidth' else 'non-negative'} integer, got {v!r}")
        tiers[name] = StorageTier(name, figures["bandwidth"], figures["latency_ns"])
    return tiers


def tier_source_keys(data) -> set[str]:
    """The ``sources`` keys a ``storage_tiers`` object needs."""
    return {f"storage_tiers.{name}.{key}" for name in data for key in _FIELDS}
