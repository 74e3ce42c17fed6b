"""Passes from outside the package, placed before or after a named pass of the pipeline, and
fusing a chosen set of nodes into one module.

A registered pass follows the pass contract (:mod:`v41graph.passes.base`): a frozen dataclass
with a ``name`` whose call returns a :class:`~v41graph.passes.base.PassResult` with its typed
report, which :meth:`Compiled.report(name) <v41graph.passes.base.Compiled.report>` then returns.
The default pipeline (and ``schedule``, which adds the scheduling pass) places every registered
pass at its anchor, in registration order; an unknown anchor or a duplicate name is an error.
Registered passes belong to the current :class:`~v41graph.session.Session`.

>>> from dataclasses import dataclass
>>> from v41graph import load_model, Plan, Request
>>> from v41graph.passes import PassResult, compile_graph
>>> @dataclass(frozen=True)
... class CountFused:
...     name: str = "count_fused"
...     def __call__(self, graph, ctx):
...         n = sum(1 for x in graph.nodes.values() if x.op.kind == "Fused")
...         return PassResult(self.name, graph, 0, n)
>>> register_pass(CountFused(), after="fusion")
>>> c = compile_graph(load_model(), Plan([Request.prefill(64)]))
>>> [p.name for p in c.passes], c.report("count_fused") > 0
(['precision', 'replay', 'kv_dedup', 'fusion', 'count_fused'], True)
>>> unregister_pass("count_fused")
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import GraphError
from ..ir.graph import Graph
from ..ir.rewrite import check_convex
from ..session import current
from .base import Pass
from .fusion_working import _Working

__all__ = ["arrange", "fuse_nodes", "register_pass", "registered_passes", "unregister_pass"]


@dataclass(frozen=True)
class _Placed:
    pass_: Pass
    before: str | None
    after: str | None


def _passes() -> dict[str, _Placed]:
    """The current session's registered passes, by name, in registration order."""
    return current().state(_passes, dict)


def register_pass(p: Pass, *, before: str | None = None, after: str | None = None) -> None:
    """Run ``p`` just before or just after the pass named ``before`` / ``after``."""
    name = getattr(p, "name", None)
    if not isinstance(name, str) or not callable(p):
        raise GraphError(f"register_pass: {p!r} is not a pass (a callable with a string `name`)")
    if (before is None) == (after is None):
        raise GraphError(f"register_pass {name!r}: give exactly one of before= or after= (a pass name)")
    if name in _passes() or name in ("precision", "replay", "kv_dedup", "fusion", "schedule"):
        raise GraphError(f"register_pass: a pass named {name!r} exists already")
    _passes()[name] = _Placed(p, before, after)


def unregister_pass(name: str) -> None:
    if _passes().pop(name, None) is None:
        raise GraphError(f"unregister_pass: no registered pass named {name!r}")


def registered_passes() -> tuple[str, ...]:
    return tuple(_passes())


def arrange(base: tuple[Pass, ...]) -> tuple[Pass, ...]:
    """``base`` with each registered pass at its anchor. A pass anchored on one that ``base`` lacks
    (``after='schedule'`` in a pipeline without scheduling) is left out only if its anchor is the
    scheduling pass; any other unknown anchor raises."""
    out, passes = list(base), _passes()
    for placed in passes.values():
        anchor = placed.before or placed.after
        names = [p.name for p in out]
        if anchor not in names:
            if anchor == "schedule":
                continue
            raise GraphError(f"register_pass {placed.pass_.name!r}: no pass named {anchor!r} in the pipeline "
                             f"({', '.join(names)})")
        at = names.index(anchor) + (0 if placed.before else 1)
        while placed.after and at < len(out) and passes.get(out[at].name, _Placed(None, None, None)).after == anchor:
            at += 1  # several passes after one anchor keep their registration order
        out.insert(at, placed.pass_)
    return tuple(out)


def fuse_nodes(graph: Graph, ids: tuple[str, ...], rule: str) -> Graph:
    """``ids`` (in dataflow order) fused into one :class:`~v41graph.ir.ops.Fused` module named by
    ``rule``, recording what it covers and the tensors it writes, exactly as the fusion pass does;
    the module takes the last member's id.

    >>> from v41graph import load_model, lower, Plan, Request
    >>> from v41graph.extend import verify
    >>> g = fuse_nodes(lower(load_model(), Plan([Request.prefill(64)])), ("L3.kv_rope", "L3.kv_quant"), "rope_quant")
    >>> op = g.node("L3.kv_quant").op
    >>> op.rule, op.members, [c.kind for c in op.covers], verify(g) is g
    ('rope_quant', ('L3.kv_rope', 'L3.kv_quant'), ['Rope', 'Quantize'], True)
    """
    ids = tuple(ids)
    check_convex(graph, ids)
    work = _Working(graph)
    if len({work.token_sets(m) for m in ids}) != 1:
        raise GraphError(f"fuse_nodes: {list(ids)} run over different token sets (across the replay cut?)")
    work.fuse(ids, rule, (), ids[-1])
    return work.graph(graph)
