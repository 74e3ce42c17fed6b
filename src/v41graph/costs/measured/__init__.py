"""④ Measured data for OP mode: the table layout and its sources (:mod:`.layout`), table specs and
the resolver (:mod:`.tables`), the SOL of each table boundary (:mod:`.boundaries`), tiers and the
cost mode (:mod:`.tiers`), measured modules (:mod:`.modules`), node pricing (:mod:`.op_cost`) and
the coverage report (:mod:`.coverage`). DESIGN.md, "Cost modes and measured data"."""
