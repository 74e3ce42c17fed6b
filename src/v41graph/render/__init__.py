"""Renderers: how answers look; they take results and never compile (docs/architecture.md, "Layers")."""
