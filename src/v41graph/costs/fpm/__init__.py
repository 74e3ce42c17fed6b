"""FPM: whole-forward measured tables under one identity (docs/architecture.md, "Layers")."""
