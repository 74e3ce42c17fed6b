"""Interface ④: measured data beside SOL — OP tables (per node) and FPM tables (whole forward).

Every table carries an :class:`~v41graph.ir.identity.Identity`; data never crosses identities.
FPM: :mod:`.fpm_table` (points, tables, validation), :mod:`.fpm_load` (built-in names, the plain
layout), :mod:`.fpm_aisimulate` (AISimulate folders), :mod:`.fpm_predict` (interpolation inside
the measured domain), :mod:`.fpm_evaluate` (held-out error beside trivial baselines),
:mod:`.fpm_system` (plans ↔ coordinates, routing, TTFT / ITL / throughput).
"""
