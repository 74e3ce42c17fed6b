"""Analyses: what users ask, computed from schedules (docs/architecture.md, "Layers")."""
