"""Fill colours of op kinds in diagrams: stable across diagrams, distinct within one.

Each kind the package defines (``v41graph.ir.ops``) gets its own palette entry: the slot the
MD5 of its name picks (Python's ``hash()`` is salted per process), or, when a kind earlier by
name already holds that slot, the next free one. The assignment depends only on the set of
kinds, so a ``Gemm`` has one colour in every diagram, run and process, and no two kinds share
a colour (the legend's colours are distinct). Storage kinds use a second, disjoint palette.

>>> kind_colour("Gemm") == kind_colour("Gemm"), kind_colour("GlobalKVStore", storage=True)
(True, '#ece7f2')
>>> len(set(_assigned(False).values())) == len(_assigned(False))
True
"""

from __future__ import annotations

import hashlib

from ..ir import ops as _ops
from ..reuse import cached

# ColorBrewer colours light enough for black text. No size keeps all 25 kinds apart; 30 and 13 keep
# apart those drawn side by side (main KV vs SWA ring, Gemm vs attention). A new size recolours all.
PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#d9d9d9",
           "#bc80bd", "#ccebc5", "#ffed6f", "#fbb4ae", "#b3cde3", "#decbe4", "#fed9a6", "#ffffcc", "#e5d8bd",
           "#fddaec", "#b3e2cd", "#fdcdac", "#cbd5e8", "#f4cae4", "#e6f5c9", "#fff2ae", "#f1e2cc", "#cccccc",
           "#66c2a5", "#8da0cb", "#a6d854")
STORAGE_PALETTE = ("#e0f3f8", "#fee8c8", "#e5f5e0", "#efedf5", "#fde0dd", "#f7fcb9", "#deebf7", "#fff7bc",
                   "#e7e1ef", "#d9f0d3", "#fee0b6", "#f0f0f0", "#ece7f2")


def _md5_slot(kind: str, size: int) -> int:
    return int(hashlib.md5(kind.encode("utf-8"), usedforsecurity=False).hexdigest()[:8], 16) % size


@cached(2)
def _assigned(storage: bool) -> dict[str, str]:
    """Every op kind of ``v41graph.ir.ops`` → its own palette colour: the MD5 slot when the kind is
    the first (by name) to claim it, else the next free slot. Fixed by the set of kinds, so a kind
    has one colour in every diagram, and no two kinds share one (legend colours are distinct)."""
    palette = STORAGE_PALETTE if storage else PALETTE
    kinds = sorted(n for n in _ops.__all__ if isinstance(getattr(_ops, n), type) and n not in ("Op", "Storage")
                   and getattr(getattr(_ops, n), "storage", None) is storage)
    taken: dict[int, str] = {}
    for kind in sorted(kinds, key=lambda k: (any(_md5_slot(o, len(palette)) == _md5_slot(k, len(palette))
                                                 for o in kinds if o < k), k)):
        slot = _md5_slot(kind, len(palette))
        while slot in taken:
            slot = (slot + 1) % len(palette)
        taken[slot] = kind
    return {kind: palette[slot] for slot, kind in taken.items()}


def kind_colour(kind: str, storage: bool = False) -> str:
    """The fill colour of an op kind: its MD5 slot in the palette, moved to the next free slot
    where an earlier kind holds it (:func:`_assigned`); a kind the package does not define keeps
    its MD5 slot."""
    palette = STORAGE_PALETTE if storage else PALETTE
    return _assigned(storage).get(kind, palette[_md5_slot(kind, len(palette))])
