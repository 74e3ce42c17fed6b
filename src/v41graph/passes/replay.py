"""Replay tail pruning: apply decoder and encoder bounded replay to every node's ledger rows.

Contract: rewrites ``Node.rows`` of backbone nodes, per request, with the same functions as
:func:`v41graph.ir.ledger.ledger` (``apply_policies``); never touches weights, edges or storage.
Before ⇒ after, a 1,000-token prefill with ``decoder_replay='bounded'``::

    L21.wq_a rows: [0, 1000)  ⇒  [872, 1000)        (min(1000, 128) = 128 tokens)
    L20.wq_a rows: [0, 1000)  ⇒  [0, 1000)          (the last KV source stays full)

Idempotent: the policies compute a row from its request, not from the row.

The report counts both directions, neither negative: ``tokens_pruned``, the new tokens' token×layers
the decoder tail removes, and ``tokens_added``, the replayed prefix tokens' token×layers encoder
restore adds (``Row.restored``). The net change is ``token_layers_before − token_layers_after =
tokens_pruned − tokens_added``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..algebra import Value, ssum
from ..ir.graph import Graph
from ..ir.ledger import Row, apply_policies
from ..ir.rows import groups, is_table, total
from ..ir.ops import SparseAttention, covers
from ..ir.shapes import SHAPES_KEPT, derived, numbered, rows_slots
from ..structural import Keyed, memo
from .base import PassResult

_BACKBONE = ("encoder", "decoder", "backbone")


@dataclass(frozen=True)
class ReplayReport:
    token_layers_before: Value
    token_layers_after: Value
    rows_changed: int
    tokens_added: Value = 0  # token×layers of replayed prefix tokens the policies add (≥ 0)

    @property
    def tokens_pruned(self) -> Value:
        """Token×layers of new tokens the policies remove (≥ 0): the net drop plus what was added,
        each row's new tokens never growing (module doc)."""
        return self.token_layers_before - self.token_layers_after + self.tokens_added


def token_layers(graph: Graph) -> Value:
    """Σ over backbone layers and requests of query tokens, read from each layer's attention node."""
    return _tokens(graph, _attention(graph))


def _attention(graph: Graph) -> tuple[str, ...]:
    """The backbone nodes that are (or cover) a layer's attention: one per layer."""
    return tuple(n.id for n in graph.nodes.values() if covers(n.op, SparseAttention) and n.stage in _BACKBONE)


def _tokens(graph: Graph, attention: tuple[str, ...]) -> Value:
    return ssum(total(g.tokens) for n in attention for g in groups(graph.nodes[n].rows))


def _restored(graph: Graph, attention: tuple[str, ...]) -> Value:
    """Σ of the replayed prefix tokens among the queries (``Row.restored``, times the row's copies)."""
    return ssum(total(g.copies * g.restored) for n in attention for g in groups(graph.nodes[n].rows))


def _pruned(ctx, rows: tuple[Row, ...], tables: dict) -> tuple[tuple[Row, ...], int]:
    """``rows`` with the replay policies applied, and how many rows that changed (a table's
    columns at once; ``tables``: the policies' memo over one plan's tables)."""
    if is_table(rows):
        from ..ir.ledger_columns import changed_rows, policy_table  # numpy: tables only
        new = policy_table(ctx.model, ctx.plan, rows, tables)
        return new, changed_rows(rows, new)
    new = tuple(apply_policies(ctx.model, ctx.plan, r) for r in rows)
    # A policy hands an untouched row back as is: the identity test skips most comparisons.
    return new, sum(1 for a, b in zip(new, rows) if a is not b and a != b)


@memo("replay shapes", SHAPES_KEPT)
def _shape(skeleton: Keyed) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """Per graph shape: the positions of the nodes whose rows the policies rewrite, and the attention nodes."""
    graph = skeleton.value
    # The embedding (no layer, layer 0's rows) too: under encoder restore the replayed prefix
    # tokens are embedded again. The head keeps its rows: it counts the last position only.
    # Nodes that carry one rows tuple form a group (which nodes share one is part of the shape).
    groups: dict[int, list[int]] = {}
    for i, (n, slot) in enumerate(zip(graph.nodes.values(), rows_slots(skeleton))):
        if n.stage in _BACKBONE and n.rows:
            groups.setdefault(slot, []).append(i)
    return tuple(tuple(g) for g in groups.values()), _attention(graph)


@memo("replay slots", SHAPES_KEPT)
def _slots(skeleton: Keyed, rewritten: tuple[bool, ...]) -> tuple[int, ...]:
    """The output's rows slots (``Graph.slots``) where the groups flagged in ``rewritten`` got a tuple each:
    a rewritten group's nodes share its new tuple, the other nodes keep the tuples they carried."""
    groups, _ = _shape(skeleton)
    moved = {i: g for g, (group, new) in enumerate(zip(groups, rewritten)) if new for i in group}
    return numbered((slot, moved.get(i)) for i, slot in enumerate(rows_slots(skeleton)))


@dataclass(frozen=True)
class ReplayPruning:
    name: str = "replay"

    def __call__(self, graph: Graph, ctx) -> "PassResult":
        skeleton = graph.skeleton
        groups, attention = _shape(skeleton)
        nodes, changed = list(graph.nodes.values()), 0
        # Nodes of one layer share one rows tuple (every graph of the shape shares as ``rows_slots``
        # says): apply the policies once per tuple (a group). Which tuples are rewritten is part of
        # the output's shape: a rewritten group's nodes stop sharing their tuple with nodes outside
        # it (the head carries the last layer's rows).
        tables: dict = {}
        rewritten: list = []
        for group in groups:
            rows, edits = _pruned(ctx, nodes[group[0]].rows, tables)
            rewritten.append(edits > 0)
            if edits:
                changed += edits * len(group)
                for i in group:
                    nodes[i] = nodes[i].with_fields(rows=rows)
        shape = derived(_shape.key(skeleton), tuple(rewritten))
        if changed:  # rows alone changed
            out = graph.with_nodes(nodes, shape=shape, slots=_slots(skeleton, tuple(rewritten)))
        else:
            out = graph.with_shape(shape)
        before = _tokens(graph, attention)
        after = _tokens(out, attention) if changed else before  # no row rewritten: the same rows
        added = _restored(out, attention) - _restored(graph, attention) if changed else 0
        return PassResult(self.name, out, changed, ReplayReport(before, after, changed, added))
