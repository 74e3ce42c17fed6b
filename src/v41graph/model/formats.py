"""Storage formats and their exact byte math (scales included).

A :class:`Format` is an element type plus a scale layout: ``bytes_per_element`` is the payload
plus the scale bytes amortised over the elements one scale covers. Everything is a
``Fraction`` so that byte counts stay exact integers where the layout makes them so.

>>> from v41graph.model.formats import FP4_E2M1_E4M3_G16, FP8_E4M3_G32, FP4_E2M1_UE8M0_G32
>>> FP4_E2M1_E4M3_G16.bytes_for(512)      # V4.1 main KV entry
Fraction(288, 1)
>>> FP8_E4M3_G32.bytes_for(512)           # V4.1 SWA KV entry
Fraction(528, 1)
>>> FP4_E2M1_UE8M0_G32.bytes_for(128)     # index-K entry
Fraction(68, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from ..errors import ConfigError, GraphError
from ..reuse import Table

#: binary byte units (byte math, so here; the renderers format them, render/units.py)
GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class Format:
    """An element format with an optional block-scale layout.

    Attributes
    ----------
    name: stable identifier used in reports and DOT labels.
    element: element type (``bf16``, ``fp32``, ``e4m3``, ``e2m1``).
    element_bytes: payload bytes per element.
    scale: scale element type (``ue8m0``, ``e4m3``) or ``None`` for unscaled formats.
    scale_bytes: bytes of one scale.
    scale_group: elements covered by one scale (32 for a 1×32 group, 1024 for a 32×32 block).
    """

    name: str
    element: str
    element_bytes: Fraction
    scale: str | None = None
    scale_bytes: Fraction = Fraction(0)
    scale_group: int = 1

    @property
    def bytes_per_element(self) -> Fraction:
        """Payload plus amortised scale bytes per element."""
        if self.scale is None:
            return self.element_bytes
        return self.element_bytes + self.scale_bytes / self.scale_group

    @property
    def payload_bytes_per_element(self) -> Fraction:
        """Payload only (no scales)."""
        return self.element_bytes

    def bytes_for(self, elements):
        """Bytes of ``elements`` values in this format, scales included (exact)."""
        return self.bytes_per_element * elements


BF16 = Format("bf16", "bf16", Fraction(2))
FP32 = Format("fp32", "fp32", Fraction(4))
#: linear weights of V4.1: FP8 e4m3 with one ue8m0 scale per 32×32 block
FP8_E4M3_B32 = Format("fp8_e4m3_b32x32", "e4m3", Fraction(1), "ue8m0", Fraction(1), 32 * 32)
#: linear weights of V4: FP8 e4m3 with one ue8m0 scale per 128×128 block
FP8_E4M3_B128 = Format("fp8_e4m3_b128x128", "e4m3", Fraction(1), "ue8m0", Fraction(1), 128 * 128)
#: SWA KV of V4.1 and Engram rows: FP8 e4m3 with one ue8m0 scale per 32 values
FP8_E4M3_G32 = Format("fp8_e4m3_g32", "e4m3", Fraction(1), "ue8m0", Fraction(1), 32)
#: routed experts and indexer Q/K (MXFP4): FP4 e2m1 with one ue8m0 scale per 32 values
FP4_E2M1_UE8M0_G32 = Format("fp4_e2m1_ue8m0_g32", "e2m1", Fraction(1, 2), "ue8m0", Fraction(1), 32)
#: V4.1 main KV (NVFP4 without the second-level global scale): one e4m3 scale per 16 values
FP4_E2M1_E4M3_G16 = Format("fp4_e2m1_e4m3_g16", "e2m1", Fraction(1, 2), "e4m3", Fraction(1), 16)
#: unscaled FP8 (activations handed between fused kernels, V4 KV nope payload)
FP8_E4M3 = Format("fp8_e4m3", "e4m3", Fraction(1))

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (BF16, FP32, FP8_E4M3_B32, FP8_E4M3_B128, FP8_E4M3_G32, FP4_E2M1_UE8M0_G32,
              FP4_E2M1_E4M3_G16, FP8_E4M3)
}


def format_named(name: str) -> Format:
    """Look a format up by name; an unknown name is a :class:`ConfigError` listing the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ConfigError(f"format: unknown format {name!r} (known: {', '.join(sorted(FORMATS))})") from None


@dataclass(frozen=True)
class Segment:
    """A run of ``dims`` values in one format inside a cache entry, or raw padding/scale bytes."""

    dims: int
    format: Format | None = None
    raw_bytes: int = 0

    @property
    def bytes(self) -> Fraction:
        if self.format is None:
            return Fraction(self.raw_bytes)
        return self.format.bytes_for(self.dims)


@dataclass(frozen=True)
class EntryLayout:
    """The byte layout of one cache entry (one token or one compressed group of one owner)."""

    name: str
    segments: tuple[Segment, ...]

    @cached_property
    def dims(self) -> int:
        return sum(s.dims for s in self.segments)

    @cached_property
    def bytes(self) -> int:
        """Bytes of one entry, scales included; always a whole number of bytes."""
        total = sum((s.bytes for s in self.segments), Fraction(0))
        if total.denominator != 1:
            raise ConfigError(f"entry layout {self.name!r}: {total} bytes is not a whole number")
        return int(total)

    @cached_property
    def payload_bytes(self) -> int:
        """Bytes of the values alone (no scales, no padding)."""
        total = sum((s.format.payload_bytes_per_element * s.dims for s in self.segments
                     if s.format is not None), Fraction(0))
        if total.denominator != 1:
            raise ConfigError(f"entry layout {self.name!r}: {total} payload bytes is not a whole number")
        return int(total)


def single(name: str, dims: int, fmt: Format) -> EntryLayout:
    """An entry of ``dims`` values in one format."""
    return EntryLayout(name, (Segment(dims, fmt),))


#: V4.1 main (compressed) KV: 512 × e2m1 + 32 × e4m3 = 288 B
V41_MAIN_KV = single("v41_main_kv", 512, FP4_E2M1_E4M3_G16)
#: V4.1 SWA KV: 512 × e4m3 + 16 × ue8m0 = 528 B
V41_SWA_KV = single("v41_swa_kv", 512, FP8_E4M3_G32)
#: indexer K (V4 and V4.1): 128 × e2m1 + 4 × ue8m0 = 68 B
INDEX_K_FP4 = single("index_k_fp4", 128, FP4_E2M1_UE8M0_G32)
#: V4 main and SWA KV: 448 e4m3 nope + 64 bf16 rope + 8 B scale row (7 ue8m0 per 64, 1 pad) = 584 B
V4_KV = EntryLayout("v4_kv", (Segment(448, FP8_E4M3), Segment(64, BF16), Segment(0, None, 8)))

#: every named entry layout, for byte math on edges
LAYOUTS = {l.name: l for l in (V41_MAIN_KV, V41_SWA_KV, INDEX_K_FP4, V4_KV)}
INT_BYTES = {"i32": Fraction(4)}


#: friendly names a user may write for a storage format, and the canonical format each means
ALIASES: dict[str, str] = {
    "fp8": "fp8_e4m3", "e4m3": "fp8_e4m3", "float8": "fp8_e4m3",
    "mxfp8": "fp8_e4m3_g32",
    "fp4": "fp4_e2m1_ue8m0_g32", "mxfp4": "fp4_e2m1_ue8m0_g32", "e2m1": "fp4_e2m1_ue8m0_g32",
    "nvfp4": "fp4_e2m1_e4m3_g16",
    "bfloat16": "bf16", "float32": "fp32", "int32": "i32",
}


def storage_formats() -> dict[str, Fraction | int]:
    """Every storage format a tensor, weight or cache entry may name, with its bytes per value
    (scales included): the element formats, the cache-entry layouts and the integer types.

    >>> f = storage_formats()
    >>> f["bf16"], f["fp8_e4m3_b32x32"], f["fp4_e2m1_ue8m0_g32"], f["v41_main_kv"]
    (2, Fraction(1025, 1024), Fraction(17, 32), Fraction(9, 16))
    """
    return {name: bytes_per_value(name) for name in (*FORMATS, *LAYOUTS, *INT_BYTES)}


def canonical_format(name: str) -> str:
    """The canonical name of a storage format given by its name or a friendly alias (``fp8``,
    ``fp4``, ``bf16`` …); anything else is an error listing the choices.

    >>> canonical_format("fp8"), canonical_format("fp4"), canonical_format("bf16")
    ('fp8_e4m3', 'fp4_e2m1_ue8m0_g32', 'bf16')
    >>> canonical_format("fp6")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    v41graph.errors.GraphError: unknown storage format 'fp6' (formats: bf16, fp32, ...; aliases: fp8 → fp8_e4m3, ...)
    """
    if name in FORMATS or name in LAYOUTS or name in INT_BYTES:
        return name
    alias = ALIASES.get(name) if isinstance(name, str) else None
    if alias is None:
        raise GraphError(f"unknown storage format {name!r} (formats: {', '.join((*FORMATS, *LAYOUTS, *INT_BYTES))}; "
                         f"aliases: {', '.join(f'{a} → {c}' for a, c in ALIASES.items())})")
    return alias


def bytes_per_value(name: str) -> Fraction | int:
    """Bytes of one value stored as ``name`` (a Format, an entry layout, or an integer type);
    an int when whole (bf16: 2), so byte counts stay ints where they can (exact either way)."""
    value = _BYTES_PER_VALUE.get(name)
    if value is None:
        if name in FORMATS:
            value = FORMATS[name].bytes_per_element
        elif name in LAYOUTS:
            value = Fraction(LAYOUTS[name].bytes, LAYOUTS[name].dims)
        elif name in INT_BYTES:
            value = INT_BYTES[name]
        else:  # an alias (``fp8``), or an error naming the choices
            return bytes_per_value(canonical_format(name))
        value = _BYTES_PER_VALUE[name] = int(value) if value.denominator == 1 else value
    return value


_BYTES_PER_VALUE = Table()  # formats are immutable: each asked for thousands of times


def scale_layout(name: str) -> str:
    if name in ALIASES:  # an edge made by hand may name a format by its alias
        name = ALIASES[name]
    f: Format | None = FORMATS.get(name)
    if f is not None:
        return "none" if f.scale is None else f"{f.scale}/{f.scale_group}"
    if name in LAYOUTS:
        return "+".join(s.format.scale and f"{s.format.scale}/{s.format.scale_group}" or "none"
                        for s in LAYOUTS[name].segments if s.format) + ("+pad" if name == "v4_kv" else "")
    return "none"
