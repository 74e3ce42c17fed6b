"""Lowering's template: which row sources are one tuple is a stated rule (``context.coinciding``) that groups
exactly the sources ``row_sources`` made one object, and the source a builder names for a node
(``LowerContext.carried``) is the one the node holds — both checked here against object identity."""

from __future__ import annotations

from collections import Counter
import random

import pytest
import sympy

from reuse_plans import plan_of, sequence
from v41graph import load_model
from v41graph.errors import PlanError
from v41graph.ir.lower import lower, template
from v41graph.ir.lower.blocks import _build
from v41graph.ir.lower.context import NO_ROWS, LowerContext, coinciding, row_sources
from v41graph.ir.plan import Plan, Request
from v41graph.ir.rows import tabled
from v41graph.reuse import clear_caches

B = sympy.Symbol("B", positive=True, integer=True)


def _one_object(sources) -> tuple:
    """The sources that are one object, grouped in order of first sight (the empty tuple led by NO_ROWS)."""
    groups: dict[int, list] = {id(()): [NO_ROWS]}
    for k, v in sources.items():
        groups.setdefault(id(v), []).append(k)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)


def _hand_plans():
    """Plans at the rule's edges: tables (many requests) and tuples, dp 1 and above, DSpark drafting nothing
    on rank 0 (its draft rows empty), a symbolic batch."""
    batches = ([Request.prefill(100 + i) for i in range(20)] + [Request.decode(500 + i) for i in range(5)],
               [Request.decode(500 + i) for i in range(30)], [Request.prefill(100 + i) for i in range(20)],
               [Request.decode(500, copies=B)],
               [Request.decode(500, copies=3), Request.prefill(9000)], [Request.prefill(7)],
               [Request.prefill(100 + i) for i in range(21)] + [Request.decode(500)])  # the decode dealt to rank 1+
    for dp in (1, 2, 8):
        for dspark in ("off", "on"):
            for reqs in batches:
                yield Plan(reqs, dp=dp, dspark=dspark)


def test_coinciding_groups_exactly_the_sources_that_are_one_object():
    model = load_model()
    seen = set()
    for plan in _hand_plans():
        sources = row_sources(model, plan)
        assert coinciding(plan, sources) == _one_object(sources)
        graph, carried = _build(LowerContext.of(model, plan, sources))
        assert carried == _read_back(graph, sources)
        seen.add((plan.dp > 1, tabled(model, plan), any(not len(v) for v in sources.values())))
    assert seen == {(dp, t, e) for dp in (False, True) for t in (False, True) for e in (False, True)}


def _read_back(graph, sources) -> tuple:
    """Per node, the first name of the source it holds, found by identity (the empty tuple: NO_ROWS)."""
    names = {id(()): NO_ROWS}
    for k, v in sources.items():
        names.setdefault(id(v), k)
    return tuple(names.get(id(n.rows)) for n in graph.nodes.values())


@pytest.mark.parametrize("seed", [11, 12])
def test_coinciding_and_the_names_builders_record_over_drawn_plans(seed):
    """Each node's recorded source is the one it holds: what a template fills it from is what it was built with."""
    for item in sequence(random.Random(seed), 40):
        try:
            plan = plan_of(item)
        except PlanError:  # the draw may combine policies a plan refuses
            continue
        model = load_model(item["model"])
        sources = row_sources(model, plan)
        assert coinciding(plan, sources) == _one_object(sources)
        graph, carried = _build(LowerContext.of(model, plan, sources))
        assert carried == _read_back(graph, sources)


def test_a_template_names_each_group_by_its_first_source():
    clear_caches()
    model = load_model()
    plan = Plan([Request.prefill(100), Request.decode(900)], dspark="on", dp=2)  # rank 0 drafts nothing
    graph = lower(model, plan)
    carried = Counter(k[0] for k in template.template_of.memo._table[graph.shape].carries)
    # rank 0's own rows (attention, the MoE's gate with EP off...) and every rank's (the routed experts); no draft
    assert carried == {"rank": 1001, "all": 400} and not any(n.stage == "dspark" for n in graph.nodes.values())
    graph = lower(model, plan.with_policies(dp=1))
    carried = Counter(k[0] for k in template.template_of.memo._table[graph.shape].carries)
    assert carried == {"all": 1408, "draft": 5}  # dp = 1: rank 0's rows are every rank's, named "all"
    assert len(template.template_of.memo) == 2
    clear_caches()
