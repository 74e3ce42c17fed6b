"""Hardware descriptions: per-GPU peaks per precision, HBM, and link bandwidths.

A description is a JSON file (built-ins live in ``data/hardware/``; a user passes a path, or
registers a :class:`Hardware` by name in the current session: :func:`register_hardware`). All
figures are per GPU and exact integers: peaks in dense FLOP/s (no 2:4 sparsity), bandwidths in
bytes/s **per direction**, capacity in bytes. ``fp32`` is the non-tensor (CUDA-core) rate.
Every figure carries a source line under ``"sources"``, keyed ``"peak_flops.<precision>"`` or
by the field name, so a number in a report can always be traced back to a datasheet.

>>> h200 = load_hardware("h200_sxm")
>>> h200.peak("bf16"), h200.hbm_bandwidth, h200.hbm_capacity
(989000000000000, 4800000000000, 141000000000)
>>> load_hardware("h200") == h200          # an explicit alias
True
>>> builtin_hardware()
('b200_sxm', 'gb200', 'gb300', 'h200_sxm')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
import json
import math
from pathlib import Path
from types import MappingProxyType

from ..errors import CostError
from ..reuse import cached
from ..session import current
from .tiers import HBM, StorageTier, parse_tiers, tier_source_keys

#: short names accepted by :func:`load_hardware`; each maps to a built-in file stem
ALIASES: Mapping[str, str] = MappingProxyType({"h200": "h200_sxm", "b200": "b200_sxm"})

_FIGURES = ("hbm_bandwidth", "hbm_capacity", "nvlink_bandwidth", "host_bandwidth", "gpus_per_node",
            "scaleout_bandwidth")
_KEYS = ("name", "description", "peak_flops", *_FIGURES, "sources")


@dataclass(frozen=True)
class Hardware:
    """One GPU: dense peaks per precision (FLOP/s), HBM, per-direction link bandwidths, and how many
    GPUs share one NVLink domain (a collective over more GPUs crosses the scale-out fabric).

    ``peak_flops`` and ``sources`` are read-only mappings; they are left out of the hash (the
    name and the scalar figures identify the hardware) but take part in equality.
    """

    name: str
    description: str
    peak_flops: Mapping[str, int] = field(hash=False)
    hbm_bandwidth: int          # bytes/s
    hbm_capacity: int           # bytes
    nvlink_bandwidth: int       # bytes/s per direction, per GPU
    host_bandwidth: int         # bytes/s per direction (PCIe or NVLink-C2C)
    gpus_per_node: int          # GPUs in one NVLink domain (8 on HGX boards, 72 in an NVL72 rack)
    scaleout_bandwidth: int     # bytes/s per direction per GPU between NVLink domains (its NIC)
    sources: Mapping[str, str] = field(hash=False, repr=False)
    #: optional (costs/tiers.py): host DRAM, SSD, remote store; HBM is always there
    storage_tiers: Mapping[str, StorageTier] = field(default_factory=lambda: {"hbm": HBM}, hash=False, repr=False)

    def __post_init__(self):
        # freeze whatever mapping the caller passed; sorted so repr and iteration are stable
        object.__setattr__(self, "peak_flops", MappingProxyType(dict(sorted(self.peak_flops.items()))))
        object.__setattr__(self, "sources", MappingProxyType(dict(sorted(self.sources.items()))))
        object.__setattr__(self, "storage_tiers", MappingProxyType(dict(sorted(self.storage_tiers.items()))))

    def __reduce__(self):
        # mappingproxy cannot be pickled; rebuild from plain dicts (pickle, copy, multiprocessing)
        return (Hardware, (self.name, self.description, dict(self.peak_flops), self.hbm_bandwidth,
                           self.hbm_capacity, self.nvlink_bandwidth, self.host_bandwidth, self.gpus_per_node,
                           self.scaleout_bandwidth, dict(self.sources), dict(self.storage_tiers)))

    @property
    def has_fp4(self) -> bool:
        """Whether the GPU has FP4 tensor cores (an ``fp4`` peak): which checkpoint it runs
        (:func:`for_hardware`).

        >>> load_hardware("h200_sxm").has_fp4, load_hardware("gb200").has_fp4
        (False, True)
        """
        return "fp4" in self.peak_flops

    def tier(self, name: str) -> StorageTier:
        """The storage tier ``name`` (``hbm``, ``host_dram``, ``ssd``, ``remote``); a missing one is an error."""
        try:
            return self.storage_tiers[name]
        except KeyError:
            raise CostError(f"hardware {self.name!r}: no storage tier {name!r} "
                            f"(has: {', '.join(self.storage_tiers)})") from None

    def peak(self, precision: str) -> int:
        """Dense peak in FLOP/s for ``precision``; a precision the GPU lacks is an error.

        >>> load_hardware("gb300").peak("fp4")
        15000000000000000
        >>> load_hardware("h200_sxm").peak("fp4")
        Traceback (most recent call last):
        ...
        v41graph.errors.CostError: hardware 'h200_sxm': no peak for precision 'fp4' (has: bf16, fp32, fp8, tf32)
        """
        try:
            return self.peak_flops[precision]
        except KeyError:
            raise CostError(f"hardware {self.name!r}: no peak for precision {precision!r} "
                            f"(has: {', '.join(self.peak_flops)})") from None


def _positive_int(value, key: str, origin: str) -> int:
    """An exact positive integer; integral floats (``4.8e12``) are accepted, bools are not."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CostError(f"{origin}: key {key!r} must be a whole number, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise CostError(f"{origin}: key {key!r} must be positive, got {value!r}")
    return value


def _text(value, key: str, origin: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CostError(f"{origin}: key {key!r} must be a non-empty string, got {value!r}")
    return value


def _object(value, key: str, origin: str) -> Mapping:
    if not isinstance(value, Mapping) or not value:
        raise CostError(f"{origin}: key {key!r} must be a non-empty object, got {value!r}")
    return value


def hardware_from_dict(data, origin: str = "hardware") -> Hardware:
    """Validate a parsed description; ``origin`` (file or built-in name) starts every message.

    >>> hardware_from_dict({"name": "x"}, "hardware file 'x.json'")
    Traceback (most recent call last):
    ...
    v41graph.errors.CostError: hardware file 'x.json': key 'description' is missing
    """
    if not isinstance(data, Mapping):
        raise CostError(f"{origin}: top level must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_KEYS) - {"storage_tiers"})
    if unknown:
        raise CostError(f"{origin}: unknown key {unknown[0]!r} (allowed: {', '.join(_KEYS)})")
    for key in _KEYS:
        if key not in data:
            raise CostError(f"{origin}: key {key!r} is missing")
    peaks = {p: _positive_int(v, f"peak_flops.{p}", origin)
             for p, v in _object(data["peak_flops"], "peak_flops", origin).items()}
    figures = {k: _positive_int(data[k], k, origin) for k in _FIGURES}
    sources = {k: _text(v, f"sources.{k}", origin) for k, v in _object(data["sources"], "sources", origin).items()}
    # every figure needs a source, and every source must belong to a figure (no typos hiding)
    tiers = parse_tiers(data.get("storage_tiers", {}), origin)
    wanted = {f"peak_flops.{p}" for p in peaks} | set(_FIGURES) | tier_source_keys(data.get("storage_tiers", {}))
    unsourced, stray = sorted(wanted - set(sources)), sorted(set(sources) - wanted)
    if unsourced:
        raise CostError(f"{origin}: key 'sources' has no entry for {unsourced[0]!r}")
    if stray:
        raise CostError(f"{origin}: key 'sources.{stray[0]}' names no figure (figures: {', '.join(sorted(wanted))})")
    return Hardware(name=_text(data["name"], "name", origin),
                    description=_text(data["description"], "description", origin),
                    peak_flops=peaks, sources=sources, storage_tiers=tiers, **figures)


@cached(maxsize=1, resource=True)  # the package's own files: listed once per process
def builtin_hardware() -> tuple[str, ...]:
    """Names of the built-in descriptions (file stems), sorted; see also :data:`ALIASES`."""
    folder = resources.files("v41graph") / "data" / "hardware"
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json")))


@cached(maxsize=32, resource=True)  # every compile names its hardware: read and checked once per process
def _builtin(stem: str) -> Hardware:
    text = (resources.files("v41graph") / "data" / "hardware" / f"{stem}.json").read_text(encoding="utf-8")
    return hardware_from_dict(json.loads(text), f"built-in hardware {stem!r}")


def _registered() -> dict[str, Hardware]:
    """The current session's registered descriptions, by name."""
    return current().state(_registered, dict)


def register_hardware(hardware: Hardware) -> None:
    """Make ``hardware`` loadable by its name (:func:`load_hardware`, every ``hardware=`` argument) in
    the current :class:`~v41graph.session.Session`; a built-in name, an alias or a name registered
    already is an error.

    >>> from dataclasses import replace
    >>> from v41graph.session import Session
    >>> with Session():
    ...     register_hardware(replace(load_hardware("h200_sxm"), name="h200_lab"))
    ...     load_hardware("h200_lab").hbm_capacity
    141000000000
    >>> "h200_lab" in _registered()
    False
    """
    if not isinstance(hardware, Hardware):
        raise CostError(f"register_hardware: {hardware!r} is not a v41graph Hardware (load_hardware(...))")
    if hardware.name in ALIASES or hardware.name in builtin_hardware() or hardware.name in _registered():
        raise CostError(f"register_hardware: hardware name {hardware.name!r} exists already")
    _registered()[hardware.name] = hardware


def load_hardware(name_or_path: str | Path) -> Hardware:
    """Load a built-in description by name or alias, one registered in the current session by name
    (:func:`register_hardware`), or a user JSON file by path.

    >>> load_hardware("b200").name
    'b200_sxm'
    >>> load_hardware("tpu-v9")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    v41graph.errors.CostError: hardware: unknown name 'tpu-v9' and no such file (built-in: b200_sxm, gb200, gb300, ...
    """
    key = str(name_or_path)
    stem = ALIASES.get(key, key)
    if stem in builtin_hardware():
        return _builtin(stem)
    if key in _registered():
        return _registered()[key]
    path = Path(key)
    if path.exists() and not path.is_file():  # a folder is not "no such file"
        raise CostError(f"hardware: {key!r} is not a regular file (a hardware JSON file or a built-in name)")
    if not path.is_file():
        aliases = ", ".join(f"{a} -> {s}" for a, s in sorted(ALIASES.items()))
        raise CostError(f"hardware: unknown name {key!r} and no such file "
                        f"(built-in: {', '.join(builtin_hardware())}; aliases: {aliases})")
    origin = f"hardware file {key!r}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CostError(f"{origin}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CostError(f"{origin}: not valid JSON: {exc}") from None
    return hardware_from_dict(data, origin)


def for_hardware(model, hardware: "Hardware | str | Path", checkpoint: str | None = None, *,
                 fp4_on_hopper: bool = False):
    """``model`` as the checkpoint ``hardware`` runs (:func:`v41graph.model.checkpoints.choose_checkpoint`):
    the official FP4 one on a GPU with FP4 tensor cores, the engine-published FP8 one on a GPU without
    (Hopper), else the FP4 one with a caveat; ``checkpoint`` names one (an FP4 one where an FP8 one
    exists on Hopper needs ``fp4_on_hopper``). ``compile`` never switches checkpoints by itself.

    >>> from v41graph import load_model
    >>> m = for_hardware(load_model("deepseek-v4-flash"), "h200_sxm")
    >>> m.checkpoint, m.expert_dtype
    ('sgl-project/DeepSeek-V4-Flash-FP8', 'fp8')
    >>> for_hardware(m, "gb200").checkpoint
    'deepseek-ai/DeepSeek-V4-Flash'
    """
    from ..model.checkpoints import choose_checkpoint
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    return choose_checkpoint(model, hw.has_fp4, checkpoint, fp4_on_hopper=fp4_on_hopper, gpu=hw.name).apply(model)
