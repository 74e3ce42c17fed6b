"""Serving: the discrete-event simulation, its step costs and summaries, Engram, DSpark, MoE loads."""
