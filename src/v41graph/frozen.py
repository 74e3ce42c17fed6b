"""Frozen dataclasses made as cheaply as plain objects: the value types a compile makes by the
hundred (costs, SOL times, ledger rows, cache records).

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
(the class's own ``__setattr__`` refuses), one builtin call per field; :func:`quick_init` gives
the class an ``__init__`` that sets the instance's whole ``__dict__`` in one such call instead.
The instance is the same — same fields, equality, hash, repr, pickling, and still frozen — only
made in a third of the time. Built the way :mod:`dataclasses` builds its own methods (source
text, compiled once per class).

>>> from dataclasses import dataclass
>>> @quick_init
... @dataclass(frozen=True)
... class P:
...     x: int
...     y: int = 2
>>> P(1), P(1, y=3) == P(1, 3), P(1).__dict__
(P(x=1, y=2), True, {'x': 1, 'y': 2})
>>> P(1).x = 5
Traceback (most recent call last):
...
dataclasses.FrozenInstanceError: cannot assign to field 'x'
"""

from __future__ import annotations

from dataclasses import MISSING, fields, is_dataclass


def quick_init(cls: type) -> type:
    """Replace frozen dataclass ``cls``'s ``__init__`` by one that sets its ``__dict__`` at once.

    Only for what the generated ``__init__`` does by itself: every field an init argument with
    at most a plain default, no ``__post_init__``, no ``__slots__``; anything else raises
    ``TypeError`` (a check the class would otherwise skip silently)."""
    if not is_dataclass(cls) or not cls.__dataclass_params__.frozen:
        raise TypeError(f"quick_init: {cls.__name__} is not a frozen dataclass")
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        raise TypeError(f"quick_init: {cls.__name__} has __post_init__ or __slots__")
    params, items, defaults = [], [], {}
    for f in fields(cls):
        if not f.init or f.kw_only or f.default_factory is not MISSING:
            raise TypeError(f"quick_init: field {cls.__name__}.{f.name} is not a plain init argument")
        if f.default is MISSING:
            params.append(f.name)
        else:
            defaults[f.name] = f.default
            params.append(f"{f.name}=__defaults[{f.name!r}]")
        items.append(f"{f.name!r}: {f.name}")
    source = (f"def __init__(self, {', '.join(params)}):\n"
              f"    __set(self, '__dict__', {{{', '.join(items)}}})\n")
    namespace = {"__set": object.__setattr__, "__defaults": defaults}
    exec(source, namespace)  # noqa: S102 - source built above from the class's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls
