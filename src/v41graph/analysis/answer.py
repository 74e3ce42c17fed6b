"""Typed answers (issue 36, item 5): an analysis returns a frozen dataclass that says itself as JSON.

:class:`TypedAnswer` is the one place an answer becomes JSON: :meth:`~TypedAnswer.to_dict` walks the
dataclass' fields in order, :meth:`~TypedAnswer.to_json` is ``json.dumps(to_dict(), indent=2)``, the
formatting every command's ``--json`` has always printed, so what the CLI prints *is* ``to_json()``. A
field says how it is written with :func:`part`: ``inline`` merges its record into the answer's (a later
key of the same name keeps the earlier one's place, as ``dict`` assignment does), ``omit`` leaves it out
where the predicate holds for its value, ``as_json`` converts the value first.

:class:`Priced` is the answer every priced command prints: its own record with the basis it was priced
on, the deployment and the checkpoints it ran, in that order.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Pair(TypedAnswer):
...     figures: dict = part(inline=True)
...     note: str | None = part(omit=is_none, default=None)
>>> Pair({"a": 1, "b": (2, 3)}).to_dict()
{'a': 1, 'b': [2, 3]}
>>> print(Pair({"a": 1}, note="x").to_json())
{
  "a": 1,
  "note": "x"
}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Callable


def is_none(value: Any) -> bool:
    """``omit`` of a field left out when it is None."""
    return value is None


def is_empty(value: Any) -> bool:
    """``omit`` of a field left out when it holds nothing."""
    return not value


def part(*, inline: bool = False, omit: Callable[[Any], bool] | None = None,
         as_json: Callable[[Any], Any] | None = None, **kwargs: Any) -> Any:
    """A dataclass field of a :class:`TypedAnswer` with how it is written (see the module doc);
    ``kwargs`` go to :func:`dataclasses.field` (``default``, ``default_factory``)."""
    return field(metadata={"inline": inline, "omit": omit, "as_json": as_json}, **kwargs)


def json_ready(value: Any) -> Any:
    """``value`` as JSON holds it: a typed answer as its dict, a tuple or list as a list, a dict by value.

    >>> json_ready({"k": (1, {"n": (2,)})})
    {'k': [1, {'n': [2]}]}
    """
    if isinstance(value, TypedAnswer):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


class TypedAnswer:
    """The mixin of a frozen dataclass answer: :meth:`to_dict` by a walk over its fields, :meth:`to_json`."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The answer as a JSON-ready dict, its fields in order (see the module doc for :func:`part`)."""
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value, meta = getattr(self, f.name), f.metadata
            if meta.get("omit") is not None and meta["omit"](value):
                continue
            if meta.get("as_json") is not None:
                value = meta["as_json"](value)
            value = json_ready(value)
            if meta.get("inline"):
                out.update(value)
            else:
                out[f.name] = value
        return out

    def to_json(self) -> str:
        """``to_dict()`` as the CLI prints it with ``--json`` (two-space indent, no trailing newline)."""
        return json.dumps(self.to_dict(), indent=2)


def checkpoint_json(choices) -> Any:
    """``as_json`` of a field of checkpoint choices: one as its record, several (one per side) as a list."""
    records = [c.to_dict() for c in choices]
    return records[0] if len(records) == 1 else records


@dataclass(frozen=True)
class Priced(TypedAnswer):
    """A priced answer: ``body`` (a dict or a typed answer, inlined), then the ``basis`` record it was priced
    on, the ``deployment`` (a :class:`~v41graph.analysis.mapping_search.MappingChoice`, written as its
    summary) and the ``checkpoint`` choices it ran (one record, or a list of one per side); each left out
    when absent.

    >>> Priced({"value": 1}, basis={"mode": "sol"}).to_dict()
    {'value': 1, 'basis': {'mode': 'sol'}}
    """

    body: Any = part(inline=True)
    basis: dict[str, Any] | None = part(omit=is_none, default=None)
    deployment: Any = part(omit=is_none, as_json=lambda choice: choice.summary(), default=None)
    checkpoint: tuple = part(omit=is_empty, as_json=checkpoint_json, default=())


__all__ = ["Priced", "TypedAnswer", "checkpoint_json", "is_empty", "is_none", "json_ready", "part"]
