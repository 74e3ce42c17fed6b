"""Interface ④: measured data beside SOL — OP tables (per node) and FPM tables (whole forward).

Every FPM table carries an :class:`~v41graph.ir.identity.Identity`; data never crosses identities.
OP: :mod:`.layout` (the aiconfigurator table layout and its sources: --measured-root, the
``measured`` extra, the vendored slice), :mod:`.tables` (table specs and the resolver),
:mod:`.boundaries` (v41graph's SOL of each table boundary), :mod:`.tiers` (tiers and the cost
mode), :mod:`.modules` (measured modules), :mod:`.op_cost` (node pricing) and :mod:`.coverage`.
FPM: :mod:`.fpm_table` (points, tables, validation), :mod:`.fpm_load` (built-in names, the plain
layout), :mod:`.fpm_aisimulate` (AISimulate folders), :mod:`.fpm_predict` (interpolation inside
the measured domain), :mod:`.fpm_evaluate` (held-out error beside trivial baselines),
:mod:`.fpm_system` (plans ↔ coordinates, routing, TTFT / ITL / throughput).
"""
