"""Typed access to config.json keys with errors that name the key and the value.

>>> from v41graph.model.configkeys import Keys
>>> k = Keys({"hidden_size": 5120}, "text_config.")
>>> k.int("hidden_size")
5120
>>> k.int("vocab_size")
Traceback (most recent call last):
...
v41graph.errors.ConfigError: config key 'text_config.vocab_size' is missing
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError

_MISSING = object()
#: no config integer is larger: sizes beyond it are typos or fuzz, and would make later arithmetic
#: (and loops over layers or experts) unbounded
MAX_INT = 1 << 48


class Keys:
    """Reads keys of one config section; ``prefix`` is how the section is named in messages."""

    def __init__(self, section: Mapping[str, Any], prefix: str = ""):
        if not isinstance(section, Mapping):
            raise ConfigError(f"config section '{prefix.rstrip('.') or '<root>'}' must be an object, "
                              f"got {type(section).__name__} {section!r:.60}")
        self.section = section
        self.prefix = prefix

    def name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def has(self, key: str) -> bool:
        return key in self.section and self.section[key] is not None

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self.section:
            if default is _MISSING:
                raise ConfigError(f"config key '{self.name(key)}' is missing")
            return default
        return self.section[key]

    def int(self, key: str, *, minimum: int | None = 0, maximum: int = MAX_INT, default: Any = _MISSING) -> int:
        value = self.raw(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"config key '{self.name(key)}' must be an integer, got {value!r:.60}")
        if minimum is not None and value < minimum:
            raise ConfigError(f"config key '{self.name(key)}' must be >= {minimum}, got {value!r:.60}")
        if value > maximum:
            raise ConfigError(f"config key '{self.name(key)}' must be <= {maximum:,}, got {value!r:.60}")
        return value

    def number(self, key: str, default: Any = _MISSING) -> float:
        value = self.raw(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"config key '{self.name(key)}' must be a number, got {value!r}")
        return float(value)

    def str(self, key: str, default: Any = _MISSING) -> str:
        value = self.raw(key, default)
        if not isinstance(value, str):
            raise ConfigError(f"config key '{self.name(key)}' must be a string, got {value!r}")
        return value

    def ints(self, key: str, *, default: Any = _MISSING) -> tuple[int, ...]:
        value = self.raw(key, default)
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise ConfigError(f"config key '{self.name(key)}' must be a list of integers, got {value!r:.200}")
        if any(v < 0 for v in value):
            raise ConfigError(f"config key '{self.name(key)}' must hold non-negative integers, got {value!r:.200}")
        if any(v > MAX_INT for v in value):
            raise ConfigError(f"config key '{self.name(key)}' must hold integers <= {MAX_INT:,}, got {value!r:.200}")
        return tuple(value)

    def layer_ids(self, key: str, n_layers: int, *, default: Any = _MISSING) -> tuple[int, ...]:
        """A sorted, duplicate-free list of layer ids, each in [0, n_layers)."""
        ids = self.ints(key, default=default)
        if list(ids) != sorted(set(ids)):
            raise ConfigError(f"config key '{self.name(key)}' must be sorted ascending without duplicates, "
                              f"got {list(ids)}")
        for i in ids:
            if i >= n_layers:
                raise ConfigError(f"config key '{self.name(key)}': layer id {i} is out of range "
                                  f"[0, {n_layers}) in {list(ids)}")
        return ids

    def section_of(self, key: str) -> "Keys":
        return Keys(self.raw(key), f"{self.prefix}{key}.")
