"""Relations between config keys that each key alone cannot check (kept apart from the parsing in
model/config.py: one module reads keys, this one checks that they agree).

A config whose keys are each valid can still describe no model: the output projection's head
groups must split the heads evenly, the rotary part of a head is a slice of it, and a token
cannot pick more experts than there are. Such a config used to load and give figures for a model that cannot exist.

>>> from v41graph import load_model
>>> from v41graph.model.configkeys import Keys
>>> from dataclasses import replace
>>> m = load_model()
>>> check_relations(m, Keys({}, "text_config.")) is m
True
>>> check_relations(replace(m, o_groups=7), Keys({}, "text_config."))
Traceback (most recent call last):
...
v41graph.errors.ConfigError: config keys 'text_config.o_groups' = 7 and 'text_config.num_attention_heads' = 64: ...
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .configkeys import Keys


def check_relations(model: Any, keys: Keys) -> Any:
    """``model`` (a :class:`~v41graph.model.config.ModelSpec`, not imported: config.py imports
    this module) itself when its keys agree with each other; else a ConfigError naming both keys
    (with ``keys``'s section prefix) and their values."""
    if model.experts_per_token > model.n_routed_experts:
        raise ConfigError(f"config key '{keys.name('num_experts_per_tok')}': {model.experts_per_token} exceeds "
                          f"n_routed_experts {model.n_routed_experts}")
    groups, heads = model.o_groups, model.num_heads
    if groups > heads or heads % groups:
        raise ConfigError(f"config keys '{keys.name('o_groups')}' = {groups} and "
                          f"'{keys.name('num_attention_heads')}' = {heads}: o_groups must divide the heads "
                          f"(each output group holds heads / o_groups heads)")
    if model.rope_head_dim >= model.head_dim:
        raise ConfigError(f"config keys '{keys.name('qk_rope_head_dim')}' = {model.rope_head_dim} and "
                          f"'{keys.name('head_dim')}' = {model.head_dim}: the rotary part is a slice of the head, "
                          f"so qk_rope_head_dim must be < head_dim")
    return model
