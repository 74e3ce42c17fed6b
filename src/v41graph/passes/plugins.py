"""Third-party registrations through entry points, loaded lazily and in a fixed order.

A package adds op kinds (with their cost rules), passes or fusion rules by declaring entry
points in the groups ``v41graph.ops`` and ``v41graph.passes``; each names a callable taking no
arguments that calls :func:`~v41graph.costs.registry.register_op`,
:func:`~v41graph.passes.registry.register_pass` or
:func:`~v41graph.passes.fusion_rules.register_fusion_rule`. For example, in ``pyproject.toml``::

    [project.entry-points."v41graph.ops"]
    rope_quant = "my_kernels:register_ops"
    [project.entry-points."v41graph.passes"]
    rope_quant = "my_kernels:register_passes"

They load the first time a pipeline is built (:func:`v41graph.passes.default_pipeline`), ops
before passes (a pass may insert the ops), each group sorted by entry-point name and value, so
the order never depends on how the environment lists them; each entry point loads once.
``load_plugins()`` rescans (for a package installed since). Each :class:`~v41graph.session.Session`
loads them into itself (a fresh session registers them again). A plugin that fails to load raises
:class:`~v41graph.errors.ConfigError` naming it.

>>> load_plugins()  # entry points newly loaded in this environment (none here)
()
"""

from __future__ import annotations

from importlib.metadata import entry_points

from ..errors import ConfigError, V41Error
from ..session import current

GROUPS = ("v41graph.ops", "v41graph.passes")


class _Loaded:
    """A session's plugin state: the entry points loaded into it, and whether it has scanned."""

    def __init__(self):
        self.keys: set[tuple[str, str, str]] = set()
        self.scanned = False


def _loaded() -> _Loaded:
    return current().state(_loaded, _Loaded)


def load_plugins(*, rescan: bool = True) -> tuple[str, ...]:
    """Load the entry points of :data:`GROUPS` not loaded yet; returns ``group:name`` of each one loaded.

    With ``rescan=False`` only the first call scans (the pipeline calls it on every build)."""
    state = _loaded()
    if state.scanned and not rescan:
        return ()
    state.scanned = True
    loaded = []
    for group in GROUPS:
        for ep in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
            key = (group, ep.name, ep.value)
            if key in state.keys:
                continue
            state.keys.add(key)  # once, even if it fails: a broken plugin is reported, not retried forever
            try:
                hook = ep.load()
                if not callable(hook):
                    raise TypeError(f"{ep.value} is not callable")
                hook()
            except V41Error:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure of foreign code is named, in one line
                raise ConfigError(f"plugin {group}:{ep.name} ({ep.value}) failed to load: "
                                  f"{type(exc).__name__}: {exc}") from None
            loaded.append(f"{group}:{ep.name}")
    return tuple(loaded)
