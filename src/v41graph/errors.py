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
