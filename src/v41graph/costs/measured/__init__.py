"""Interface ④: measured data beside SOL — OP tables (per node); FPM tables are in ``costs/fpm``.

OP: :mod:`.layout` (the aiconfigurator table layout and its sources: --measured-root, the
``measured`` extra, the vendored slice), :mod:`.tables` (table specs and the resolver),
:mod:`.boundaries` (v41graph's SOL of each table boundary), :mod:`.tiers` (tiers and the cost
mode), :mod:`.modules` (measured modules), :mod:`.op_cost` (node pricing) and :mod:`.coverage`.
FPM tables (whole forward) live in :mod:`v41graph.costs.fpm`.
"""
