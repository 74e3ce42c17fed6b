"""Reuse across calls: the one registry of every memo and function cache, the switch that turns
them off, and the shadow check that proves a hit equals a computation from nothing.

Every table that keeps an answer from one call for a later one is made here — a :class:`Memo`
(a bounded table a caller fills by key, the shape memos of ``ir/shapes.py``) or :func:`cached`
(``functools.lru_cache`` of a function of its arguments) — and holds its entries in the current
:class:`~v41graph.session.Session` (what one session kept, another never reads), so :func:`clear_caches`
empties all of them and the two switches below reach all of them. Nothing else may keep an answer
across calls (``tests/test_reuse.py`` greps for ``lru_cache`` and friends).

Switches, both read from the environment when a compile starts (:func:`refresh`, which
``compile``, ``schedule``, ``compile_graph`` and ``lower`` call first), and both also available
for a block of code:

* ``V41GRAPH_NO_CACHE=1`` / :func:`uncached`: no memo is read or written: each compile starts
  from nothing (the reference reuse is tested against). Cached functions stay on: each is keyed
  by all of its arguments (a pure function of them, which the shadow check verifies).
* ``V41GRAPH_SHADOW=1`` / :func:`shadow`: every hit is also recomputed from nothing and compared;
  a difference raises :class:`~v41graph.errors.GraphError` naming the memo, the plan being
  compiled and the first differing field — a key that misses an input fails loudly, at once.

>>> m = Memo("example", 2)
>>> _ = m.put("a", 1), m.put("b", 2), m.get("a"), m.put("c", 3)
>>> m.get("b") is None, m.get("a"), m.get("c")
(True, 1, 3)
>>> with shadow():
...     m.get("a", lambda: 2)
Traceback (most recent call last):
...
v41graph.errors.GraphError: shadow check: memo 'example' returned a value that differs from a fresh computation ...
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import contextmanager
from functools import lru_cache, update_wrapper
import os
from typing import Any, Callable, Hashable
import weakref

from .collector import kept_a_new_shape
from .difference import difference, short
from .errors import GraphError
from .session import _CURRENT, current, kept

#: every memo and resource cache (weakly: a cache made per call dies with its owner)
_REGISTRY: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()
_register = lambda cache: _REGISTRY.__setitem__(id(cache), cache)  # noqa: E731
#: [caching on, shadow on]: the environment's answer (refreshed per compile) and the blocks' overrides
_ENV = [True, False]
_BLOCKS = [0, 0]  # depth of uncached() and shadow() blocks
_FLAGS = [True, False]  # the effective switches, read by every lookup
_PLAN: list[Any] = [None]  # what is being compiled (named by a shadow failure)


def _update() -> None:
    _FLAGS[0] = _ENV[0] and not _BLOCKS[0]
    _FLAGS[1] = _FLAGS[0] and (_ENV[1] or _BLOCKS[1] > 0)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def refresh(plan: Any = None) -> None:
    """Read ``V41GRAPH_NO_CACHE`` and ``V41GRAPH_SHADOW`` again (each compile starts here) and note
    ``plan`` as the one a shadow failure names."""
    _ENV[0], _ENV[1] = not _env_flag("V41GRAPH_NO_CACHE"), _env_flag("V41GRAPH_SHADOW")
    _PLAN[0] = plan
    _update()


def caching() -> bool:
    """False under ``V41GRAPH_NO_CACHE`` (as of the last compile's start) and inside :func:`uncached`."""
    return _FLAGS[0]


def shadowing() -> bool:
    """True under ``V41GRAPH_SHADOW`` or inside :func:`shadow` (while caching is on)."""
    return _FLAGS[1]


@contextmanager
def _block(i: int):
    _BLOCKS[i] += 1
    _update()
    try:
        yield
    finally:
        _BLOCKS[i] -= 1
        _update()


def uncached():
    """Every memo and cached function off for the duration: each compile inside starts from nothing."""
    return _block(0)


def shadow():
    """Every hit recomputed from nothing and compared for the duration (see the module doc)."""
    return _block(1)


def clear_caches() -> None:
    """Empty every memo, numbering and cached function of the current session (its next compile starts
    from nothing); a :class:`Table` (a pure function of its key) is the process's, left alone."""
    current().memos.clear()  # its memos, cached functions' answers and files read (:func:`kept`)
    for cache in list(_REGISTRY.values()):
        if not isinstance(cache, Memo):  # a resource loaded once per process (a package file): loaded again
            cache.cache_clear()


def _plan_name() -> str:
    plan = _PLAN[0]
    if plan is None:
        return "none"
    return getattr(plan, "label", "") or short(plan)


def shadow_check(name: str, hit: Any, fresh: Any, view: Callable[[Any], Any] | None = None) -> None:
    """Raise GraphError when ``hit`` (what memo ``name`` returned) differs from ``fresh`` (the same
    computed from nothing); ``view``: the part of a value that is its answer (not its caches)."""
    found = difference(hit, fresh) if view is None else difference(view(hit), view(fresh))
    if found:
        raise GraphError(f"shadow check: memo {name!r} returned a value that differs from a fresh computation "
                         f"at {found} (plan: {_plan_name()}); its key misses an input")


class Memo:
    """A bounded least-recently-used table of results a caller fills by key (``long_lived``: its values are
    a shape's structure, kept for many compiles: a new one is what ``collector.settle`` freezes)."""

    def __init__(self, name: str, size: int, *, long_lived: bool = True):
        self.name, self.size, self.long_lived = name, size, long_lived
        _register(self)

    @property
    def _table(self) -> "OrderedDict[Hashable, Any]":  # this memo's entries in the current session
        session = _CURRENT.get()  # kept(self, OrderedDict), inlined: every lookup asks
        return (session if session is not None else current()).memos.get(self) or kept(self, OrderedDict)

    def get(self, key: Hashable, recompute: Callable[[], Any] | None = None,
            view: Callable[[Any], Any] | None = None) -> Any:
        """The entry for ``key``, or None (always None when caching is off). Under the shadow check a hit is
        compared with ``recompute()`` (through ``view``); without one, check each part read with :meth:`verify`."""
        if not _FLAGS[0]:
            return None
        table = self._table
        value = table.get(key)
        if value is not None:
            table.move_to_end(key)
            if _FLAGS[1] and recompute is not None:
                shadow_check(self.name, value, recompute(), view)
        return value

    def verify(self, hit: Any, recompute: Callable[[], Any], view: Callable[[Any], Any] | None = None) -> None:
        """Under the shadow check, compare a value read from this memo with ``recompute()``."""
        if _FLAGS[1]:
            shadow_check(self.name, hit, recompute(), view)

    def put(self, key: Hashable, value: Any) -> Any:
        """Store ``value`` under ``key`` (not when caching is off); returns ``value``."""
        if _FLAGS[0]:
            table = self._table
            if self.long_lived and key not in table:
                kept_a_new_shape()
            table[key] = value
            table.move_to_end(key)
            while len(table) > self.size:
                table.popitem(last=False)
        return value

    def table(self, key: Hashable) -> dict:
        """The dict kept under ``key``, filled item by item (:meth:`entry`); kept nowhere when caching is off."""
        found = self.get(key)
        return self.put(key, {}) if found is None else found

    def entry(self, table: dict, item: Hashable, compute: Callable[[], Any]) -> Any:
        """``table[item]`` (a :meth:`table` of this memo), computed the first time; under the shadow check
        each read is compared with ``compute()``."""
        found = table.get(item)
        if found is None:
            found = table[item] = compute()
        elif _FLAGS[1]:
            shadow_check(self.name, found, compute())
        return found

    def cache_clear(self) -> None:  # in the current session
        self._table.clear()

    def __len__(self) -> int:
        return len(self._table)


class Table(dict):
    """A plain dict: a pure function of its key over constant tables, kept in the hottest loops (bytes
    per value of a format). It keeps nothing but that function's values, so caching off and the shadow
    check leave it alone, and it is the process's, shared by every session."""


class Numbering:
    """Numbers given to values in order of first sight (a key part cheaper to hash than the value), in
    the current session: emptied by :func:`clear_caches` with the memos whose keys hold its numbers."""

    def number(self, value: Hashable) -> int:
        """``value``'s number: the count of values seen before it."""
        table = kept(self)
        return table.setdefault(value, len(table))


def content_digest(obj: Any) -> str:
    """A digest of a frozen dataclass's content (its repr: every field, nested), made once per
    object: two objects with one content share it, an edited copy (``dataclasses.replace``) does
    not. ``None`` (a hand-built graph compiled without a model, passes/built.py) is ``"none"``.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class P:
    ...     x: int
    >>> content_digest(P(1)) == content_digest(P(1)) != content_digest(P(2))
    True
    """
    found = "none" if obj is None else obj.__dict__.get("_content_digest")
    if found is None:
        import hashlib
        found = hashlib.sha256(repr(obj).encode()).hexdigest()[:32]
        object.__setattr__(obj, "_content_digest", found)  # not a field: equality and repr ignore it
    return found


def cached(maxsize: int | None = 128, *, resource: bool = False):
    """``functools.lru_cache(maxsize)``, one per session (emptied by :func:`clear_caches`); under the shadow
    check every call is compared with a fresh one. Keyed by all of its arguments, it carries nothing of one
    compile's shape into another: caching off leaves it on (the shadow check proves it reads nothing else).
    ``resource``: it loads something (a package file, a tokenizer) rather than computing an answer: loaded
    once per process for every session (registered, cleared by :func:`clear_caches`), never recomputed.

    >>> @cached(8)
    ... def square(x):
    ...     return x * x
    >>> square(3), square.cache_info().hits, square(3), square.cache_info().hits
    (9, 0, 9, 1)
    """
    def wrap(fn: Callable) -> Callable:
        name = f"{fn.__module__}.{fn.__qualname__}"
        if resource:
            memo = lru_cache(maxsize=maxsize)(fn)
            _register(memo)
            return memo

        def here():  # this function's cache in the current session
            return kept(call, lambda: lru_cache(maxsize=maxsize)(fn))

        def call(*args, **kwargs):
            session = _CURRENT.get()  # here(), inlined: the hottest functions are cached
            value = ((session if session is not None else current()).memos.get(call) or here())(*args, **kwargs)
            if _FLAGS[1]:
                shadow_check(name, value, fn(*args, **kwargs))
            return value

        call.cache_clear = lambda: here().cache_clear()  # type: ignore[attr-defined]
        call.cache_info = lambda: here().cache_info()  # type: ignore[attr-defined]
        return update_wrapper(call, fn)
    return wrap


refresh()
