"""Sweeps: grids of plans and mappings, priced locally or on a cluster, and their results."""
