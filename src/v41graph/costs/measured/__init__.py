"""Interface ④: measured data beside SOL — OP tables (per node) and FPM tables (whole forward).

Every table carries an :class:`~v41graph.ir.identity.Identity`; data never crosses identities.
FPM: :mod:`.fpm_table` (tables, layouts, validation), :mod:`.fpm_aisimulate` (AISimulate
folders), :mod:`.fpm_predict` (interpolation inside the measured domain), :mod:`.fpm_evaluate`
(held-out error beside trivial baselines), :mod:`.fpm_system` (TTFT / ITL / throughput).
"""
