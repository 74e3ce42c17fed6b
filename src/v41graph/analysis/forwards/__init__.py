"""Measured whole forwards (FPM) and the runtime basis fitted on them: gaps, references, step costs."""
