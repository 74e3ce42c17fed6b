"""Sharding rows of one's own: how a user node kind or node-name pattern splits under TP / EP / DP
and which collective follows it, on the table the built-in rows are in (:mod:`.sharding`).

:func:`register_sharding` adds a :class:`~v41graph.model.sharding.Rule` for an op kind (its
class, or the class name) or for a shell pattern over node ids (``"*.my_scale"``; matched against
the whole id and the local name without its ``L3.`` prefix). A built-in node name keeps its
built-in row; among user rows a name pattern answers before a kind. An op may instead carry its
own row: a ``sharding`` attribute made with :func:`sharding_rule` (a class attribute, or a
field). A node that neither the built-in table, a user row nor its op answers for is an error
naming :func:`register_sharding` — never a silent default.

:func:`reset_sharding` returns the table to its built-in rows. The user rows belong to the current
:class:`~v41graph.session.Session` (``with Session():`` starts from the built-in rows alone).

>>> from v41graph.model.sharding import Mapping, rule_for_node
>>> from v41graph.ir.ops import Op
>>> class MyScale(Op):  # an op class: the table answers by its name
...     pass
>>> rule = register_sharding(MyScale, "column", collective="all_gather")
>>> r = rule_for_node("L3.scale", MyScale())
>>> (r.name, r.split, r.collective), Mapping(tp=4).work_divisor(r)
(('user:MyScale', 'column', 'all_gather'), 4)
>>> register_sharding("*.my_gemm", "row", collective="all_reduce").nodes
('*.my_gemm',)
>>> rule_for_node("L0.my_gemm").split, [r.name for r in user_sharding_rules()]
('row', ['user:MyScale', 'user:*.my_gemm'])
>>> reset_sharding(); user_sharding_rules()
()
"""

from __future__ import annotations

from ..errors import PlanError
from . import sharding
from .sharding import SPLITS, TOKENS, Rule

__all__ = ["COLLECTIVES", "GROUPS", "register_sharding", "reset_sharding", "sharding_rule", "unregister_sharding",
           "user_sharding_rules"]

GROUPS = ("attn_tp", "moe_tp")
#: the collectives a rule may name (the ones ``costs/rules.py`` prices as Communication nodes)
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")



def _user() -> list[Rule]:
    """The current session's user rows, in registration order (name patterns and kinds alike)."""
    return sharding.user_rows().rules


def sharding_rule(split: str, tokens: str = "rank", *, group: str = "attn_tp", collective: str | None = None,
                  name: str = "user", source: str = "user rule", nodes: tuple[str, ...] = (),
                  kinds: tuple[str, ...] = ()) -> Rule:
    """A checked :class:`~v41graph.model.sharding.Rule`: ``split`` one of ``SPLITS``, ``tokens``
    one of ``TOKENS``, ``group`` (for column / row / vocab splits) one of ``GROUPS``, and the
    ``collective`` that follows the op under a split (one of ``COLLECTIVES``, or None).

    >>> sharding_rule("row", collective="all_reduce").collective
    'all_reduce'
    >>> sharding_rule("diagonal")
    Traceback (most recent call last):
    ...
    v41graph.errors.PlanError: sharding rule 'user': split 'diagonal' is not one of replicated, ...
    """
    for field, value, known in (("split", split, SPLITS), ("tokens", tokens, TOKENS), ("group", group, GROUPS),
                                ("collective", collective, (None, *COLLECTIVES))):
        if value not in known:
            raise PlanError(f"sharding rule {name!r}: {field} {value!r} is not one of "
                            f"{', '.join(str(k) for k in known if k is not None)}")
    return Rule(name, split, tokens, tuple(nodes), (), source, group, tuple(kinds), collective)


def _is_op_class(cls: type) -> bool:
    """A subclass of ``v41graph.ir.ops.Op``, told by its bases' names: this layer may not import the
    ir layer (tests/test_layering.py), and only an op class is ever asked for its row."""
    return any(c.__name__ == "Op" and c.__module__ == "v41graph.ir.ops.base" for c in cls.__mro__)


def _target(target) -> tuple[str, str]:
    """("kind", class name) for an op class, ("nodes", pattern) for a string."""
    if isinstance(target, type):
        if not _is_op_class(target):
            raise PlanError(f"register_sharding: target {target.__module__}.{target.__qualname__} is a class but "
                            "not an op class (a subclass of v41graph.ir.ops.Op); give an op class, its name or a "
                            "node-name pattern")
        return "kind", target.__name__
    if isinstance(target, str) and target:
        return ("kind", target) if target.isidentifier() and target[0].isupper() else ("nodes", target)
    raise PlanError(f"register_sharding: target {target!r} is neither an op class nor a node-name pattern")


def register_sharding(target, split: str, tokens: str = "rank", *, group: str = "attn_tp",
                      collective: str | None = None, source: str = "user rule") -> Rule:
    """Add the row ``target`` → (``split``, ``tokens``, ``group``, ``collective``) to the sharding
    table and return it. ``target``: an op class, a class name (a capitalised identifier) or a
    shell pattern over node ids. A target registered twice is an error; see the module doc."""
    how, key = _target(target)
    if how == "nodes" and key in sharding.BUILTIN_NODES:  # it would never answer: the built-in row does
        raise PlanError(f"register_sharding: {key!r} is a built-in node name; its row is fixed "
                        f"({sharding.BUILTIN_NODES[key].name!r} in model/sharding.py RULES)")
    if any(key in (r.kinds if how == "kind" else r.nodes) for r in _user()):
        raise PlanError(f"register_sharding: {key!r} already has a sharding rule (unregister_sharding first)")
    rule = sharding_rule(split, tokens, group=group, collective=collective, name=f"user:{key}", source=source,
                         **({"kinds": (key,)} if how == "kind" else {"nodes": (key,)}))
    _user().append(rule)
    _changed()
    return rule


def unregister_sharding(target) -> None:
    """Remove the user row of ``target`` (as given to :func:`register_sharding`); unknown: an error."""
    how, key = _target(target)
    rows = _user()
    keep = [r for r in rows if key not in (r.kinds if how == "kind" else r.nodes)]
    if len(keep) == len(rows):
        raise PlanError(f"unregister_sharding: no user sharding rule for {key!r}")
    rows[:] = keep
    _changed()


def reset_sharding() -> None:
    """Back to the built-in table: every user row removed."""
    _user().clear()
    _changed()


def user_sharding_rules() -> tuple[Rule, ...]:
    """The user rows, in registration order."""
    return tuple(_user())


def generation() -> int:
    """A number that changes whenever the user rows do (a key part for memos of per-GPU shares)."""
    return sharding.user_rows().generation


def _changed() -> None:
    # the lookup is memoised by (node id, kind): a changed table must not answer from the memo
    sharding.rule_for_id.cache_clear()  # (the current session's)
    sharding.user_rows().generation += 1
