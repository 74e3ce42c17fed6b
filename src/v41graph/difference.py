"""Where two values first differ: what the shadow check (:mod:`v41graph.reuse`) names when a
memo's hit is not what a computation from nothing gives."""

from __future__ import annotations

import dataclasses
from typing import Any


def difference(a: Any, b: Any, where: str = "value") -> str | None:
    """Where ``a`` and ``b`` first differ (``value.layout[3].op``), or None when they are equal.

    >>> difference({"x": (1, 2)}, {"x": (1, 3)})
    'value[x][1] (2 != 3)'
    """
    if a is b:
        return None
    if type(a) is not type(b):
        return f"{where} (type {type(a).__name__} != {type(b).__name__})"
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return _fields_difference(a, b, where)
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            return f"{where} (length {len(a)} != {len(b)})"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := difference(x, y, f"{where}[{i}]"))), None)
    if hasattr(a, "keys") and hasattr(a, "items"):
        if list(a.keys()) != list(b.keys()):
            return f"{where} (keys {sorted(set(a) ^ set(b), key=str)[:5]} differ or are in another order)"
        return next((d for k, v in a.items() if (d := difference(v, b[k], f"{where}[{k}]"))), None)
    try:
        same = bool(a == b)
    except Exception:  # noqa: BLE001 - an uncomparable pair (e.g. sympy relational) is a difference
        same = False
    return None if same else f"{where} ({short(a)} != {short(b)})"


def _fields_difference(a: Any, b: Any, where: str) -> str | None:
    """The first of two dataclasses' compared fields that differs (the fields that make their equality)."""
    for f in dataclasses.fields(a):
        if f.compare:
            found = difference(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
            if found:
                return found
    return None


def short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."
