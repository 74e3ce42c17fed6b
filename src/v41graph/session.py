"""The session: the one owner of what the package registers and keeps between calls.

Every registry (op kinds, passes, fusion rules, plugins, sharding rows, hardware descriptions), every
shape memo (:class:`v41graph.reuse.Memo`) and the measured tables read from disk live in a
:class:`Session`, not in module globals. Plain calls and the ``v41graph`` command use the default
session (:func:`current`, made on first use), so a process keeps its registrations and memos across
calls exactly as before; ``with Session():`` (or :func:`use`) makes a fresh one current for a block —
the built-ins only, nothing registered, no memo filled — and restores the previous one on exit. The
current session is a :class:`contextvars.ContextVar`, so threads and tasks each see their own block.

This module is beneath every layer (it imports nothing of the package): a registry asks its session
for its own state with :meth:`Session.state` and a factory for a fresh one, so the session never
needs to know what the registries hold.

>>> s = Session()
>>> with s:
...     current() is s, s.state("example", list) is s.state("example", list)
(True, True)
>>> current() is s, current() is current()
(False, True)
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Hashable, Iterator

__all__ = ["Session", "current", "default", "kept", "use"]


class Session:
    """Registries, memos and loaded tables, isolated from every other session (see the module doc).

    ``state(key, make)`` is a registry's own state in this session, made by ``make()`` the first
    time; ``memos`` maps each memo (by object) to its table here. ``with s:`` blocks nest within a
    thread; to enter one session from several threads at once, use :func:`use`."""

    __slots__ = ("memos", "_state", "_tokens")

    def __init__(self) -> None:
        self.memos: dict[Any, Any] = {}
        self._state: dict[Hashable, Any] = {}
        self._tokens: list = []

    def state(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The state kept under ``key`` in this session; ``make()`` builds it the first time."""
        found = self._state.get(key)
        if found is None:
            found = self._state[key] = make()
        return found

    def __enter__(self) -> "Session":
        self._tokens.append(_CURRENT.set(self))
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.reset(self._tokens.pop())


_CURRENT: ContextVar[Session | None] = ContextVar("v41graph_session", default=None)
_DEFAULT: list[Session] = []  # the default session, made on first use


def current() -> Session:
    """The session in force: the innermost ``with Session()`` / :func:`use` block's, else :func:`default`."""
    found = _CURRENT.get()
    return found if found is not None else default()


def default() -> Session:
    """The default session: what plain calls and the ``v41graph`` command use (made on first use).

    >>> with Session():
    ...     current() is default()
    False
    """
    if not _DEFAULT:
        _DEFAULT.append(Session())
    return _DEFAULT[0]


def kept(owner: Hashable, make: Callable[[], Any] = dict) -> Any:
    """``owner``'s entry in the current session's memos, made by ``make()`` the first time: a memo's
    table, a cached function's cache, the files a session has read; ``clear_caches`` empties them.

    >>> kept("example") is kept("example"), kept("example")
    (True, {})
    """
    session = _CURRENT.get()
    memos = (session if session is not None else current()).memos
    found = memos.get(owner)
    if found is None:
        found = memos[owner] = make()
    return found


@contextmanager
def use(session: Session) -> Iterator[Session]:
    """Make ``session`` current for the block (as ``with s:``); re-entering a session keeps its
    registrations and memos. Its token is the block's own, so threads may share one session.

    >>> s = Session()
    >>> with use(s):
    ...     s.state("n", lambda: [0])[0] += 1
    >>> with use(s):
    ...     s.state("n", lambda: [0])
    [1]
    """
    token = _CURRENT.set(session)
    try:
        yield session
    finally:
        _CURRENT.reset(token)
