"""① What the checkpoint is, whatever the plan (docs/architecture.md, "model").

``config`` reads and validates config.json and lays out the layers; ``formats`` holds storage
formats and byte math; ``inventory`` the physical weight tensors; ``memory`` cache memory by owner.
This layer imports nothing from the layers above it.
"""
