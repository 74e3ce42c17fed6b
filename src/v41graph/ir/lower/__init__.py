"""(model, plan) → Graph: lowering, one small builder per block (docs/architecture.md, "ir").

``blocks`` lays out embedding, layers, head and DSpark; ``attention`` the attention sublayer of
one layer; ``context`` the state they share.
"""

from .blocks import lower

__all__ = ["lower"]
