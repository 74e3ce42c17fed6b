"""One decorator for every structural half: a memo keyed by the function's own arguments.

A pass's structural half is a function of hashable arguments — a graph's skeleton, the policies it
reads, a model's content — and :func:`memo` keeps its answers under exactly those arguments in a
:class:`~v41graph.reuse.Memo`: there is no key to build by hand, so no input the function reads can be
left out of it (an argument is the key). Under the shadow check (``V41GRAPH_SHADOW=1``) every hit is
recomputed from the very same arguments and compared, inside the decorator.

An argument that stands for something too large to hash — a graph, a model — is passed as
:class:`Keyed`: hashed and compared by its ``key`` alone (a graph's structure token, a model's content
digest), carrying the ``value`` the function computes from. A ``Keyed`` whose key is None (a graph
nobody vouches for: built by hand, rewritten) is computed every time and kept nowhere.

>>> calls = []
>>> @memo("example squares", 4)
... def square(x: Keyed, scale: int) -> int:
...     calls.append(x.value)
...     return x.value * x.value * scale
>>> square(Keyed("three", 3), 2), square(Keyed("three", 3), 2), square(Keyed(None, 4), 2)
(18, 18, 32)
>>> from v41graph.reuse import shadowing
>>> calls == ([3, 3, 4] if shadowing() else [3, 4])  # the second call a hit (the shadow check recomputes it too)
True
>>> square.key(Keyed("three", 3), 2), square.key(Keyed(None, 4), 2)
(('example squares', 'three', 2), None)
>>> from v41graph.reuse import shadow
>>> with shadow():  # a key that misses an input: "three" now stands for 5
...     square(Keyed("three", 5), 2)
Traceback (most recent call last):
...
v41graph.errors.GraphError: shadow check: memo 'example squares' returned a value that differs from a fresh ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import update_wrapper
from typing import Any, Callable, Hashable

from .reuse import Memo, caching, content_digest

__all__ = ["Keyed", "by_content", "memo"]


@dataclass(frozen=True)
class Keyed:
    """``value`` as a memo argument: equal and hashed by ``key`` alone (None: not to be memoised)."""

    key: Hashable
    value: Any = field(default=None, compare=False, repr=False)


def by_content(obj: Any) -> Keyed:
    """A frozen dataclass (a model, a hardware) as a memo argument: keyed by its content digest
    (:func:`~v41graph.reuse.content_digest`), so an edited copy is another argument and an equal one the same."""
    return Keyed(content_digest(obj), obj)


def _key(name: str, args: tuple) -> tuple | None:
    """``(name, *args)`` with each :class:`Keyed` argument as its key; None where one's key is None."""
    parts = [name]
    for a in args:
        if type(a) is Keyed:
            if a.key is None:
                return None
            a = a.key
        parts.append(a)
    return tuple(parts)


def memo(name: str, size: int, *, view: Callable[[Any], Any] | None = None,
         holds: Callable[..., bool] | None = None, long_lived: bool = True) -> Callable[[Callable], Callable]:
    """Memoise a function of hashable arguments (each :class:`Keyed` by its key) in a memo called ``name``
    of ``size`` entries; the decorated function's ``key(*args)`` is the key it is kept under (None: not
    kept), which a pass also names its output's shape by.

    ``view``: the part of an answer the shadow check compares (not what it keeps for later calls).
    ``holds``: several answers are kept per key, each returned where ``holds(answer, *args)`` (what it
    decided from the rows of the graph it was computed on still holds for this one); a new answer is
    added to them. ``long_lived`` as for :class:`~v41graph.reuse.Memo`."""
    def wrap(fn: Callable) -> Callable:
        table = Memo(name, size, long_lived=long_lived)

        def call(*args: Any) -> Any:
            k = call.key(*args) if caching() else None
            if k is None:
                return fn(*args)
            if holds is None:
                found = table.get(k, lambda: fn(*args), view)
                return found if found is not None else table.put(k, fn(*args))
            known = table.get(k) or ()
            for answer in known:
                if holds(answer, *args):
                    table.verify(answer, lambda: fn(*args), view)
                    return answer
            answer = fn(*args)
            table.put(k, known + (answer,))
            return answer

        call.key = lambda *args: _key(name, args)  # type: ignore[attr-defined]  # read at each call: a test may break it on purpose
        call.memo = table  # type: ignore[attr-defined]
        return update_wrapper(call, fn)
    return wrap
