"""The estimator choice is memoised per table content and SOL reference key, and the memo answers
exactly what a fresh leave-one-out answers."""

from __future__ import annotations

from dataclasses import replace

from test_fpm_table import GB200

from v41graph.analysis.forwards.fpm_reference import sol_reference
from v41graph.costs.fpm import select
from v41graph.costs.fpm.load import load_table
from v41graph.costs.fpm.select import choose


def test_the_memoised_choice_equals_a_fresh_one_and_skips_the_leave_one_out(flash):
    table = load_table(GB200)
    first_sol = sol_reference(table.identity, model=flash)
    first = choose(table, first_sol)
    assert len(select._CHOICES) == 1
    again_sol = sol_reference(table.identity, model=flash)  # a new reference with the same key
    again = choose(table, again_sol)
    assert again_sol.cache_info().currsize == 0  # answered by the memo: no SOL value was asked for
    fresh = select._choose(table, first_sol)  # the leave-one-out redone (SOL values already cached)
    assert again == fresh == first
    assert again.chosen == {"prefill": "robust fit", "decode": "interpolation"}
    again.chosen["prefill"] = "phase mean"  # a caller's change does not reach the memo
    assert choose(table, again_sol).chosen["prefill"] == "robust fit"


def test_a_changed_table_or_reference_is_another_key():
    table = load_table(GB200)
    fewer = replace(table, points=table.points[1:])
    assert choose(fewer) == select._choose(fewer, None)
    assert choose(fewer).held_out == choose(table).held_out - 1
    assert len(select._CHOICES) == 2


def test_a_reference_without_a_key_is_never_memoised():
    table = load_table(GB200)

    def own(q):  # a caller's function: its values are unknown to the key
        return 1.0 + q.batch_size

    assert choose(table, own) == select._choose(table, own)
    assert len(select._CHOICES) == 0
