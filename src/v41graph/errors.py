"""One exception family for everything a user can get wrong.

Every message names the field and the offending value, so the CLI can print it as a single
line and exit non-zero (docs/architecture.md, decision 8).
"""

from __future__ import annotations


class V41Error(Exception):
    """Base of every error v41graph raises on bad input or a broken invariant."""


class ConfigError(V41Error):
    """A model config (config.json) is missing a key, has a wrong type or an impossible value."""


class PlanError(V41Error):
    """An execution plan or one of its requests/policies is invalid."""


class GraphError(V41Error):
    """A graph fails verification, or a pass produced an invalid graph."""


class CostError(V41Error):
    """An op has no cost rule, or a hardware description is unusable."""


class OutputError(V41Error, OSError):
    """A file or folder that cannot be written: the ``OSError`` wrapped with what was writing and
    the path (its ``errno``, ``strerror`` and ``filename`` kept, so ``except OSError`` still holds).

    >>> try:
    ...     open("/no-such-dir/x.html", "w")
    ... except OSError as exc:
    ...     err = OutputError.of("write_html path", "/no-such-dir/x.html", exc)
    >>> str(err), err.filename, isinstance(err, OSError)
    ("write_html path: cannot write '/no-such-dir/x.html': No such file or directory", '/no-such-dir/x.html', True)
    """

    @classmethod
    def of(cls, what: str, path, exc: OSError) -> "OutputError":
        import os
        err = cls(exc.errno, exc.strerror or str(exc), os.fspath(path))
        err.what = what
        return err

    def __str__(self) -> str:
        return f"{getattr(self, 'what', 'output')}: cannot write {self.filename!r}: {self.strerror}"


def expect(value, kind: type | tuple[type, ...], what: str, error: type[V41Error], hint: str = ""):
    """``value`` when it is a ``kind``; else ``error`` naming ``what`` and the value (a public entry
    point handed the wrong kind of thing fails by name, not with an AttributeError deep inside).

    >>> expect(3, int, "plan tp", PlanError)
    3
    >>> expect("x", int, "plan tp", PlanError, " (a GPU count)")
    Traceback (most recent call last):
    ...
    v41graph.errors.PlanError: plan tp: expected int (a GPU count), got 'x'
    """
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise error(f"{what}: expected {names}{hint}, got {value!r:.80}")
    return value
