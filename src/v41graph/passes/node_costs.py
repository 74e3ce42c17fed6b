"""The scheduling pass's costs: every node's per-GPU cost and SOL time, equal work priced once.

Two nodes whose cost signatures agree (:func:`v41graph.costs.node.cost_signature`: the same op
over the same rows) have one cost. What a signature needs of the graph's shape — the signature's
fixed half per node, which nodes carry one rows tuple, which (signature, rows) pairs occur — is
worked out once per shape (:class:`Pricing`); a compile then keys each distinct rows tuple once
and prices each distinct pair once, and hands every node its pair's result. A node whose rule
reads its rows only through its token counts (``costs.rules.tokens_only``) is also looked up by
those counts across compiles.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.costs.counts import CostContext
>>> from v41graph.costs.hardware import load_hardware
>>> from v41graph.passes import compile_graph
>>> m, p = load_model(), Plan([Request.prefill(1000)])
>>> g = compile_graph(m, p, check=False).graph
>>> priced = pricing(g, m).price(g, CostContext(m, p), load_hardware("h200_sxm"))
>>> len(priced) == len(g.nodes), priced[0][1].bound
(True, 'memory')
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..algebra import is_symbolic
from ..costs.counts import CostContext, tokens_of
from ..costs.hardware import Hardware
from ..costs.node import PER_UNIT, cost_of_node, rows_key, signature_number, static_signature
from ..costs.rules import reads_tokens_only
from ..costs.value import Cost, SolTime, as_float, sol_time
from ..errors import CostError
from ..ir.graph import Graph
from ..ir.shapes import SHAPES_KEPT, rows_slots
from ..reuse import Memo, Numbering
from ..structural import Keyed, by_content, memo
from .base import picker
from .critical_path import PathFinder

#: what a node's pricing hands back: its cost, SOL time, and the time and three resources as floats
Priced = tuple  # (Cost, SolTime, float, (float, float, float))


@dataclass(frozen=True)
class _Pair:
    """One (signature, rows tuples) pair of a shape: the node that first has it, and how to key it."""

    node: str  # the first node in order with this pair: the one priced
    signature: int  # the static signature, numbered within the shape
    groups: tuple[int, ...]  # the rows groups (below) of the node and of its per-unit producers
    per_tokens: tuple[int, tuple[str, ...]] | None  # (the session's signature number, counts) if token-only


@dataclass(frozen=True)
class Pricing:
    """Per graph shape: the order, each node's pair, each rows group's nodes."""

    finder: PathFinder
    pair_of: tuple[int, ...]  # per node in order
    pairs: tuple[_Pair, ...]
    groups: tuple[tuple[str, ...], ...]  # the nodes that carry one rows tuple (their sharing is the shape's)
    #: for the breakdowns by stage, layer and op kind: each key (in first-seen order) and its nodes' positions
    places: tuple[tuple[tuple[str, tuple[int, ...]], ...], ...]
    position: dict[str, int]  # each node's place in order

    def price(self, graph: Graph, cctx: CostContext, hw: Hardware) -> list[Priced]:
        """Every node's (cost, SOL time, time, resources), in order; symbolic times raise."""
        done, per_node, _ = self.price_distinct(graph, cctx, hw)
        return list(per_node(done))

    def price_distinct(self, graph: Graph, cctx: CostContext, hw: Hardware) -> tuple[list[Priced], Any, tuple]:
        """The pricing of each distinct work once: those prices, the ``itemgetter`` that hands them
        out per node in order, and how many nodes each one is (for counts over nodes)."""
        numbers = self.group_numbers(graph)
        # what a token-only rule may read besides t (costs/rules.py, tokens_only): plan-wide facts, so every
        # policy of the plan (a field added to Plan joins by itself), the NVLink domain and the hardware
        facts = _FACTS.number((cctx.plan.policies, cctx.gpus_per_node, _HARDWARE.number(hw)))
        counted: dict = {}  # token counts by (rows tuple, count, layer): pairs of one layer share them
        firsts, per_node, weights = self._partition(numbers)
        pairs = self.pairs
        return [_price(graph, pairs[p], cctx, hw, facts, counted) for p in firsts], per_node, weights

    def _partition(self, numbers: tuple[int, ...]):
        """Which pairs price alike under these group content numbers: the first pair of each key (in
        order), per node the place of its pair's first among them (as an ``itemgetter``), and how
        many nodes each first stands for. The keys are a function of ``numbers`` and the shape, so
        the partition is kept per ``numbers`` (a sweep's compiles give the same few: every layer
        over one token span)."""
        known = self._partitions.get(numbers)
        if known is None:
            where: dict = {}
            firsts, place = [], []
            for p, key in enumerate(self._keys(numbers)):
                if key not in where:
                    where[key] = len(firsts)
                    firsts.append(p)
                place.append(where[key])
            per_pair = [place[p] for p in self.pair_of]
            weights = [0] * len(firsts)
            for i in per_pair:
                weights[i] += 1
            if len(self._partitions) >= 64:  # a few per shape in practice; never unbounded
                self._partitions.clear()
            known = self._partitions[numbers] = (tuple(firsts), picker(per_pair), tuple(weights))
        return known

    @cached_property
    def _partitions(self) -> dict:
        return {}

    @cached_property
    def breakdown_getters(self) -> tuple[tuple[tuple[str, object], ...], ...]:
        """:attr:`places` with each key's positions as one ``itemgetter`` (a tuple of the values at
        those positions, in order, made in C: the breakdowns read ~4,000 values a compile)."""
        return tuple(tuple((k, picker(idx)) for k, idx in table) for table in self.places)

    def group_numbers(self, graph: Graph) -> tuple[int, ...]:
        """Per rows group of the shape (its members carry one tuple in every graph of the shape:
        ``ir.shapes.rows_slots``), the number of its rows' content (numbered in order of first sight)."""
        nodes = graph.nodes
        numbers: dict = {}
        return tuple(numbers.setdefault(rows_key(nodes[members[0]].rows), len(numbers)) for members in self.groups)

    def pair_keys(self, graph: Graph) -> list:
        """Per pair, the key under which equal work is priced once: a pair reading one rows tuple is
        signature × width + that tuple's content number, one int; one reading several (per-unit
        producers) a tuple."""
        return self._keys(self.group_numbers(graph))

    def _keys(self, group_numbers: tuple[int, ...]) -> list:
        width = len(self.groups) + 1  # content numbers are below it
        return [sig * width + group_numbers[group] if group >= 0 else (sig, *[group_numbers[g] for g in pair.groups])
                for pair, sig, group in zip(self.pairs, self.signatures, self.single)]

    @cached_property
    def signatures(self) -> tuple[int, ...]:
        return tuple(p.signature for p in self.pairs)

    @cached_property
    def single(self) -> tuple[int, ...]:
        """Per pair: its one rows group, or -1 where it reads several (per-unit producers)."""
        return tuple(p.groups[0] if len(p.groups) == 1 else -1 for p in self.pairs)

    def keys(self, graph: Graph, model) -> list:
        """Per node in order, the key under which OP mode prices equal work once in a compile: its
        pair's key where the pair's rule reads its rows only through token counts (the measured
        pieces of such ops read their payload, the member's sharding row and the per-GPU cost, all
        in the signature), else that key with the op itself (a measured attention module reads its
        members' layers). The shadow check recomputes every reuse (passes/scheduling.py)."""
        keys = self.pair_keys(graph)
        nodes = graph.nodes
        return [keys[p] if self.pairs[p].per_tokens is not None else (keys[p], nodes[n].op)
                for n, p in zip(self.finder.order, self.pair_of)]


#: costs of token-only nodes by (signature, counts, plan-wide facts, hardware), across compiles
_BY_TOKENS = Memo("costs by token count", 1 << 13, long_lived=False)  # small, and new ones every compile
#: every hardware seen in this process, numbered (a part of _BY_TOKENS's keys, as the signature's
#: number is: costs.node.signature_number; a number hashes in nanoseconds, a Hardware in microseconds)
_HARDWARE = Numbering()
_FACTS = Numbering()  # the plan-wide facts a token-only rule may read, numbered


def _price(graph: Graph, pair: _Pair, cctx: CostContext, hw: Hardware, facts: int, seen: dict) -> Priced:
    node = graph.nodes[pair.node]
    counted = None
    if pair.per_tokens is not None:
        counts = []
        for k in pair.per_tokens[1]:
            where = (id(node.rows), k, node.layer if k == "entry" else None)  # (entries: per layer's ratio)
            t = seen.get(where)
            if t is None:
                t = seen[where] = tokens_of(node.rows, k, cctx, node.layer)
            counts.append(t)
        counts = tuple(counts)
        if not is_symbolic(*counts):
            counted = (pair.per_tokens[0], counts, facts)
            hit = _BY_TOKENS.get(counted, lambda: _priced(graph, node, cctx, hw))
            if hit is not None:
                return hit
    priced = _priced(graph, node, cctx, hw)
    if counted is not None:
        _BY_TOKENS.put(counted, priced)
    return priced


def _priced(graph: Graph, node, cctx: CostContext, hw: Hardware) -> Priced:
    cost = cost_of_node(graph, node, cctx)
    sol = sol_time(cost, hw)
    if is_symbolic(sol.time):  # the path is chosen numerically (docs/architecture.md, decision 6)
        raise CostError(f"schedule: node {node.id!r} has a symbolic SOL time ({sol.time}); bind the plan's "
                        "lengths to numbers first (v41graph.analysis.symbolic.query serves closed forms)")
    return cost, sol, as_float(sol.time), (as_float(sol.compute), as_float(sol.memory), as_float(sol.comm))


def _per_tokens(node, sig: tuple, rows_of: tuple[str, ...]) -> tuple[int, tuple[str, ...]] | None:
    if node.op.storage or len(rows_of) > 1 or isinstance(node.op, PER_UNIT) or not reads_tokens_only(node.op):
        # a per-unit producer's rows — its own, for what it writes — or a rule that reads rows decide the cost
        return None
    counts = set(getattr(node.op, "counts", ()) or ()) | {node.count}  # node_cost's own count and its members'
    return signature_number(sig), tuple(sorted(counts))


def pricing(graph: Graph, model, *, fresh: bool = False) -> Pricing:
    """The shape's :class:`Pricing` on ``model`` (made once per shape; ``fresh``: for this graph alone)."""
    # the signatures read the model (an entry count's compress ratio): its content is an argument
    return _pricing(Keyed(None, graph) if fresh else graph.skeleton, by_content(model))


def _answer(p: Pricing) -> tuple:
    """What a pricing decides (the finder's order and inputs, not its numpy views)."""
    return p.finder.order, p.finder.inputs, p.pair_of, p.pairs, p.groups, p.places, p.position


@memo("schedule pricings", SHAPES_KEPT, view=_answer)
def _pricing(skeleton: Keyed, model: Keyed) -> Pricing:
    graph, model = skeleton.value, model.value
    finder = PathFinder(graph)
    slot = dict(zip(graph.nodes, rows_slots(skeleton)))  # which nodes carry one rows tuple: the shape's
    by_rows: dict[int, int] = {}
    group_nodes: list[list[str]] = []
    for n in finder.order:
        g = by_rows.setdefault(slot[n], len(by_rows))
        if g == len(group_nodes):
            group_nodes.append([])
        group_nodes[g].append(n)
    numbers: dict[tuple, int] = {}
    pairs: dict[tuple, int] = {}
    made: list[_Pair] = []
    pair_of = []
    for n in finder.order:
        sig, rows_of = static_signature(graph, graph.nodes[n], model)
        number = numbers.setdefault(sig, len(numbers))
        groups = tuple(by_rows[slot[m]] for m in rows_of)
        key = (number, groups)
        if key not in pairs:
            pairs[key] = len(made)
            made.append(_Pair(n, number, groups, _per_tokens(graph.nodes[n], sig, rows_of)))
        pair_of.append(pairs[key])
    breakdowns: tuple[dict[str, list[int]], ...] = ({}, {}, {})
    for i, n in enumerate(finder.order):
        node = graph.nodes[n]
        for table, key in zip(breakdowns, (node.stage, "-" if node.layer is None else str(node.layer), node.op.kind)):
            table.setdefault(key, []).append(i)
    places = tuple(tuple((k, tuple(v)) for k, v in table.items()) for table in breakdowns)
    return Pricing(finder, tuple(pair_of), tuple(made), tuple(tuple(g) for g in group_nodes), places,
                   {n: i for i, n in enumerate(finder.order)})


__all__ = ["Cost", "Priced", "Pricing", "SolTime", "pricing"]
