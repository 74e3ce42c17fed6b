"""The words a graph is written in, listed from the code: storage formats (with bytes per value)
and their friendly aliases, op kinds, edge roles, flop precisions, byte categories and links.

Each list is read off the definitions themselves (``model/formats.py``, the op payloads'
``needs`` / ``takes``, ``costs/value.py``), so it cannot drift from them; ``docs/vocabulary.md``
is rendered from these lists (:mod:`v41graph.render.vocabulary_doc`) and a test keeps it equal.

>>> f = formats()
>>> f["bf16"], f["fp8_e4m3"], f["fp4_e2m1_ue8m0_g32"]
(2, 1, Fraction(17, 32))
>>> format_aliases()["fp8"], "Gemm" in op_kinds(), "main_kv" in edge_roles(), precisions()
('fp8_e4m3', True, True, ('fp4', 'fp8', 'bf16', 'tf32', 'fp32'))
"""

from __future__ import annotations

from fractions import Fraction

from ..ir import ops
from ..model.formats import ALIASES, storage_formats
from .registry import registered_ops
from .value import BYTE_CATEGORIES, FALLBACK, LINKS

__all__ = ["byte_categories", "edge_roles", "format_aliases", "formats", "links", "op_kinds", "precisions"]


def formats() -> dict[str, Fraction | int]:
    """Every storage format (element formats, cache-entry layouts, integer types) → bytes per
    value, scales included (``model/formats.py``)."""
    return storage_formats()


def format_aliases() -> dict[str, str]:
    """Friendly names (``fp8``, ``fp4``, ``mxfp4`` …) → the canonical format each resolves to."""
    return dict(ALIASES)


def _kinds() -> list[type]:
    return [c for c in (getattr(ops, n) for n in ops.__all__)
            if isinstance(c, type) and issubclass(c, ops.Op) and c not in (ops.Op, ops.Storage)]


def op_kinds(*, builtin_only: bool = False) -> tuple[str, ...]:
    """The op kinds a node may run: the built-in payloads, then those registered with ``register_op``."""
    return tuple(sorted(c.__name__ for c in _kinds())) + (() if builtin_only else registered_ops())


def edge_roles() -> tuple[str, ...]:
    """The input roles an edge may have: every role some built-in op kind needs or takes."""
    return tuple(sorted({r for c in _kinds() for r in (*c.needs, *c.takes)}))


def precisions() -> tuple[str, ...]:
    """The precisions a cost rule counts flops at, fastest first (each falls back as ``FALLBACK`` says)."""
    order = ("fp4", "fp8", "bf16", "tf32", "fp32")
    assert set(FALLBACK) | set(FALLBACK.values()) <= set(order)  # a new precision must be placed here
    return order


def byte_categories() -> tuple[str, ...]:
    """What a cost's bytes are counted as."""
    return BYTE_CATEGORIES


def links() -> tuple[str, ...]:
    """What a cost's communication goes over."""
    return LINKS
