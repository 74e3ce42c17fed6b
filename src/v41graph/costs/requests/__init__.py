"""Request-level models on the node costs: lifecycles, system figures, restore, DSpark acceptance, Engram locality."""
