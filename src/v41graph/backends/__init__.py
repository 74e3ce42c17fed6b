"""Output backends: JSON-ready summaries, text tables, DOT diagrams, closed-form queries."""
